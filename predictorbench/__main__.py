"""Command line of the predictor benchmarks; each family of subcommands is its subpackage's cli.py.

    python -m predictorbench eot predict | metrics | compare ...          (predictorbench/eot/cli.py)
    python -m predictorbench sid run | metrics ...                         (predictorbench/sid/cli.py)
    python -m predictorbench testbeds build | evaluate | topline | prompts (predictorbench/testbeds/cli.py)
Bad input ends with one line `error: ...` on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from predictorbench.eot import cli as eot_cli
from predictorbench.sid import cli as sid_cli
from predictorbench.testbeds import cli as testbeds_cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m predictorbench", description="Benchmarks of turn-taking predictors")
    sub = parser.add_subparsers(dest="command", required=True)
    eot_cli.register(sub)
    sid_cli.register(sub)
    testbeds_cli.register(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
