"""Scoring subcommands of `python -m judge`: metrics, naturalness, pairs, tune.

`judge/__main__.py` (owned by the model half) calls `register(subparsers)`; each subcommand sets
`func`, which takes the parsed arguments and returns an exit status.
"""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("metrics", help="the five timing metrics of a system on human-AI recordings")
    p.add_argument("recordings", nargs="+", help="two-channel audio files or voice-activity JSON files")
    p.add_argument("--system-channel", type=int, required=True, choices=(0, 1))
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--thresholds", default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_not_ready)
    for name in ("naturalness", "pairs", "tune"):
        q = subparsers.add_parser(name)
        q.add_argument("inputs", nargs="*")
        q.set_defaults(func=_not_ready)


def _not_ready(args) -> int:
    raise SystemExit("judge scoring: not implemented yet")
