"""Commands of the loop-rate pipeline: ``shadow sync``, ``shadow export parquet``, ``shadow report loop-rate``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from shadow._clock import parse_time
from shadow.analytics._defaults import DEFAULT_MARGIN, DEFAULT_SEED
from shadow.cli._app import ExitCode, app, fail, need_extra

if TYPE_CHECKING:
    from shadow.analytics._warehouse import Progress, SyncResult

#: Loads smaller than this move without a progress bar.
_BAR_FROM_ROWS = 20_000

export_app = typer.Typer(name="export", help="Export the call log for other engines.", no_args_is_help=True)
report_app = typer.Typer(name="report", help="Reports from the DuckDB warehouse.", no_args_is_help=True)
app.add_typer(export_app)
app.add_typer(report_app)


class OutputFormat(StrEnum):
    """Output formats of ``shadow report loop-rate``."""

    table = "table"
    json = "json"
    csv = "csv"


class SyncFormat(StrEnum):
    """Output formats of ``shadow sync``."""

    text = "text"
    json = "json"


class ByDimension(StrEnum):
    """Breakdowns of ``shadow report loop-rate``."""

    tool = "tool"
    code = "code"
    day = "day"


DbOption = Annotated[str | None, typer.Option(
    "--db-url", "--db", help="Call-log URL (default: SHADOW_DB_URL, else sqlite:///shadow.db).", show_default=False)]
WarehouseOption = Annotated[Path | None, typer.Option(
    "--warehouse", help="DuckDB warehouse file (default: SHADOW_WAREHOUSE, else beside the SQLite store).",
    show_default=False, dir_okay=False)]


@contextmanager
def _progress(label: str) -> Iterator[Progress]:
    """A progress callback that draws a bar on stderr once a load is big enough to be worth one."""
    bar: Any = None
    shown = 0

    def update(done: int, total: int) -> None:
        nonlocal bar, shown
        if bar is None and total >= _BAR_FROM_ROWS:
            bar = typer.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        if bar is not None:
            bar.update(done - shown)
            shown = done

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _errors_to_exit(exc: Exception) -> None:
    from shadow.analytics._source import SourceError

    if isinstance(exc, SourceError):
        fail(str(exc), ExitCode.UNAVAILABLE)
    fail(str(exc), ExitCode.USAGE)


def _run_sync(db: str | None, warehouse: Path | None, *, rebuild: bool, margin: float) -> SyncResult:
    need_extra("analytics")
    from shadow.analytics._warehouse import Warehouse, WarehouseError

    try:
        with Warehouse.open(warehouse) as wh, _progress("Syncing the call log") as progress:
            return wh.sync(db, rebuild=rebuild, margin=dt.timedelta(seconds=margin), progress=progress)
    except (WarehouseError, ValueError) as exc:
        _errors_to_exit(exc)
        raise  # unreachable: fail() exits


@app.command()
def sync(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Drop the warehouse's tables and load everything.")]
    = False,
    db: DbOption = None,
    warehouse: WarehouseOption = None,
    margin: Annotated[float, typer.Option(
        "--margin", min=0, help="Seconds re-read before the last sync's newest row, for late commits.")]
    = DEFAULT_MARGIN.total_seconds(),
    fmt: Annotated[SyncFormat, typer.Option("--format", "-f", help="text or json.")] = SyncFormat.text,
) -> None:
    """Load new call-log rows into the DuckDB warehouse (incremental; --rebuild starts over).

    Example: shadow sync --db-url postgresql+psycopg://agent@db:5432/shadow
    """
    result = _run_sync(db, warehouse, rebuild=rebuild, margin=margin)
    if fmt is SyncFormat.json:
        typer.echo(json.dumps({k: str(v) if isinstance(v, Path) else v
                               for k, v in dataclasses.asdict(result).items()}, indent=2))
        return
    how = "rebuilt" if result.rebuilt else "synced"
    typer.echo(f"{how} {result.warehouse}: {result.calls_added} new calls and {result.marks_added} new marks "
               f"(read {result.calls_read} and {result.marks_read}), {result.flag_changes} flag changes, "
               f"{result.sessions_recomputed} sessions recomputed, in {result.seconds:.2f} s")


@export_app.command("parquet")
def export_parquet(
    directory: Annotated[Path, typer.Argument(help="Directory to write (new or empty).", file_okay=False)],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace what the directory holds.")] = False,
    no_sync: Annotated[bool, typer.Option("--no-sync", help="Export the warehouse as it is.")] = False,
    db: DbOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Write the call log as day-partitioned Parquet (hive layout: calls/day=YYYY-MM-DD/...).

    Example: shadow export parquet ./callog-parquet
    """
    if not no_sync:
        _run_sync(db, warehouse, rebuild=False, margin=DEFAULT_MARGIN.total_seconds())
    need_extra("analytics")
    from shadow.analytics._warehouse import Warehouse, WarehouseError

    try:
        with Warehouse.open(warehouse, read_only=True) as wh:
            result = wh.export_parquet(directory, overwrite=overwrite)
    except (WarehouseError, OSError) as exc:
        _errors_to_exit(exc)
        return
    typer.echo(f"wrote {result.calls} calls and {result.marks} marks to {result.directory} "
               f"({result.files} Parquet files)")


def _time(value: str | None, option: str, *, until: bool = False) -> dt.datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value, until=until)
    except ValueError as exc:
        fail(f"{option}: {exc}", ExitCode.USAGE)


@report_app.command("loop-rate")
def loop_rate(
    tool: Annotated[str | None, typer.Option("--tool", "-t", help="Only this tool's calls and errors.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="From this UTC date or time (inclusive), e.g. 2025-03-01.")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Up to this UTC date (inclusive, whole day) or time (exclusive).")] = None,
    by: Annotated[ByDimension, typer.Option("--by", help="Breakdown rows: tool, code or day.")] = ByDimension.tool,
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json or csv.")] = OutputFormat.table,
    no_sync: Annotated[bool, typer.Option("--no-sync", help="Report on the warehouse as it is.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the session bootstrap.")] = DEFAULT_SEED,
    db: DbOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """The loop rate per arm, tool, code or day; before vs after cutover; the two-arm test; savings.

    Example: shadow report loop-rate --tool create_task --since 2025-03-01 --format json
    """
    start, end = _time(since, "--since"), _time(until, "--until", until=True)
    if start and end and start >= end:
        fail(f"--since {since} is not before --until {until}; swap them or widen the range", ExitCode.USAGE)
    if not no_sync:
        _run_sync(db, warehouse, rebuild=False, margin=DEFAULT_MARGIN.total_seconds())
    need_extra("analytics")
    from shadow.analytics import _render as report_render
    from shadow.analytics._report import loop_rate_report
    from shadow.analytics._warehouse import Warehouse, WarehouseError

    try:
        with Warehouse.open(warehouse, read_only=True) as wh:
            result = loop_rate_report(wh, tool=tool, since=start, until=end, seed=seed)
    except (WarehouseError, ValueError) as exc:
        _errors_to_exit(exc)
        return
    if fmt is OutputFormat.json:
        typer.echo(result.to_json())
    elif fmt is OutputFormat.csv:
        typer.echo(report_render.render_csv(result, by.value), nl=False)
    else:
        typer.echo(report_render.render_table(result, by.value), nl=False)
