"""How often, and where in the caller's turn, the `predictive` system should backchannel: the gains
on the judge's hazard of a short contribution, chosen on Switchboard *training* conversations.

    .venv/bin/python benchmarks/predictive_backchannel_gain.py --swb /tmp/swb --conversations 150

The system may backchannel at every 40 ms step of the caller's turn, with hazard
1 - (1 - gain * p_short) ** (0.04 / 0.6), p_short = the voice-activity judge's P(the listener is
active within 600 ms and silent 0.6-2 s from now): in the pauses inside the turn from 80 ms into the
pause (`backchannel_gain`), and while the caller speaks (`backchannel_in_speech_gain`; 0: never).
Over the speaker's turns of the conversations (turntaking.events, with the listener's real channel
as the judge's second speaker) each sums to an expected number of backchannels, binned by offset
from the speaker's IPU end as turntaking.backchannel_timing bins the listeners' own; each gain is
the ratio of the listeners' backchannels at those offsets (negative: inside an IPU; positive: in a
pause) to that expectation at gain 1. The printout also gives the Jensen-Shannon distance between
the expected offsets and the listeners' (the examiner's `backchannel_timing_jsd_switchboard`, here
on the corpus itself), for pauses alone and for speech and pauses.

Measured (26 Nov 2026, the first 150 training conversations, 2,449 listener backchannels; 37 %
of them start while the speaker speaks, most in the last 0.4 s of an IPU): pauses alone, gain 2.20,
JSD 0.417 (every backchannel put into the pauses); speech and pauses, gains 0.38 and 1.39, JSD
0.160. The earlier version of this script divided *all* of a listener's backchannels (also those
outside the speaker's turns, which the examiner's reference leaves out) by the pauses' expectation
(`events.pauses`, fewer steps): gain 4.05, which in the examiner's monologues gave 1.75-2.15 times
Switchboard's listeners' rate.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from scipy.spatial.distance import jensenshannon
from tqdm import tqdm

from judge.model import load_checkpoint, predict_many
from judge.streaming import FUTURE_BITS
from turntaking.backchannel_timing import N_BEFORE, N_BINS, offset_bin, onset_counts, turn_ipus
from turntaking.events import detect_events
from turntaking.switchboard import conversation_ids, load_conversation

STEP_S, SHORT_S, FROM_S, FRAME_RATE = 0.04, 0.6, 0.08, 50
IN_SPEECH = np.arange(N_BINS) <= N_BEFORE  # the offset bins inside an IPU (time left to its end)


def step_offsets(inside: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(times, offsets) of the 40 ms steps of a turn whose IPUs are `inside`: negative inside an IPU
    (time left to its end), positive in the pause after it (time since it ended)."""
    times = np.arange(inside[0][0], inside[-1][1], STEP_S)
    starts = np.array([s for s, _ in inside])
    ends = np.array([e for _, e in inside])
    which = np.searchsorted(starts, times, side="right") - 1
    return times, times - ends[which]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swb", required=True)
    parser.add_argument("--conversations", type=int, default=150)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = load_checkpoint()
    ids = conversation_ids(args.swb, split="train")[: args.conversations]
    convs = [load_conversation(args.swb, i) for i in tqdm(ids, desc="conversations")]
    real, expected = np.zeros(N_BINS), {"speech": np.zeros(N_BINS), "pauses": np.zeros(N_BINS)}
    for conv, pred in zip(convs, predict_many(model, convs)):
        probs = np.exp(pred.va_log_probs)
        events = detect_events(conv)
        for k in (0, 1):  # k speaks, 1 - k listens
            bits = FUTURE_BITS[:, 1 - k]
            p_short = probs[:, (bits[:, 0] | bits[:, 1]) & ~bits[:, 2] & ~bits[:, 3]].sum(axis=1)
            own_backchannels = set(events.backchannels[k])
            speech = [seg for seg in events.ipus[k] if seg not in own_backchannels]
            starts = [start for start, _ in events.backchannels[1 - k]]
            for turn in events.turns[k]:
                inside = turn_ipus(speech, turn)
                if not inside:
                    continue
                real += onset_counts([t for t in starts if turn[0] <= t < turn[1]], speech, turn)[0]
                times, offsets = step_offsets(inside)
                frames = np.minimum((times * FRAME_RATE).astype(int), len(p_short) - 1)
                hazard = 1 - (1 - np.minimum(p_short[frames], 0.999)) ** (STEP_S / SHORT_S)
                bins = np.array([offset_bin(o) for o in offsets], dtype=int)
                for where, steps in (("speech", offsets < 0), ("pauses", offsets >= FROM_S)):
                    np.add.at(expected[where], bins[steps], hazard[steps])
    pause_gain = real[~IN_SPEECH].sum() / expected["pauses"].sum()
    speech_gain = real[IN_SPEECH].sum() / expected["speech"].sum()
    alone_gain = real.sum() / expected["pauses"].sum()
    both = speech_gain * expected["speech"] + pause_gain * expected["pauses"]
    print(f"{len(ids)} training conversations, {real.sum():.0f} listener backchannels, "
          f"{100 * real[IN_SPEECH].sum() / real.sum():.0f} % of them while the speaker speaks")
    print(f"pauses alone:        backchannel_gain {alone_gain:.2f}; JSD of the offsets "
          f"{jensenshannon(expected['pauses'], real):.3f}")
    print(f"speech and pauses:   backchannel_in_speech_gain {speech_gain:.2f}, backchannel_gain {pause_gain:.2f}; "
          f"JSD of the offsets {jensenshannon(both, real):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
