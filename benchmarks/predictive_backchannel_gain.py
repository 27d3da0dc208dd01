"""How often the `predictive` system should backchannel: the gain on the judge's hazard of a short
contribution, chosen on Switchboard *training* conversations.

    .venv/bin/python benchmarks/predictive_backchannel_gain.py --swb /tmp/swb --conversations 150

The system may backchannel at every 40 ms step of the caller's pauses inside their turn (from 80 ms
into the pause), with hazard 1 - (1 - gain * p_short) ** (0.04 / 0.6), p_short = the voice-activity
judge's P(the listener is active within 600 ms and silent 0.6-2 s from now). Over the within-turn
pauses of the conversations (turntaking.events, with the listener's real channel as the judge's
second speaker) this sums to an expected number of backchannels per second of the speaker's turns;
the gain is the ratio of the corpus's listener backchannel rate (turntaking.events' backchannels in
the other's turns) to that expectation at gain 1.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from tqdm import tqdm

from judge.model import load_checkpoint, predict_many
from judge.streaming import FUTURE_BITS
from turntaking.events import detect_events
from turntaking.switchboard import conversation_ids, load_conversation

STEP_S, SHORT_S, FROM_S = 0.04, 0.6, 0.08


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swb", required=True)
    parser.add_argument("--conversations", type=int, default=150)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = load_checkpoint()
    ids = conversation_ids(args.swb, split="train")[: args.conversations]
    convs = [load_conversation(args.swb, i) for i in tqdm(ids, desc="conversations")]
    expected = turn_s = 0.0
    real = 0
    for conv, pred in zip(convs, predict_many(model, convs)):
        probs = np.exp(pred.va_log_probs)
        events = detect_events(conv)
        for k in (0, 1):  # k speaks, 1 - k listens
            bits = FUTURE_BITS[:, 1 - k]
            p_short = probs[:, (bits[:, 0] | bits[:, 1]) & ~bits[:, 2] & ~bits[:, 3]].sum(axis=1)
            turn_s += sum(end - start for start, end in events.turns[k])
            real += len(events.backchannels[1 - k])
            for pause in (p for p in events.pauses if p.speaker == k):
                frames = np.arange(int((pause.start + FROM_S) * 50), int(pause.end * 50), int(STEP_S * 50))
                frames = frames[frames < len(p_short)]
                expected += float((1 - (1 - p_short[frames]) ** (STEP_S / SHORT_S)).sum())
    print(f"{len(ids)} training conversations: listener backchannels {real / turn_s:.4f} per s of the speaker's turns; "
          f"expected at gain 1: {expected / turn_s:.4f}; gain {real / expected:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
