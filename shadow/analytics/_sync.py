"""``shadow sync`` in named steps: plan, stage (Arrow batches into DuckDB), publish (swap or merge), derive, record."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

import duckdb
from sqlalchemy import Engine, Table
from sqlalchemy.exc import SQLAlchemyError

from shadow._config import settings
from shadow.analytics import _arrow
from shadow.analytics._schema import (
    DERIVED,
    LOG_TABLES,
    SMALL_TABLES,
    STATE_TABLE,
    ddl,
    insert_from_arrow,
    models_hash,
    schema_hash,
)
from shadow.analytics._source import (
    SourceError,
    WarehouseError,
    check_source,
    count_rows,
    display_url,
    oldest_writer,
    reason,
)
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables

if TYPE_CHECKING:
    import pyarrow as pa

Progress = Callable[[int, int], None]
"""Called as ``progress(rows_done, rows_total)`` while rows move."""


class Warehouse(Protocol):
    """What the sync steps use of a warehouse (``shadow.analytics.Warehouse``, which calls them from ``sync``)."""

    con: duckdb.DuckDBPyConnection
    path: Path | None
    memory_limit: str

    def is_synced(self) -> bool:
        """Whether the warehouse holds a synced call log."""
        ...

    def is_mirrored(self) -> bool:
        """Whether a sync completed here (derived tables of older models may be missing)."""
        ...

    def set_state(self, values: dict[str, str]) -> None:
        """Record sync bookkeeping (inside the caller's transaction)."""
        ...

    def checked_state(self, rebuild: bool) -> dict[str, str]:
        """The sync state, checked (a damaged one moved aside when ``rebuild``)."""
        ...

    def derive(self) -> None:
        """Recompute the derived tables."""
        ...


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one sync did."""

    warehouse: Path | None
    source: str
    rebuilt: bool
    calls_read: int
    calls_added: int
    marks_read: int
    marks_added: int
    flag_changes: int
    sessions_recomputed: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Plan:
    """What a sync will read: from where, everything or the rows inserted since each table's lower bound."""

    url: str
    source: str
    engine: Engine
    full: bool
    models_changed: bool
    bounds: dict[str, dt.datetime | None]
    oldest_writer: dt.datetime | None
    totals: dict[str, int]
    margin: dt.timedelta


#: DuckDB threads inserting a table's stream (at most; fewer on fewer cores).
INSERT_THREADS: Final = 4


def _stage_name(table: Table) -> str:
    return f"_stage_{table.name}"


def plan(wh: Warehouse, url: str | None, *, rebuild: bool, margin: dt.timedelta) -> Plan:
    """Check the call log and the warehouse's record of it; decide between a full and an incremental sync."""
    url = db.normalise_url(url or settings().db_url)
    engine = db.engine(url)
    check_source(engine, url, (*LOG_TABLES, *SMALL_TABLES))
    state = wh.checked_state(rebuild)  # refuses a DuckDB file shadow did not create; a damaged one is moved aside
    source = display_url(url)
    if not rebuild and state and state.get("source") != source:
        raise WarehouseError(f"the warehouse {wh.path} was built from {state.get('source')}, not {source}; run "
                             "`shadow sync --rebuild` to start over from the new store, or choose another "
                             "warehouse file (--warehouse or SHADOW_WAREHOUSE)")
    if not rebuild and state and state.get("schema") != schema_hash():
        raise WarehouseError(f"the warehouse {wh.path} was built for an older call-log schema; run "
                             "`shadow sync --rebuild`")
    full = rebuild or not state or not wh.is_mirrored()
    bounds = {t.name: None if full else _parse_ts(state.get(f"lower.{t.name}")) for t in LOG_TABLES}
    try:
        writer = oldest_writer(engine)
        totals = {t.name: count_rows(engine, t, bounds[t.name]) for t in LOG_TABLES}
    except SQLAlchemyError as exc:  # a damaged page the table check did not touch, say
        raise SourceError(f"reading the call log at {source} failed: {reason(exc)}") from None
    return Plan(url=url, source=source, engine=engine, full=full,
                models_changed=state.get("models") != models_hash(), bounds=bounds,
                oldest_writer=writer, totals=totals, margin=margin)


def stage(wh: Warehouse, p: Plan, progress: Progress | None, early: _arrow.Early | None = None) -> dict[str, int]:
    """Stream every table's new rows into a staging table, one Arrow stream per table; rows read per table.

    DuckDB scans the stream in one statement and writes row groups to disk as they fill, so memory stays flat in
    the log's size; reader threads (one per part of a large table) fetch the next batches while DuckDB writes.
    """
    grand_total = sum(p.totals.values())
    done = 0
    if progress:
        progress(0, grand_total)

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress:  # rows committed after the count are read too: the total grows, never past 100%
            progress(done, max(done, grand_total))

    read: dict[str, int] = {}
    reads = [_arrow.Read(t, p.bounds.get(t.name), p.totals.get(t.name, 0)) for t in (*LOG_TABLES, *SMALL_TABLES)]
    with _arrow.open_reads(p.url, p.engine, reads, early) as next_read:
        for table in (*LOG_TABLES, *SMALL_TABLES):
            step: Callable[[int], None] = advance if table in LOG_TABLES else (lambda _n: None)
            read[table.name] = _load(wh.con, table, _stage_name(table), next_read(step))
    if progress and done != grand_total:  # the total was an estimate: the bar ends at what was read
        progress(done, done)
    return read


def _load(con: duckdb.DuckDBPyConnection, table: Table, target: str,
          stream: contextlib.AbstractContextManager[pa.RecordBatchReader]) -> int:
    import pyarrow as pa

    con.execute(f'DROP TABLE IF EXISTS "{target}"')
    con.execute(ddl(table, target, storage=True))
    con.execute("SET preserve_insertion_order = false")  # lets DuckDB write the stream's row groups in parallel
    # Each inserting thread holds a row group it fills (about 18 MB of calls each, outside the memory limit), and
    # the stream comes from at most four readers: more threads would cost memory with the cores, not speed.
    threads = int(_scalar(con, "SELECT current_setting('threads')"))
    con.execute(f"SET threads = {min(threads, INSERT_THREADS)}")
    try:
        with stream as reader:
            con.register("_arrow_batches", reader)
            text_times = frozenset(f.name for f in reader.schema if not pa.types.is_timestamp(f.type))
            try:
                con.execute(f'INSERT INTO "{target}" ' + insert_from_arrow(table, "_arrow_batches", text_times))
            finally:
                con.unregister("_arrow_batches")
    except duckdb.OutOfMemoryException:
        raise  # the sync says what to do about it
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0].split(" Detail: Python exception")[0][:300]
        if "reading the stream registered as" in first:  # the reader failed, not DuckDB
            raise SourceError(f"reading {table.name} from the call log failed: {first}") from None
        raise WarehouseError(f"a {table.name} row of the call log could not be loaded ({type(exc).__name__}: "
                             f"{first}); the warehouse is unchanged. Fix or remove the row in the call log, then "
                             "sync again") from None
    finally:
        con.execute("RESET preserve_insertion_order")
        con.execute(f"SET threads = {threads}")
    return _scalar(con, f'SELECT count(*) FROM "{target}"')


def publish(wh: Warehouse, p: Plan, read: dict[str, int]) -> tuple[dict[str, int], int]:
    """In one transaction: swap in (full) or merge (incremental) the staged rows, derive, record the new state.

    Returns the rows added per log table and the sessions whose follow-ups were recomputed.
    """
    con = wh.con
    con.begin()
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE sync_scope (session_id VARCHAR)")
        added = _swap(con) if p.full else _merge_all(con, p)
        if p.full:
            added = {t.name: read[t.name] for t in LOG_TABLES}
        if p.full or p.models_changed:
            wh.derive()
            recomputed = _scalar(con, "SELECT count(DISTINCT session_id) FROM calls")
        else:
            recomputed = _derive_scope(wh)
        _record(wh, p)
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return added, recomputed


def drop_stages(wh: Warehouse) -> None:
    for table in (*LOG_TABLES, *SMALL_TABLES):
        wh.con.execute(f'DROP TABLE IF EXISTS "{_stage_name(table)}"')


def _swap(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    for name in (STATE_TABLE, *DERIVED):
        con.execute(f'DROP TABLE IF EXISTS "{name}"')
    for table in (*LOG_TABLES, *SMALL_TABLES):
        con.execute(f'DROP TABLE IF EXISTS "{table.name}"')
        con.execute(f'ALTER TABLE "{_stage_name(table)}" RENAME TO "{table.name}"')
    return {}


def _merge_all(con: duckdb.DuckDBPyConnection, p: Plan) -> dict[str, int]:
    added = {t.name: _merge(con, t.name, _stage_name(t), p.bounds.get(t.name)) for t in LOG_TABLES}
    for table in SMALL_TABLES:
        con.execute(f'DELETE FROM "{table.name}"')
        con.execute(f'INSERT INTO "{table.name}" SELECT * FROM "{_stage_name(table)}"')
    return added


def _merge(con: duckdb.DuckDBPyConnection, name: str, stage_table: str, lower: dt.datetime | None) -> int:
    """Insert the staged rows whose ids the warehouse lacks; note their sessions for recomputation."""
    # Every warehouse copy of a staged row has the same inserted_at, so only rows at or after the bound can
    # match: the anti-join reads that recent slice, not the whole table.
    con.execute(
        f'CREATE OR REPLACE TEMP TABLE new_{name} AS SELECT s.* FROM "{stage_table}" AS s '
        f'WHERE NOT EXISTS (SELECT 1 FROM "{name}" AS w WHERE w.id = s.id '
        f"AND ($lower IS NULL OR w.inserted_at >= $lower))",
        {"lower": lower},
    )
    con.execute(f'INSERT INTO "{name}" SELECT * FROM new_{name}')
    con.execute(f"INSERT INTO sync_scope SELECT DISTINCT session_id FROM new_{name}")
    added = _scalar(con, f"SELECT count(*) FROM new_{name}")
    con.execute(f"DROP TABLE new_{name}")
    return added


def _derive_scope(wh: Warehouse) -> int:
    """Recompute error follow-ups and session counters of the sessions that received rows in this sync only."""
    from shadow.analytics import _sql as sql

    con = wh.con
    sql.run(con, "flag_periods", prefix="CREATE OR REPLACE TABLE flag_periods AS ")
    con.execute("CREATE OR REPLACE TEMP TABLE sync_scope AS SELECT DISTINCT session_id FROM sync_scope")
    for name in ("error_followups", "session_counters"):
        con.execute(f"DELETE FROM {name} WHERE session_id IN (SELECT session_id FROM sync_scope)")
        sql.run(con, name, {"all_sessions": False}, prefix=f"INSERT INTO {name} ")
    return _scalar(con, "SELECT count(*) FROM sync_scope")


def _record(wh: Warehouse, p: Plan) -> None:
    """The new state: source, hashes, sync time, and each log table's next lower bound."""
    state = {"source": p.source, "schema": schema_hash(), "models": models_hash(),
             "synced_at": dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat()}
    for table in LOG_TABLES:
        state[f"lower.{table.name}"] = _next_lower(wh.con, table.name, p.oldest_writer, p.margin)
    wh.set_state(state)


def _next_lower(con: duckdb.DuckDBPyConnection, name: str, oldest: dt.datetime | None,
                margin: dt.timedelta) -> str:
    high = con.execute(f'SELECT max(inserted_at) FROM "{name}"').fetchall()[0][0]
    if high is None:
        return ""
    assert isinstance(high, dt.datetime)
    bound = min(high, oldest) if oldest is not None else high
    return (bound - margin).isoformat()


def _scalar(con: duckdb.DuckDBPyConnection, query: str) -> int:
    return int(con.execute(query).fetchall()[0][0])


def _parse_ts(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


#: DuckDB settings for the length of a sync: a commit that would write to the WAL checkpoints instead.
_WRITE_THROUGH: Final = {"auto_checkpoint_skip_wal_threshold": "0", "checkpoint_threshold": "0B"}


def run(wh: Warehouse, url: str | None, *, rebuild: bool, margin: dt.timedelta,
        progress: Progress | None) -> SyncResult:
    """The whole sync: plan, stage, publish; staging tables are dropped whatever happens."""
    started = time.perf_counter()
    # Every commit of the sync checkpoints at once, skipping the WAL: what a commit wrote is written to the file
    # once, not to the WAL and then again by a checkpoint (a quarter of a million calls' follow-ups: 8 MB twice),
    # and closing the warehouse has no WAL to replay.
    applied = []
    for name, value in _WRITE_THROUGH.items():
        try:
            wh.con.execute(f"SET {name} = '{value}'")
        except duckdb.CatalogException:  # DuckDB 1.3 and before have no auto_checkpoint_skip_wal_threshold
            continue
        applied.append(name)
    try:
        return _run(wh, url, rebuild=rebuild, margin=margin, progress=progress, started=started)
    finally:
        for name in applied:
            with contextlib.suppress(duckdb.Error):  # a connection a failure closed
                wh.con.execute(f"RESET {name}")


def _run(wh: Warehouse, url: str | None, *, rebuild: bool, margin: dt.timedelta,
         progress: Progress | None, started: float) -> SyncResult:
    url = url or settings().db_url
    try:
        expect_full = rebuild or not wh.is_mirrored()
    except duckdb.Error:  # a damaged warehouse: the plan says so
        expect_full = False
    with _arrow.connecting(url, full=expect_full) as early:  # the reader's set-up runs while the sync plans
        p = plan(wh, url, rebuild=rebuild, margin=margin)
        if p.full:
            # DuckDB's parallel insert leaves a part-filled row group per thread; merging them at the checkpoint
            # rewrites whole row groups (0.4 s of a quarter-million-call sync) to save a few thousand rows' space.
            wh.con.execute("SET max_vacuum_tasks = 0")
        try:
            try:
                read = stage(wh, p, progress, early)
                added, recomputed = publish(wh, p, read)
            except duckdb.OutOfMemoryException as exc:
                raise WarehouseError(f"DuckDB ran out of memory within the warehouse's limit of {wh.memory_limit} "
                                     f"({str(exc).splitlines()[0][:200]}); the warehouse is unchanged. Give the "
                                     "sync more: shadow sync --memory-limit 4GB") from None
            finally:
                drop_stages(wh)
            # What a commit left in the WAL (another connection's open transaction holds off its checkpoint) goes to
            # the file now, if it can; else at a later checkpoint (at the latest, closing).
            with contextlib.suppress(duckdb.TransactionException):
                wh.con.execute("CHECKPOINT")
        finally:
            wh.con.execute("RESET max_vacuum_tasks")
    return SyncResult(
        warehouse=wh.path, source=p.source, rebuilt=p.full,
        calls_read=read[tables.calls.name], calls_added=added[tables.calls.name],
        marks_read=read[tables.marks.name], marks_added=added[tables.marks.name],
        flag_changes=read[tables.flag_audit.name], sessions_recomputed=recomputed,
        seconds=time.perf_counter() - started,
    )
