"""The options every command shares (``--db-url``, ``--warehouse``, ``-f/--format``) and what they resolve to."""

from __future__ import annotations

import dataclasses
import datetime as dt
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Final, Literal, NoReturn

import typer

from shadow._clock import parse_time
from shadow._config import sqlite_path
from shadow.cli._app import ExitCode, fail


class Format(StrEnum):
    """Output formats, one enum for every command: ``table`` is for a person (``text``, its 0.1 name, still works)."""

    table = "table"
    text = "text"
    json = "json"
    csv = "csv"
    markdown = "markdown"


#: What every ``-f/--format`` says of the format for a person: one name, ``table``, on every command.
FORMAT_HELP: Final = "Output: table for a person (text works too)"
#: The formats ``shadow import`` shows (its option is free text: 0.1's ``--format openai`` still works).
FORMAT_METAVAR: Final = "<table|json>"

FormatOption = Annotated[
    Literal[Format.table, Format.text, Format.json],
    typer.Option("--format", "-f", metavar=FORMAT_METAVAR, help=f"{FORMAT_HELP} or json."),
]
ReportFormatOption = Annotated[
    Literal[Format.table, Format.text, Format.json, Format.csv],
    typer.Option("--format", "-f", metavar="<table|json|csv>", help=f"{FORMAT_HELP}, json or csv."),
]
DescribeFormatOption = Annotated[
    Literal[Format.table, Format.text, Format.markdown, Format.json],
    typer.Option("--format", "-f", metavar="<table|markdown|json>", help=f"{FORMAT_HELP}, markdown or json."),
]

DB_URL_HELP: Final = (
    "The call log's database: sqlite:///path/shadow.db or postgresql://user@host:5432/dbname "
    "(default: SHADOW_DB_URL, else sqlite:///shadow.db)."
)

DbUrlOption = Annotated[str | None, typer.Option("--db-url", help=DB_URL_HELP, show_default=False)]
#: The spellings of ``--db-url`` in 0.1 (``--db``, ``--url``): still accepted, no longer shown.
DbAliasOption = Annotated[str | None, typer.Option("--db", "--url", hidden=True, show_default=False)]
MemoryLimitOption = Annotated[str | None, typer.Option(
    "--memory-limit", metavar="SIZE", show_default=False,
    help="DuckDB's memory cap for the sync and the report's queries, at least 128MB, such as 512MB or 4GB: DuckDB "
         "stays within it whatever the log's size, spilling to a temporary file beside the warehouse beyond it; the "
         "process needs up to about 200MB more (default: 192MB).")]
WarehouseOption = Annotated[Path | None, typer.Option(
    "--warehouse", dir_okay=False, show_default=False,
    help="The DuckDB warehouse file (default: SHADOW_WAREHOUSE, else beside the SQLite call log, "
         "else ./shadow.duckdb).")]


def store_url(db_url: str | None, alias: str | None = None) -> str:
    """The call log's URL (``--db-url``, else ``SHADOW_DB_URL``, else the default), checked; bad input exits 2."""
    from shadow._config import settings
    from shadow.calllog import _sqlite as light  # a plain URL checked without SQLAlchemy

    try:
        return light.normalise_url(db_url or alias or settings().db_url)
    except ValueError as exc:
        fail(str(exc), ExitCode.USAGE)


def warehouse_path(url: str, warehouse: Path | None) -> Path:
    """``--warehouse``, else the default for the call log at ``url``, exactly as if ``SHADOW_DB_URL`` named it."""
    from shadow._config import settings

    if warehouse is not None:
        return warehouse
    return dataclasses.replace(settings(), db_url=url).warehouse_path()


def no_call_log(url: str) -> str:
    """The message for a read-only command pointed at a call log that does not exist yet."""
    from shadow.calllog._db import safe_url

    where = sqlite_path(url) or safe_url(url)
    return (f"there is no call log at {where} yet; make one by running your tools in shadow mode (for example "
            "SHADOW_FLAGS='my_tool=shadow'; `shadow db upgrade` creates its tables), or point --db-url or "
            "SHADOW_DB_URL at the store your tools log to")


def require_call_log(url: str) -> None:
    """Exit 2 (without creating anything) when the SQLite file ``url`` names does not exist."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        fail(no_call_log(url), ExitCode.USAGE)


def time_option(value: str | None, option: str, *, until: bool = False) -> dt.datetime | None:
    """A ``--since``/``--until`` value as an aware UTC datetime; a bad one exits 2 naming the option."""
    if value is None:
        return None
    try:
        return parse_time(value, until=until)
    except ValueError as exc:
        fail(f"{option}: {exc}", ExitCode.USAGE)


def time_range(since: str | None, until: str | None) -> tuple[dt.datetime | None, dt.datetime | None]:
    """``--since`` and ``--until`` as aware UTC datetimes; a bad one, or a range that is empty, exits 2."""
    start, end = time_option(since, "--since"), time_option(until, "--until", until=True)
    if start is not None and end is not None and start >= end:
        fail(f"--since {since} is not before --until {until}; swap them or widen the range", ExitCode.USAGE)
    return start, end


def warn(message: str) -> None:
    """A warning on stderr: the command still does its work."""
    typer.echo(f"shadow: warning: {message}", err=True)


def unseen_tool(url: str, tool: str, *, before_traffic: bool = False) -> str | None:
    """What to say when the call log at ``url`` has no calls of ``tool`` (a typo?); None when it has some, and
    with ``before_traffic`` when it has none of any tool (a flag is set before the first call: nothing to say)."""
    from sqlalchemy.exc import SQLAlchemyError

    from shadow.analytics import _ready as ready

    try:
        seen, others = ready.tool_in_log(url, tool)
    except (ready.StoreMissing, SQLAlchemyError):
        seen, others = False, ()
    if seen or (before_traffic and not others):
        return None
    known = f"tools in the log: {', '.join(others)}" if others else "the log has no calls yet"
    return f"the call log has no calls of {tool!r} ({known})"


def store_unreachable(url: str, exc: Exception) -> NoReturn:
    """Exit 3: the call log's database could not be used (the URL's password is never shown)."""
    from shadow.calllog._db import safe_url

    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    reason = lines[0] if lines else type(exc).__name__
    fail(f"the call log at {safe_url(url)} could not be used ({type(exc).__name__}: {reason}); check that the "
         "database runs and that --db-url or SHADOW_DB_URL is right", ExitCode.UNAVAILABLE)
