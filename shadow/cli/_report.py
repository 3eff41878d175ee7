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
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from shadow.analytics._defaults import DEFAULT_MARGIN, DEFAULT_MEMORY_LIMIT, DEFAULT_SEED
from shadow.analytics._text import counted
from shadow.cli._app import ExitCode, app, fail, interrupted, need_extra
from shadow.cli._integrations import RulesOption, rules_in_force
from shadow.cli._options import (
    DbAliasOption,
    DbUrlOption,
    Format,
    FormatOption,
    MemoryLimitOption,
    ReportFormatOption,
    WarehouseOption,
    require_call_log,
    store_url,
    time_range,
    warehouse_path,
)

if TYPE_CHECKING:
    from shadow.analytics._warehouse import Progress, SyncResult

#: Loads smaller than this move without a progress bar.
_BAR_FROM_ROWS = 20_000

export_app = typer.Typer(name="export", help="Export the call log for other engines.", no_args_is_help=True)
report_app = typer.Typer(name="report", help="Reports from the DuckDB warehouse.", no_args_is_help=True)
app.add_typer(export_app)
app.add_typer(report_app)


class Engine(StrEnum):
    """Where ``shadow report loop-rate`` and ``shadow dashboard`` run the SQL models."""

    duckdb = "duckdb"
    spark = "spark"


# The engine options ``shadow report loop-rate`` and ``shadow dashboard`` share.
EngineOption = Annotated[Engine, typer.Option(
    "--engine", help="Run the models on duckdb (the warehouse, or --parquet) or spark (needs --parquet).")]
ParquetOption = Annotated[str | None, typer.Option(
    "--parquet", help="A `shadow export parquet` directory (or a URI Spark reads, e.g. s3a://...) to read "
    "instead of the warehouse; no sync.", show_default=False)]
SparkMasterOption = Annotated[str, typer.Option("--spark-master", help="Spark master URL.")]
SparkConfOption = Annotated[list[str] | None, typer.Option(
    "--spark-conf", help="A Spark setting KEY=VALUE (repeatable).", show_default=False)]


def check_engine(engine: Engine, parquet: str | None) -> None:
    """``--engine spark`` without ``--parquet`` is a usage error; the engine's extra must be installed."""
    if engine is Engine.spark and parquet is None:
        fail("--engine spark reads a Parquet export: add --parquet DIR (write one with `shadow export parquet "
             "DIR`)", ExitCode.USAGE)
    if engine is Engine.spark:
        need_extra("spark")


class ByDimension(StrEnum):
    """Breakdowns of ``shadow report loop-rate``."""

    tool = "tool"
    code = "code"
    day = "day"


@contextmanager
def _progress(label: str) -> Iterator[Progress]:
    """A progress callback for a load big enough to be worth one: a bar on a terminal, else a plain line every
    few seconds on stderr (a piped or logged run must not look hung)."""
    from shadow.cli._progress import LineProgress

    bar: Any = None
    lines: LineProgress | None = None
    shown = 0

    def update(done: int, total: int) -> None:
        nonlocal bar, lines, shown
        if bar is None and lines is None and total >= _BAR_FROM_ROWS:
            if sys.stderr.isatty():
                bar = typer.progressbar(length=total, label=label, file=sys.stderr)
                bar.__enter__()
            else:
                lines = LineProgress(sys.stderr)
                lines.count(label, total)
        if bar is not None:
            bar.length = total  # rows committed after the count grow the total: the bar never passes 100%
            bar.update(done - shown)
        elif lines is not None:
            lines.update(done - shown, total=total)
        shown = done

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
        if lines is not None:
            lines.close()


def errors_to_exit(exc: Exception) -> NoReturn:
    """Exit with the warehouse's message: 3 when the call log cannot be read, else 2 (no call log there is 2)."""
    from shadow.analytics._source import NoCallLog, SourceError

    unavailable = isinstance(exc, SourceError) and not isinstance(exc, NoCallLog)
    fail(str(exc), ExitCode.UNAVAILABLE if unavailable else ExitCode.USAGE)


@dataclasses.dataclass(frozen=True, slots=True)
class Stores:
    """The call log and the warehouse one command works on, resolved from its options."""

    url: str
    warehouse: Path
    memory_limit: str  # DuckDB's, for a sync


def stores(db_url: str | None, alias: str | None, warehouse: Path | None, memory_limit: str | None = None) -> Stores:
    """``--db-url`` (or its old spellings), ``--warehouse`` and ``--memory-limit`` resolved; the warehouse defaults
    beside the log."""
    url = store_url(db_url, alias)
    return Stores(url, warehouse_path(url, warehouse), DEFAULT_MEMORY_LIMIT if memory_limit is None else memory_limit)


def run_sync(where: Stores, *, rebuild: bool = False, margin: float = DEFAULT_MARGIN.total_seconds()) -> SyncResult:
    """Sync the call log into the warehouse; a call log that does not exist yet is not created (exit 2)."""
    need_extra("analytics")
    require_call_log(where.url)
    from shadow.analytics._warehouse import Warehouse, WarehouseError
    from shadow.calllog import _db  # noqa: F401  # loaded before a Ctrl-C can land in the sync, not during it

    new = not where.warehouse.exists()
    try:
        wh = Warehouse.open(where.warehouse, memory_limit=where.memory_limit)
    except (WarehouseError, ValueError) as exc:
        errors_to_exit(exc)
    try:
        with wh, _progress("Syncing the call log") as progress:
            return wh.sync(where.url, rebuild=rebuild, margin=dt.timedelta(seconds=margin), progress=progress)
    except BaseException as exc:
        if new:  # a first sync that failed leaves no empty warehouse behind (the file this process created)
            for leftover in (where.warehouse, Path(f"{where.warehouse}.wal")):
                leftover.unlink(missing_ok=True)
        if interrupted():  # whatever the reader or DuckDB made of the Ctrl-C
            fail("sync interrupted; the warehouse holds what the last complete sync left in it",
                 ExitCode.INTERRUPTED)
        if isinstance(exc, WarehouseError | ValueError):
            errors_to_exit(exc)
        raise


def open_for_reading(where: Stores, *, no_sync: bool) -> None:
    """Before a read: sync unless ``--no-sync`` (a missing warehouse then fails on opening, read-only)."""
    if no_sync:
        need_extra("analytics")
    else:
        run_sync(where)


@app.command()
def sync(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Drop the warehouse's tables and load everything.")]
    = False,
    db_url: DbUrlOption = None,
    warehouse: WarehouseOption = None,
    margin: Annotated[float, typer.Option(
        "--margin", min=0, help="Seconds re-read before the last sync's newest row, for late commits.")]
    = DEFAULT_MARGIN.total_seconds(),
    memory_limit: MemoryLimitOption = None,
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Load new call-log rows into the DuckDB warehouse (incremental; --rebuild starts over).

    Example: shadow sync --db-url postgresql+psycopg://agent@db:5432/shadow --memory-limit 512MB
    """
    result = run_sync(stores(db_url, db_alias, warehouse, memory_limit), rebuild=rebuild, margin=margin)
    if fmt is Format.json:
        typer.echo(json.dumps({k: str(v) if isinstance(v, Path) else v
                               for k, v in dataclasses.asdict(result).items()}, indent=2))
        return
    how = "rebuilt" if result.rebuilt else "synced"
    typer.echo(f"{how} {result.warehouse}: {counted(result.calls_added, 'new call')} and "
               f"{counted(result.marks_added, 'new mark')} (read {result.calls_read:,} and {result.marks_read:,}), "
               f"{counted(result.flag_changes, 'flag change')} in all, "
               f"{counted(result.sessions_recomputed, 'session')} recomputed, in {result.seconds:.2f} s")



@export_app.command("parquet")
def export_parquet(
    directory: Annotated[Path, typer.Argument(
        help="Directory to write: new, empty, or an earlier export (then only new rows are appended).",
        file_okay=False)],
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace the export the directory holds, or write one beside other files (those are "
                            "left alone).")] = False,
    no_sync: Annotated[bool, typer.Option("--no-sync", help="Export the warehouse as it is.")] = False,
    db_url: DbUrlOption = None,
    warehouse: WarehouseOption = None,
    memory_limit: MemoryLimitOption = None,
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Write the warehouse's call log, synced first (unless --no-sync), as day-partitioned Parquet (calls/day=...).

    Into an earlier export only what is new (by day partition and id) is appended: a daily job keeps a lake current.
    Marks go to marks/day=..., the flag tables and writer counters beside them, one file each (rewritten each time).

    With --format json: the directory, the calls and marks written, the Parquet files it holds, whether it appended.

    \b
    Example: shadow export parquet ./calllog-parquet
    Example: shadow export parquet ./calllog-parquet --format json
    """
    where = stores(db_url, db_alias, warehouse, memory_limit)
    open_for_reading(where, no_sync=no_sync)
    from shadow.analytics._warehouse import Warehouse, WarehouseError

    try:
        with Warehouse.open(where.warehouse, read_only=True) as wh:
            result = wh.export_parquet(directory, overwrite=overwrite)
    except (WarehouseError, OSError) as exc:
        errors_to_exit(exc)
    if fmt is Format.json:
        typer.echo(json.dumps({**dataclasses.asdict(result), "directory": str(result.directory)}, indent=2))
        return
    how = "appended" if result.appended else "wrote"
    typer.echo(f"{how} {result.calls} {'new ' if result.appended else ''}calls and {result.marks} marks to "
               f"{result.directory} ({result.files} Parquet files)")


@contextmanager
def models_on(engine: Engine, parquet: str | None, warehouse: Path, master: str,
              conf: list[str], memory_limit: str = DEFAULT_MEMORY_LIMIT) -> Iterator[Any]:
    """Where the report's and the dashboard's models run: the warehouse, DuckDB or Spark over a Parquet export;
    ``memory_limit`` caps DuckDB's memory."""
    from shadow.analytics._warehouse import Warehouse

    if engine is Engine.spark:
        from shadow.analytics._spark import SparkModels, parse_conf

        assert parquet is not None
        with SparkModels.open(parquet, master=master, conf=parse_conf(conf)) as models:
            yield models
    elif parquet is not None:
        with Warehouse.from_parquet(parquet, memory_limit=memory_limit) as wh:
            yield wh
    else:
        with Warehouse.open(warehouse, read_only=True, memory_limit=memory_limit) as wh:
            yield wh


@report_app.command("loop-rate")
def loop_rate(
    tool: Annotated[str | None, typer.Option("--tool", "-t", help="Only this tool's calls and errors.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="From this UTC date or time (inclusive), e.g. 2025-03-01.")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Up to this UTC date (inclusive, whole day) or time (exclusive).")] = None,
    by: Annotated[ByDimension, typer.Option("--by", help="Breakdown rows: tool, code or day.")] = ByDimension.tool,
    fmt: ReportFormatOption = Format.table,
    no_sync: Annotated[bool, typer.Option("--no-sync", help="Report on the warehouse as it is.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the session bootstrap.")] = DEFAULT_SEED,
    wide: Annotated[bool, typer.Option("--wide", help="Table: every column, the example payloads and every writing "
                                       "process (the default fits 100 columns).")] = False,
    detect: Annotated[float, typer.Option(
        "--detect", min=0.01, max=0.99, help="Power: the relative drop of the loop rate to detect.")] = 0.30,
    power: Annotated[float, typer.Option(
        "--power", min=0.5, max=0.99, help="Power: the chance of detecting that drop.")] = 0.80,
    max_unmapped_share: Annotated[float, typer.Option(
        "--max-unmapped-share", min=0.0, max=1.0, help="Recommendation: the most unmapped errors (share) that pass."
    )] = 0.05,
    max_increase: Annotated[float, typer.Option(
        "--max-increase", min=0.0, max=1.0, help="Recommendation: how much higher (loop-rate fraction, upper 95% "
        "bound) the structured arm may be and still count as not worse.")] = 0.02,
    give_up_within: Annotated[int, typer.Option(
        "--give-up-within", min=0, help="Recommendation: a session that makes at most this many calls after an "
        "error counts as ended by it (the give-up guard).")] = 3,
    bytes_per_token: Annotated[float, typer.Option(
        "--bytes-per-token", min=0.1, help="Savings: the token estimator, bytes of JSON text per token.")] = 4.0,
    db_url: DbUrlOption = None,
    warehouse: WarehouseOption = None,
    memory_limit: MemoryLimitOption = None,
    db_alias: DbAliasOption = None,
    engine: EngineOption = Engine.duckdb,
    parquet: ParquetOption = None,
    spark_master: SparkMasterOption = "local[*]",
    spark_conf: SparkConfOption = None,
    rules: RulesOption = None,
) -> None:
    """The loop rate per arm, tool, code or day; before vs after cutover; the two-arm test; savings; and per tool a
    recommendation (raise, hold, fix_rules, rollback, done), the power and evidence. With --rules (or
    SHADOW_RULES), every logged error is translated again with those rules for the recommendations.

    \b
    Example: shadow report loop-rate --tool create_task --since 2025-03-01 --format json
    Example: shadow report loop-rate --engine spark --parquet s3a://lake/shadow --spark-master yarn
    """
    start, end = time_range(since, until)
    check_engine(engine, parquet)
    given, rules_name = rules_in_force(rules)
    where = stores(db_url, db_alias, warehouse, memory_limit)
    if parquet is None:
        open_for_reading(where, no_sync=no_sync)
    need_extra("analytics")
    from shadow.analytics import _render as report_render
    from shadow.analytics._recommend import Policy
    from shadow.analytics._report import loop_rate_report
    from shadow.analytics._warehouse import WarehouseError

    try:
        policy = Policy(max_unmapped_share=max_unmapped_share, relative_reduction=detect, power=power,
                        max_increase=max_increase, give_up_within=give_up_within)
        with models_on(engine, parquet, where.warehouse, spark_master, spark_conf or [],
                       where.memory_limit) as models:
            result = loop_rate_report(models, tool=tool, since=start, until=end, seed=seed, policy=policy,
                                      bytes_per_token=bytes_per_token, rules=given, rules_name=rules_name)
    except (WarehouseError, ValueError) as exc:
        errors_to_exit(exc)
    if fmt is Format.json:
        typer.echo(result.to_json())
    elif fmt is Format.csv:
        typer.echo(report_render.render_csv(result, by.value), nl=False)
    else:
        typer.echo(report_render.render_table(result, by.value, wide=wide), nl=False)
