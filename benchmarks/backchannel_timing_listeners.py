"""What Switchboard's own listeners score on the examiner's backchannel comparison
(examiner/switchboard_backchannels.py), on conversations the table was not fitted on.

    PYTHONPATH=. .venv/bin/python benchmarks/backchannel_timing_listeners.py --swb DIR [--split val]

The packaged table (turntaking/backchannel_timing.py) is fitted on the training conversations.
Here the real listeners of the held-out conversations stand where a system stands: their
backchannel onsets against what the table expects on their speakers' turns. Prints the rate
ratio over all of them, and the pooled timing JSD of random sets of conversations holding about
as many backchannels as a run's monologues (the distance grows as the count falls: sampling
noise), so that a system's distance can be read against a person's with the same count.

Measured (25 Nov 2026, the 578 validation conversations, 400 draws per count): rate ratio 1.092,
pooled JSD over all 0.029; about 33 backchannels: median 0.278 (95 % of draws 0.193-0.367), 50:
0.238 (0.165-0.320), 100: 0.186 (0.129-0.244), 140: 0.160 (0.113-0.216). The systems on 12
monologues (examiner/README.md): predictive 0.418 with 98, the timer system 0.484 with 142.
"""

from __future__ import annotations

import argparse

import numpy as np
from tqdm import tqdm

from examiner.switchboard_backchannels import timing_jsd
from turntaking.backchannel_timing import fit_backchannel_timing, switchboard_backchannel_timing
from turntaking.events import detect_events
from turntaking.switchboard import conversation_ids, load_conversation


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swb", required=True)
    parser.add_argument("--split", default="val")
    parser.add_argument("--counts", type=int, nargs="+", default=[33, 50, 100, 140])
    parser.add_argument("--draws", type=int, default=400)
    args = parser.parse_args(argv)
    rates = switchboard_backchannel_timing().rates()
    observed, expected = [], []
    for conv_id in tqdm(conversation_ids(args.swb, split=args.split), desc="conversations", unit="conv"):
        one = fit_backchannel_timing([detect_events(load_conversation(args.swb, conv_id))], conv_id)
        observed.append(np.array(one.onsets))
        expected.append(rates * np.array(one.exposure_s))
    observed, expected = np.array(observed), np.array(expected)
    print(f"{len(observed)} {args.split} conversations: rate ratio {observed.sum() / expected.sum():.3f}, "
          f"pooled timing JSD {timing_jsd(observed.sum(axis=0), expected.sum(axis=0)):.3f}")
    rng = np.random.default_rng(0)
    for count in args.counts:
        distances = []
        for _ in range(args.draws):
            picked, total = [], 0.0
            for i in rng.permutation(len(observed)):  # conversations at random until `count` backchannels
                picked.append(i)
                total += observed[i].sum()
                if total >= count:
                    break
            distances.append(timing_jsd(observed[picked].sum(axis=0), expected[picked].sum(axis=0)))
        low, mid, high = np.percentile(distances, [2.5, 50, 97.5])
        print(f"about {count} backchannels: timing JSD median {mid:.3f} (95 % of draws {low:.3f}-{high:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
