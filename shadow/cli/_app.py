"""The Typer application object, exit codes, and the error boundary every command shares."""

from __future__ import annotations

import enum
import importlib.util
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated, Final, NoReturn

import typer

app = typer.Typer(
    name="shadow",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class ExitCode(enum.IntEnum):
    """The command line's exit codes."""

    OK = 0
    FAILED = 1  # the command ran and its answer is "no" (not ready, ambiguous codes, ...)
    USAGE = 2  # bad input: the message says how to fix it
    UNAVAILABLE = 3  # a database or service could not be reached
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


class UsageError(Exception):
    """Bad input from the user; the message says how to fix it."""


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> NoReturn:
    """Print ``message`` to stderr and exit with ``code``."""
    typer.echo(f"shadow: {message}", err=True)
    raise typer.Exit(int(code))


def _version(value: bool) -> None:
    if value:
        from shadow import __version__

        typer.echo(f"shadow {__version__}")
        raise typer.Exit(int(ExitCode.OK))


@app.callback()
def _root(
    _version_flag: Annotated[bool, typer.Option(
        "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Move agent tools to one structured error contract, safely, with proof it helped.

    Exit codes: 0 ok; 1 the answer is no (not ready, ambiguous codes, ...); 2 bad input or no call log yet (the
    message says how to fix it); 3 a database or service could not be reached; 130 interrupted.
    """


_INTERRUPTED = threading.Event()


def interrupted() -> bool:
    """Whether Ctrl-C was pressed during this command, even if a library turned it into an error of its own."""
    return _INTERRUPTED.is_set()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _INTERRUPTED.set()
    signal.default_int_handler(signum, frame)  # KeyboardInterrupt, as before


def main() -> None:
    """Console-script entry point: operational events at WARNING and above unless SHADOW_LOG_LEVEL says else."""
    from shadow import _config as config
    from shadow import _logs as logs

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)

    try:
        logs.setup_cli(config.level_from_env("WARNING"))
    except ValueError as exc:
        typer.echo(f"shadow: {exc}", err=True)
        sys.exit(int(ExitCode.USAGE))
    try:
        app()
    except UsageError as exc:
        typer.echo(f"shadow: {exc}", err=True)
        sys.exit(int(ExitCode.USAGE))
    except Exception as exc:
        reason = _database_error(exc)
        if reason is None:
            raise
        typer.echo(f"shadow: the database could not be used ({reason}); check --db-url or SHADOW_DB_URL and "
                   "that a SQLite file is an intact database", err=True)
        sys.exit(int(ExitCode.UNAVAILABLE))


def _database_error(exc: BaseException) -> str | None:
    """A database driver's error as one line (a damaged SQLite file, a server gone), or None for any other error."""
    import sqlite3

    from sqlalchemy import exc as sa

    if not isinstance(exc, sa.DBAPIError | sqlite3.DatabaseError):
        return None
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else 'no detail'}"


#: What each extra brings that a command may need (import names).
EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "analytics": ("duckdb", "numpy", "pyarrow", "adbc_driver_sqlite", "adbc_driver_postgresql"),
    "dashboard": ("duckdb", "numpy", "pyarrow", "adbc_driver_sqlite", "adbc_driver_postgresql", "plotly"),
    "mcp": ("mcp",),
    "openfeature": ("openfeature",),
    "otel": ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
    "postgres": ("psycopg",),
    "spark": ("duckdb", "pyarrow", "pyspark", "sqlglot"),
}


def install_line(extra: str) -> str:
    """How to add ``extra`` to this installation: from the checkout it was installed from, else the wheel's name."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "shadow" / "__init__.py").is_file():
        return f"pip install -e '{checkout}[{extra}]'"
    return f"pip install 'shadow-errors[{extra}]' from the checkout or wheel you installed shadow from"


def need_extra(extra: str) -> None:
    """Exit 2, with the install line and no traceback, when a module ``extra`` brings is not installed."""
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        fail(f"this command needs the '{extra}' extra ({', '.join(missing)} {verb} not installed): "
             f"{install_line(extra)}", ExitCode.USAGE)
