"""The Typer application object, exit codes, and the error boundary every command shares."""

from __future__ import annotations

import enum
import sys
from typing import NoReturn

import typer

app = typer.Typer(
    name="shadow",
    help="Move agent tools to one structured error contract, safely, with proof it helped.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class ExitCode(enum.IntEnum):
    """The command line's exit codes."""

    OK = 0
    FAILED = 1  # the command ran and its answer is "no" (not ready, ambiguous codes, ...)
    USAGE = 2  # bad input: the message says how to fix it
    UNAVAILABLE = 3  # a database or service could not be reached


class UsageError(Exception):
    """Bad input from the user; the message says how to fix it."""


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> NoReturn:
    """Print ``message`` to stderr and exit with ``code``."""
    typer.echo(f"shadow: {message}", err=True)
    raise typer.Exit(int(code))


def main() -> None:
    """Console-script entry point: operational events at WARNING and above unless SHADOW_LOG_LEVEL says else."""
    import os

    from shadow import logs

    try:
        logs.setup(os.environ.get(logs.LEVEL_ENV) or "WARNING", force=True)
    except ValueError as exc:
        typer.echo(f"shadow: {exc}", err=True)
        sys.exit(int(ExitCode.USAGE))
    try:
        app()
    except UsageError as exc:
        typer.echo(f"shadow: {exc}", err=True)
        sys.exit(int(ExitCode.USAGE))
