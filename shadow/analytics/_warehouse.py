"""The DuckDB warehouse: incremental sync from the call log (SQLite or PostgreSQL), rebuild, Parquet export."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import duckdb

from shadow._config import settings
from shadow.analytics import _sql as sql
from shadow.analytics._defaults import DEFAULT_MARGIN, DEFAULT_MEMORY_LIMIT
from shadow.analytics._export import ExportResult
from shadow.analytics._schema import DERIVED, LOG_TABLES, SMALL_TABLES, STATE_TABLE, ddl
from shadow.analytics._source import SourceError, WarehouseError, display_url
from shadow.analytics._sync import Progress, SyncResult

__all__ = [
    "DEFAULT_MARGIN", "DEFAULT_MEMORY_LIMIT", "ExportResult", "Progress", "SourceError", "SyncResult", "Warehouse",
    "WarehouseError", "display_url", "export_parquet", "sync",
]

_MEMORY: Final = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B)\s*", re.IGNORECASE)
_MIN_MEMORY: Final = 128 * 1000**2

# --- the warehouse ------------------------------------------------------------------------------------------------


class Warehouse:
    """A DuckDB warehouse file (or an in-memory one over exported Parquet): mirrored call log plus derived tables."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path | None,
                 memory_limit: str = DEFAULT_MEMORY_LIMIT) -> None:
        self.con = con
        self.path = path
        self.memory_limit = memory_limit

    @classmethod
    def open(cls, path: str | Path | None = None, *, read_only: bool = False,
             memory_limit: str = DEFAULT_MEMORY_LIMIT) -> Warehouse:
        """Open (or create) the warehouse file; default ``settings().warehouse_path()`` (``SHADOW_WAREHOUSE``).

        ``memory_limit`` caps DuckDB's memory (a size such as ``512MB`` or ``4GB``) whatever the log's size,
        spilling to a temporary file beside the warehouse beyond it; the process needs up to about 200 MB more.
        """
        _check_memory_limit(memory_limit)
        target = Path(path) if path is not None else settings().warehouse_path()
        if target.is_dir():
            raise WarehouseError(f"{target} is a directory; give a file path for the warehouse, for example "
                                 f"{target / 'shadow.duckdb'}")
        if read_only and not target.exists():
            raise WarehouseError(f"no warehouse at {target}; run `shadow sync` first")
        if not target.parent.exists():
            raise WarehouseError(f"the folder {target.parent} does not exist; create it or choose another "
                                 "warehouse file (--warehouse or SHADOW_WAREHOUSE)")
        if _is_sqlite(target):  # DuckDB would try to download its SQLite extension to open it
            raise WarehouseError(f"{target} is a SQLite database (a call log?), not a DuckDB warehouse; give the "
                                 f"warehouse a file of its own, for example {target.with_suffix('.duckdb')}")
        existed = target.exists()
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
        try:
            _configure(con, memory_limit)
        except ValueError:  # a limit DuckDB refuses leaves no new file behind
            con.close()
            if not existed:
                for made in (target, target.with_name(f"{target.name}.wal")):
                    made.unlink(missing_ok=True)
            raise
        return cls(con, target, memory_limit)

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
        _check_memory_limit(memory_limit)
        con = duckdb.connect()
        _configure(con, memory_limit)
        for table in (*LOG_TABLES, *SMALL_TABLES):
            con.execute(ddl(table))
        return cls(con, None, memory_limit)

    def close(self) -> None:
        """Close the connection."""
        self.con.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- state ---

    def _has(self, name: str) -> bool:
        # duckdb_tables(), not the information_schema view over it: binding that view costs a few milliseconds
        return bool(self._scalar(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = $name",
            {"name": name},
        ))

    def _scalar(self, query: str, params: dict[str, object] | None = None) -> Any:
        """The single value of a one-row query (fetched whole: DuckDB wants every result finished)."""
        rows = self.con.execute(query, params).fetchall() if params else self.con.execute(query).fetchall()
        return rows[0][0] if rows else None

    def is_synced(self) -> bool:
        """Whether the warehouse holds a synced call log."""
        return all(self._has(name) for name in DERIVED) and (self.path is None or self._has(STATE_TABLE))

    def is_mirrored(self) -> bool:
        """Whether a sync completed here: the call log is mirrored (derived tables of older models may be missing,
        and are computed again by the next sync without reading the log again)."""
        return self._has("error_followups") and self._has(STATE_TABLE)

    def state(self) -> dict[str, str]:
        """The sync bookkeeping: source, schema and model hashes, per-table lower bounds, last sync time."""
        if not self._has(STATE_TABLE):
            return {}
        return dict(self.con.execute(f"SELECT key, value FROM {STATE_TABLE}").fetchall())

    def set_state(self, values: dict[str, str]) -> None:
        """Record sync bookkeeping (inside the caller's transaction)."""
        self.con.execute(f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)")
        if values:  # one statement for them all
            self.con.execute(f"INSERT OR REPLACE INTO {STATE_TABLE} SELECT unnest($keys), unnest($values)",
                             {"keys": list(values), "values": list(values.values())})

    def checked_state(self, rebuild: bool) -> dict[str, str]:
        """The sync state; a file shadow did not create is refused (whatever ``rebuild``), a damaged one is a clear
        error, and ``rebuild`` moves a damaged one aside (never deleted) and starts a new warehouse."""
        assert self.path is not None
        try:
            state = self.state()
            foreign = [] if state else [name for (name,) in self.con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                "AND NOT starts_with(table_name, '_stage_') UNION ALL "
                "SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND NOT internal"
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
            _configure(self.con, self.memory_limit)
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
        ``rebuild`` (or a first sync, or a warehouse built by an older schema) starts over. The steps (plan,
        stage, publish) are in ``shadow.analytics._sync``; rows move as Arrow batches, never as Python objects.
        """
        if self.path is None:
            raise WarehouseError("this warehouse reads exported Parquet; it cannot sync")
        from shadow.analytics import _sync

        return _sync.run(self, url, rebuild=rebuild, margin=margin, progress=progress)

    # --- the models ---

    def records(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of SQL model ``name`` as dicts (the report's and dashboard's one way in)."""
        cur = sql.run(self.con, name, params)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def cutovers(self) -> dict[str, Any]:
        """Each tool's first cutover time (from ``flag_periods``)."""
        return dict(self.con.execute("SELECT tool, min(first_cutover_at) FROM flag_periods GROUP BY tool").fetchall())

    def derive(self) -> None:
        """Recompute every derived table (flag periods, error follow-ups, session counters) from the mirrored ones."""
        self.con.execute("CREATE OR REPLACE TEMP TABLE sync_scope (session_id VARCHAR)")
        sql.run(self.con, "flag_periods", prefix="CREATE OR REPLACE TABLE flag_periods AS ")
        for name in ("error_followups", "session_counters"):
            sql.run(self.con, name, {"all_sessions": True}, prefix=f"CREATE OR REPLACE TABLE {name} AS ")

    # --- export ---

    def export_parquet(self, directory: str | Path, *, overwrite: bool = False) -> ExportResult:
        """Write the call log as day-partitioned Parquet; into an earlier export, append only what is new."""
        from shadow.analytics import _export

        if not self.is_synced():
            raise WarehouseError("the warehouse is empty; run `shadow sync` first")
        return _export.export(self.con, Path(directory), overwrite=overwrite)


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _check_memory_limit(text: str) -> None:
    """Refuse a memory limit that is not a size of at least 128MB, saying what would do."""
    found = _MEMORY.fullmatch(text)
    units = {"k": 1, "m": 2, "g": 3, "t": 4}
    if found is None or float(found[1]) * (1024 if "i" in found[2].lower() else 1000) ** units[
            found[2][0].lower()] < _MIN_MEMORY:
        raise ValueError(f"the memory limit {text!r} is not a size of at least 128MB; give one such as 512MB, 4GB or "
                         "2GiB (units KB, MB, GB, TB or KiB, MiB, GiB, TiB)")


def _configure(con: duckdb.DuckDBPyConnection, memory_limit: str) -> None:
    con.execute("SET TimeZone = 'UTC'")
    # A library prints nothing: the CLI shows its own progress. (In Jupyter without ipywidgets DuckDB refuses to touch
    # the setting, and draws no bar there either.)
    with contextlib.suppress(duckdb.InvalidInputException):
        con.execute("SET enable_progress_bar = false")
    try:  # DuckDB's own range check (a size too large for it)
        con.execute("SET memory_limit = $limit", {"limit": memory_limit})
    except duckdb.Error as exc:
        raise ValueError(f"the memory limit {memory_limit!r} is refused by DuckDB ({str(exc).splitlines()[0]}); "
                         "give a size such as 512MB or 4GB") from None
    # DuckDB before 2.0 takes a size too large for it without a word, and keeps 0 bytes
    if con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0].startswith("0 "):
        raise ValueError(f"the memory limit {memory_limit!r} is refused by DuckDB (value is too large); give a size "
                         "such as 512MB or 4GB")


def sync(url: str | None = None, warehouse: str | Path | None = None, *, rebuild: bool = False,
         margin: dt.timedelta = DEFAULT_MARGIN, progress: Progress | None = None,
         memory_limit: str = DEFAULT_MEMORY_LIMIT) -> SyncResult:
    """Sync the call log at ``url`` into the warehouse file ``warehouse`` (default: the settings)."""
    with Warehouse.open(warehouse, memory_limit=memory_limit) as wh:
        return wh.sync(url, rebuild=rebuild, margin=margin, progress=progress)


def export_parquet(directory: str | Path, warehouse: str | Path | None = None, *,
                   overwrite: bool = False) -> ExportResult:
    """Export the warehouse file ``warehouse`` to ``directory`` as day-partitioned Parquet."""
    with Warehouse.open(warehouse, read_only=True) as wh:
        return wh.export_parquet(directory, overwrite=overwrite)
