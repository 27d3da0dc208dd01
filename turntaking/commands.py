"""What the command lines share: bad input ends with one line `error: ...` on stderr and exit
status 2; a command's report is printed as text, or as JSON with --json.

    p.set_defaults(func=guard(cmd, (MyError, OSError)))        # cmd(args) -> exit status
    p.set_defaults(func=report_command(compute, format_text))   # compute(args) -> report dict
"""

from __future__ import annotations

import contextlib
import json
import sys

REPORT_ERRORS = (ValueError, FileNotFoundError, OSError)


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (or its type name when it has none)."""
    return " ".join(str(exc).split()) or exc.__class__.__name__


def json_object_option(text: str, option: str = "--config") -> dict:
    """A JSON-object option (e.g. a system's --config) as a dict, or ValueError with the one line to print."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{option} is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{option} must be a JSON object")
    return value


def error_line(exc: BaseException) -> str:
    """`error: ` and the exception's message on one line."""
    return f"error: {one_line(exc)}"


def guard(func, errors: tuple[type[BaseException], ...]):
    """`func(args) -> int`, with any of `errors` printed as one line on stderr and exit code 2."""

    def run(args) -> int:
        try:
            return func(args)
        except errors as exc:
            print(error_line(exc), file=sys.stderr)
            return 2

    return run


def report_command(compute, formatter, errors: tuple[type[BaseException], ...] = REPORT_ERRORS,
                   around=lambda args: contextlib.nullcontext()):
    """`compute(args) -> report` printed by `formatter(report)`, or as JSON with --json; `errors`
    end in one line and exit status 2; `around(args)` is a context the computation runs in. The exit
    status is 1 when the report lists failed items (a --run-dir run: they are on stderr), else 0."""

    def run(args) -> int:
        try:
            with around(args):
                report = compute(args)
        except errors as exc:
            print(error_line(exc), file=sys.stderr)
            return 2
        print(json.dumps(report, indent=1, default=float) if getattr(args, "json", False) else formatter(report))
        return 1 if report.get("failed") else 0

    return run
