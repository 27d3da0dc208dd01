"""One-line errors for the judge's subcommands: bad input prints `error: ...` and exits 2."""

from __future__ import annotations

import sys


def error_line(exc: BaseException) -> str:
    """The exception's message on one line (or its type name when it has none)."""
    return f"error: {' '.join(str(exc).split()) or exc.__class__.__name__}"


def guard(func, errors: tuple[type[BaseException], ...]):
    """`func(args) -> int`, with any of `errors` printed as one line on stderr and exit code 2."""

    def run(args) -> int:
        try:
            return func(args)
        except errors as exc:
            print(error_line(exc), file=sys.stderr)
            return 2

    return run
