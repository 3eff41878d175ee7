"""The DuckDB warehouse: incremental sync from the call log (SQLite or PostgreSQL), rebuild, Parquet export."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import duckdb
import numpy as np
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Engine,
    Integer,
    String,
    Table,
    Text,
)
from sqlalchemy.exc import SQLAlchemyError

from shadow._config import settings
from shadow.analytics import _sql as sql
from shadow.analytics._defaults import DEFAULT_MARGIN
from shadow.analytics._source import (
    SourceError,
    WarehouseError,
    batches,
    check_source,
    count_rows,
    display_url,
    oldest_writer,
)
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables

__all__ = [
    "DEFAULT_MARGIN", "DEFAULT_MEMORY_LIMIT", "ExportResult", "Progress", "SourceError", "SyncResult", "Warehouse",
    "WarehouseError", "display_url", "export_parquet", "sync",
]

#: DuckDB's memory cap for warehouse work (it spills to disk beyond it).
DEFAULT_MEMORY_LIMIT: Final = "1GB"

#: The call-log tables mirrored row by row (append-only, synced incrementally by ``inserted_at``).
LOG_TABLES: Final = (tables.calls, tables.marks)
#: Small tables copied whole on every sync.
SMALL_TABLES: Final = (tables.flags, tables.flag_audit, tables.writer_stats)
#: Tables computed in the warehouse from the mirrored ones, by the SQL model of the same name.
DERIVED: Final = ("flag_periods", "error_followups")
STATE_TABLE: Final = "_shadow_sync"

Progress = Callable[[int, int], None]
"""Called as ``progress(rows_done, rows_total)`` while rows move."""


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
class ExportResult:
    """What ``export_parquet`` wrote."""

    directory: Path
    calls: int
    marks: int
    files: int


def _duck_type(column: Column[Any]) -> str:
    kind = column.type
    if isinstance(kind, JSON):
        return "JSON"
    if isinstance(kind, DateTime):
        return "TIMESTAMP"  # UTC, without a zone: days and hours mean UTC everywhere
    if isinstance(kind, Boolean):
        return "BOOLEAN"
    if isinstance(kind, BigInteger):
        return "BIGINT"
    if isinstance(kind, Integer):
        return "INTEGER"
    if isinstance(kind, String | Text):
        return "VARCHAR"
    raise TypeError(f"no DuckDB type for column {column.table.name}.{column.name} of type {kind!r}")


def _ddl(table: Table, name: str | None = None) -> str:
    cols = ", ".join(f'"{c.name}" {_duck_type(c)}' for c in table.columns)
    return f'CREATE TABLE "{name or table.name}" ({cols})'


def _from_batch(table: Table, batch: str) -> str:
    """``SELECT`` turning the text and numbers of a batch into the warehouse types."""
    parts = []
    for i, c in enumerate(table.columns):
        kind = _duck_type(c)
        if kind == "TIMESTAMP":
            parts.append(f"CAST(CAST(c{i} AS TIMESTAMPTZ) AS TIMESTAMP)")
        else:
            parts.append(f"CAST(c{i} AS {kind})")
    return f"SELECT {', '.join(parts)} FROM {batch}"


def schema_hash() -> str:
    """A hash of the mirrored tables' warehouse schema: a change needs ``--rebuild``."""
    text = ";".join(_ddl(t) for t in (*LOG_TABLES, *SMALL_TABLES))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def models_hash() -> str:
    """A hash of the derived tables' SQL: a change recomputes them from the warehouse (no re-read)."""
    text = ";".join(sql.load(name) for name in DERIVED)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- the warehouse ------------------------------------------------------------------------------------------------


class Warehouse:
    """A DuckDB warehouse file (or an in-memory one over exported Parquet): mirrored call log plus derived tables."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path | None) -> None:
        self.con = con
        self.path = path

    @classmethod
    def open(cls, path: str | Path | None = None, *, read_only: bool = False,
             memory_limit: str = DEFAULT_MEMORY_LIMIT) -> Warehouse:
        """Open (or create) the warehouse file; default ``settings().warehouse_path()`` (``SHADOW_WAREHOUSE``)."""
        target = Path(path) if path is not None else settings().warehouse_path()
        if target.is_dir():
            raise WarehouseError(f"{target} is a directory; give a file path for the warehouse, for example "
                                 f"{target / 'shadow.duckdb'}")
        if read_only and not target.exists():
            raise WarehouseError(f"no warehouse at {target}; run `shadow sync` first")
        if not target.parent.exists():
            raise WarehouseError(f"the folder {target.parent} does not exist; create it or choose another "
                                 "SHADOW_WAREHOUSE")
        try:
            con = duckdb.connect(str(target), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise WarehouseError(f"the warehouse {target} is in use by another process (a sync or a report); "
                                     "try again when it has finished") from None
            if "not a valid duckdb" in str(exc).lower():
                raise WarehouseError(f"{target} is not a DuckDB warehouse; choose another path or delete the "
                                     "file") from None
            raise WarehouseError(f"cannot open the warehouse {target}: {exc}") from None
        except duckdb.Error as exc:
            raise WarehouseError(f"{target} is not a DuckDB warehouse ({type(exc).__name__}); choose another "
                                 "path or delete the file") from None
        _configure(con, memory_limit)
        return cls(con, target)

    @classmethod
    def from_parquet(cls, directory: str | Path, *, memory_limit: str = DEFAULT_MEMORY_LIMIT) -> Warehouse:
        """An in-memory warehouse over a ``shadow export parquet`` directory: the same models, the same report."""
        root = Path(directory)
        for name in ("calls", "marks"):
            if not (root / name).is_dir():
                raise WarehouseError(f"{root} holds no {name}/ folder; give a directory written by "
                                     "`shadow export parquet DIR`")
        wh = cls.in_memory(memory_limit=memory_limit)
        con = wh.con
        for table in LOG_TABLES:
            files = str(root / table.name / "**" / "*.parquet")
            if any((root / table.name).rglob("*.parquet")):
                names = ", ".join(f'"{c.name}"' for c in table.columns)
                rel = con.read_parquet(files, hive_partitioning=True).select(names)
                rel.insert_into(table.name)
        for table in SMALL_TABLES:
            file = root / f"{table.name}.parquet"
            if file.exists():
                con.read_parquet(str(file)).insert_into(table.name)
        wh.derive()
        return wh

    @classmethod
    def in_memory(cls, *, memory_limit: str = DEFAULT_MEMORY_LIMIT) -> Warehouse:
        """An empty in-memory warehouse with the mirrored tables; fill them, then call ``derive()``."""
        con = duckdb.connect()
        _configure(con, memory_limit)
        for table in (*LOG_TABLES, *SMALL_TABLES):
            con.execute(_ddl(table))
        return cls(con, None)

    def close(self) -> None:
        """Close the connection."""
        self.con.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- state ---

    def _has(self, name: str) -> bool:
        return bool(self._scalar(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main' AND table_name = $name",
            {"name": name},
        ))

    def _scalar(self, query: str, params: dict[str, object] | None = None) -> Any:
        """The single value of a one-row query (fetched whole: DuckDB wants every result finished)."""
        rows = self.con.execute(query, params).fetchall() if params else self.con.execute(query).fetchall()
        return rows[0][0] if rows else None

    def is_synced(self) -> bool:
        """Whether the warehouse holds a synced call log."""
        return self._has("error_followups") and (self.path is None or self._has(STATE_TABLE))

    def state(self) -> dict[str, str]:
        """The sync bookkeeping: source, schema and model hashes, per-table lower bounds, last sync time."""
        if not self._has(STATE_TABLE):
            return {}
        return dict(self.con.execute(f"SELECT key, value FROM {STATE_TABLE}").fetchall())

    def _set_state(self, values: dict[str, str]) -> None:
        self.con.execute(f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)")
        for key, value in values.items():
            self.con.execute(f"INSERT OR REPLACE INTO {STATE_TABLE} VALUES ($key, $value)",
                             {"key": key, "value": value})

    def _checked_state(self, rebuild: bool) -> dict[str, str]:
        """The sync state; a file shadow did not create is refused (whatever ``rebuild``), a damaged one is a clear
        error, and ``rebuild`` moves a damaged one aside (never deleted) and starts a new warehouse."""
        assert self.path is not None
        try:
            state = self.state()
            foreign = [] if state else [name for (name,) in self.con.execute(
                "SELECT table_name FROM information_schema.tables WHERE NOT starts_with(table_name, '_stage_')"
            ).fetchall()]
        except duckdb.Error as exc:
            reason = str(exc).splitlines()[0][:200]
            if not rebuild:
                raise WarehouseError(f"the warehouse {self.path} cannot be read ({reason}); it may be truncated or "
                                     "damaged: `shadow sync --rebuild` moves it aside and builds a new one") from None
            self.con.close()
            aside = self.path.with_name(f"{self.path.name}.damaged-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}")
            self.path.replace(aside)
            self.con = duckdb.connect(str(self.path))
            _configure(self.con, DEFAULT_MEMORY_LIMIT)
            return {}
        if foreign:
            raise WarehouseError(f"{self.path} is a DuckDB file shadow did not create (it holds "
                                 f"{', '.join(sorted(foreign)[:5])}); shadow never replaces tables it does not own, "
                                 "whatever the flags: choose another warehouse file (--warehouse or SHADOW_WAREHOUSE)")
        return state

    # --- sync ---

    def sync(self, url: str | None = None, *, rebuild: bool = False, margin: dt.timedelta = DEFAULT_MARGIN,
             progress: Progress | None = None) -> SyncResult:
        """Bring the warehouse up to date with the call log at ``url`` (default ``settings().db_url``).

        Incremental: only rows inserted since the last sync (less ``margin``) are read, and only ids the warehouse
        lacks are added, so rows committed out of order or replayed late from a spool are picked up once.
        ``rebuild`` (or a first sync, or a warehouse built by an older schema) starts over.
        """
        if self.path is None:
            raise WarehouseError("this warehouse reads exported Parquet; it cannot sync")
        started = time.perf_counter()
        url = db.normalise_url(url or settings().db_url)
        engine = db.engine(url)
        check_source(engine, url, (*LOG_TABLES, *SMALL_TABLES))
        state = self._checked_state(rebuild)
        if not rebuild and state and state.get("source") != display_url(url):
            raise WarehouseError(f"the warehouse {self.path} was built from {state.get('source')}, not "
                                 f"{display_url(url)}; run `shadow sync --rebuild` to start over from the new "
                                 "store, or choose another SHADOW_WAREHOUSE")
        if not rebuild and state and state.get("schema") != schema_hash():
            raise WarehouseError(f"the warehouse {self.path} was built for an older call-log schema; run "
                                 "`shadow sync --rebuild`")
        full = rebuild or not state or not self.is_synced()
        bounds = {t.name: _parse_ts(state.get(f"lower.{t.name}")) for t in LOG_TABLES} if not full else {}
        oldest = oldest_writer(engine)
        totals = {t.name: count_rows(engine, t, bounds.get(t.name)) for t in LOG_TABLES}
        grand_total = sum(totals.values())
        done = 0
        if progress:
            progress(0, grand_total)

        def advance(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress(done, grand_total)

        # Rows land in staging tables first, one committed batch at a time: DuckDB keeps many small appends of one
        # open transaction in memory, while the single bulk statements below write straight to disk.
        con = self.con
        stages = {t.name: f"_stage_{t.name}" for t in (*LOG_TABLES, *SMALL_TABLES)}
        read: dict[str, int] = {}
        added: dict[str, int] = {}
        try:
            for table in (*LOG_TABLES, *SMALL_TABLES):
                con.execute(f'DROP TABLE IF EXISTS "{stages[table.name]}"')
                con.execute(_ddl(table, stages[table.name]))
                step = advance if table in LOG_TABLES else (lambda _n: None)
                read[table.name] = self._load(engine, table, bounds.get(table.name), stages[table.name], step)
            con.begin()
            try:
                con.execute("CREATE OR REPLACE TEMP TABLE sync_scope (session_id VARCHAR)")
                if full:
                    for name in (STATE_TABLE, *DERIVED, *stages):
                        con.execute(f'DROP TABLE IF EXISTS "{name}"')
                    for name, stage in stages.items():
                        con.execute(f'ALTER TABLE "{stage}" RENAME TO "{name}"')
                    added = {t.name: read[t.name] for t in LOG_TABLES}
                else:
                    for table in LOG_TABLES:
                        added[table.name] = self._merge(table.name, stages[table.name], bounds.get(table.name))
                    for table in SMALL_TABLES:
                        con.execute(f'DELETE FROM "{table.name}"')
                        con.execute(f'INSERT INTO "{table.name}" SELECT * FROM "{stages[table.name]}"')
                if full or state.get("models") != models_hash():
                    self.derive()
                    recomputed = self._count_sessions()
                else:
                    recomputed = self._derive_scope()
                new_state = {"source": display_url(url), "schema": schema_hash(), "models": models_hash(),
                             "synced_at": dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat()}
                for table in LOG_TABLES:
                    new_state[f"lower.{table.name}"] = self._next_lower(table.name, oldest, margin)
                self._set_state(new_state)
                con.commit()
            except BaseException:
                con.rollback()
                raise
        finally:
            for stage in stages.values():
                con.execute(f'DROP TABLE IF EXISTS "{stage}"')
        flag_rows = read[tables.flag_audit.name]
        return SyncResult(
            warehouse=self.path, source=display_url(url), rebuilt=full,
            calls_read=read["calls"], calls_added=added["calls"], marks_read=read["marks"],
            marks_added=added["marks"], flag_changes=flag_rows, sessions_recomputed=recomputed,
            seconds=time.perf_counter() - started,
        )

    def _load(self, engine: Engine, table: Table, lower: dt.datetime | None, target: str,
              advance: Callable[[int], None]) -> int:
        """Stream rows into DuckDB: each batch becomes columnar NumPy arrays DuckDB scans natively.

        A reader thread fetches and converts the next batch while DuckDB (which releases the GIL) inserts one.
        """
        insert = f'INSERT INTO "{target}" ' + _from_batch(table, "_batch")
        n = 0
        try:
            for size, arrays in _prefetched(batches(engine, table, lower)):
                self.con.register("_batch", arrays)
                try:
                    self.con.execute(insert)
                finally:
                    self.con.unregister("_batch")
                n += size
                advance(size)
        except SQLAlchemyError as exc:
            raise SourceError(f"reading {table.name} from the call log failed: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0]}") from None
        except duckdb.Error as exc:
            raise WarehouseError(f"a {table.name} row of the call log could not be loaded ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0][:300]}); the warehouse is unchanged. Fix or remove "
                                 "the row in the call log, then sync again") from None
        return n

    def _merge(self, name: str, stage: str, lower: dt.datetime | None) -> int:
        """Insert the staged rows whose ids the warehouse lacks; note their sessions for recomputation."""
        # Every warehouse copy of a staged row has the same inserted_at, so only rows at or after the bound can
        # match: the anti-join reads that recent slice, not the whole table.
        self.con.execute(
            f'CREATE OR REPLACE TEMP TABLE new_{name} AS SELECT s.* FROM "{stage}" AS s '
            f'WHERE NOT EXISTS (SELECT 1 FROM "{name}" AS w WHERE w.id = s.id '
            f"AND ($lower IS NULL OR w.inserted_at >= $lower))",
            {"lower": lower},
        )
        self.con.execute(f'INSERT INTO "{name}" SELECT * FROM new_{name}')
        self.con.execute(f"INSERT INTO sync_scope SELECT DISTINCT session_id FROM new_{name}")
        added = int(self._scalar(f"SELECT count(*) FROM new_{name}"))
        self.con.execute(f"DROP TABLE new_{name}")
        return added

    def derive(self) -> None:
        """Recompute every derived table (flag periods, error follow-ups) from the mirrored ones."""
        self.con.execute("CREATE OR REPLACE TEMP TABLE sync_scope (session_id VARCHAR)")
        sql.run(self.con, "flag_periods", prefix="CREATE OR REPLACE TABLE flag_periods AS ")
        sql.run(self.con, "error_followups", {"all_sessions": True},
                prefix="CREATE OR REPLACE TABLE error_followups AS ")

    def _derive_scope(self) -> int:
        """Recompute error follow-ups of the sessions that received rows in this sync only."""
        sql.run(self.con, "flag_periods", prefix="CREATE OR REPLACE TABLE flag_periods AS ")
        self.con.execute("CREATE OR REPLACE TEMP TABLE sync_scope AS SELECT DISTINCT session_id FROM sync_scope")
        self.con.execute("DELETE FROM error_followups WHERE session_id IN (SELECT session_id FROM sync_scope)")
        sql.run(self.con, "error_followups", {"all_sessions": False}, prefix="INSERT INTO error_followups ")
        return int(self._scalar("SELECT count(*) FROM sync_scope"))

    def _count_sessions(self) -> int:
        return int(self._scalar("SELECT count(DISTINCT session_id) FROM calls"))

    def _next_lower(self, name: str, oldest: dt.datetime | None, margin: dt.timedelta) -> str:
        high = self._scalar(f'SELECT max(inserted_at) FROM "{name}"')
        if high is None:
            return ""
        assert isinstance(high, dt.datetime)
        bound = min(high, oldest) if oldest is not None else high
        return (bound - margin).isoformat()

    # --- export ---

    def export_parquet(self, directory: str | Path, *, overwrite: bool = False) -> ExportResult:
        """Write the call log as Parquet: ``calls/day=YYYY-MM-DD/`` and ``marks/day=.../`` (hive layout, UTC days),
        and ``flags.parquet`` and ``flag_audit.parquet``. The SQL models run on it unchanged."""
        if not self.is_synced():
            raise WarehouseError("the warehouse is empty; run `shadow sync` first")
        root = Path(directory)
        if root.exists() and not root.is_dir():
            raise WarehouseError(f"{root} is a file; give a directory to export into")
        if root.exists() and any(root.iterdir()) and not overwrite:
            raise WarehouseError(f"{root} is not empty; choose an empty or new directory, or pass --overwrite to "
                                 "replace what is there")
        if not root.parent.exists():
            raise WarehouseError(f"the folder {root.parent} does not exist; create it first")
        root.mkdir(exist_ok=True)
        counts: dict[str, int] = {}
        for table in LOG_TABLES:
            rel = self.con.table(table.name).select("*, CAST(ts AS DATE) AS day")
            counts[table.name] = int(self._scalar(f'SELECT count(*) FROM "{table.name}"'))
            if counts[table.name]:
                rel.write_parquet(str(root / table.name), partition_by=["day"], overwrite=True)
            else:
                (root / table.name).mkdir(exist_ok=True)
        for table in SMALL_TABLES:
            self.con.table(table.name).write_parquet(str(root / f"{table.name}.parquet"))
        files = sum(1 for _ in root.rglob("*.parquet"))
        return ExportResult(root, counts["calls"], counts["marks"], files)


def _columnar(part: Sequence[Sequence[Any]]) -> dict[str, np.ndarray]:
    return {f"c{i}": np.array(col, dtype=object) for i, col in enumerate(zip(*part, strict=True))}


def _prefetched(parts: Iterator[Sequence[Sequence[Any]]]) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """``(rows, columnar arrays)`` per batch, produced one batch ahead by a reader thread (errors re-raised here)."""
    ready: queue.Queue[tuple[int, dict[str, np.ndarray]] | BaseException | None] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def read() -> None:
        try:
            for part in parts:
                if stop.is_set():
                    return
                if part:
                    ready.put((len(part), _columnar(part)))
            ready.put(None)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            ready.put(exc)
        finally:
            close = getattr(parts, "close", None)
            if close is not None:
                close()  # releases the call-log connection in the thread that used it

    reader = threading.Thread(target=read, name="shadow-sync-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while reader.is_alive():  # unblock a reader waiting to put, then let it finish
            with contextlib.suppress(queue.Empty):
                ready.get(timeout=0.05)
        reader.join()


def _configure(con: duckdb.DuckDBPyConnection, memory_limit: str) -> None:
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET memory_limit = $limit", {"limit": memory_limit})


def _parse_ts(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text)


def sync(url: str | None = None, warehouse: str | Path | None = None, *, rebuild: bool = False,
         margin: dt.timedelta = DEFAULT_MARGIN, progress: Progress | None = None) -> SyncResult:
    """Sync the call log at ``url`` into the warehouse file ``warehouse`` (defaults from ``shadow.settings()``)."""
    with Warehouse.open(warehouse) as wh:
        return wh.sync(url, rebuild=rebuild, margin=margin, progress=progress)


def export_parquet(directory: str | Path, warehouse: str | Path | None = None, *,
                   overwrite: bool = False) -> ExportResult:
    """Export the warehouse file ``warehouse`` to ``directory`` as day-partitioned Parquet."""
    with Warehouse.open(warehouse, read_only=True) as wh:
        return wh.export_parquet(directory, overwrite=overwrite)
