"""``shadow export parquet``: the call log as day-partitioned Parquet for a lake, and appending only what is new."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from shadow.analytics._schema import LOG_TABLES, SMALL_TABLES
from shadow.analytics._source import WarehouseError


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What ``export_parquet`` wrote: rows written this time (all of them, or the new ones when appending)."""

    directory: Path
    calls: int
    marks: int
    files: int
    appended: bool = False


def is_export(root: Path) -> bool:
    """Whether ``root`` holds an earlier ``shadow export parquet`` (its ``calls/`` and ``marks/`` folders)."""
    return all((root / t.name).is_dir() for t in LOG_TABLES)


def export(con: duckdb.DuckDBPyConnection, root: Path, *, overwrite: bool = False) -> ExportResult:
    """Write ``calls/day=YYYY-MM-DD/`` and ``marks/day=.../`` (hive layout, UTC days) and one file per small table
    (``flags.parquet``, ``flag_audit.parquet``, ``writer_stats.parquet``) under ``root``. The SQL models run on it
    unchanged, on DuckDB and on Spark. ``overwrite`` replaces those; other files in ``root`` are left alone.

    Into an earlier export (and without ``overwrite``) only rows whose id the export lacks in their day partition
    are written, as new files beside the old ones; the small flag tables are rewritten whole. A daily job running
    ``shadow export parquet`` into the same directory keeps a lake current.
    """
    if root.exists() and not root.is_dir():
        raise WarehouseError(f"{root} is a file; give a directory to export into")
    if not root.parent.exists():
        raise WarehouseError(f"the folder {root.parent} does not exist; create it first")
    appending = root.exists() and is_export(root) and not overwrite
    if root.exists() and any(root.iterdir()) and not appending and not overwrite:
        raise WarehouseError(f"{root} is not empty and holds no earlier export; choose an empty or new directory, "
                             "or pass --overwrite to write the export there anyway (the other files are left alone)")
    if overwrite and root.exists():
        for table in LOG_TABLES:
            shutil.rmtree(root / table.name, ignore_errors=True)
    root.mkdir(exist_ok=True)
    counts = {table.name: _write_log_table(con, root, table.name, appending=appending) for table in LOG_TABLES}
    for table in SMALL_TABLES:
        con.table(table.name).write_parquet(str(root / f"{table.name}.parquet"))
    files = sum(1 for _ in root.rglob("*.parquet"))
    return ExportResult(root, counts["calls"], counts["marks"], files, appending)


def _write_log_table(con: duckdb.DuckDBPyConnection, root: Path, name: str, *, appending: bool) -> int:
    folder = root / name
    rel = con.table(name).select("*, CAST(ts AS DATE) AS day")
    if appending and any(folder.rglob("*.parquet")):
        # only the day partitions and ids the export lacks; the anti-join reads the id and day columns only
        have = con.read_parquet(str(folder / "**" / "*.parquet"), hive_partitioning=True).select("id, day")
        rel = rel.set_alias("w").join(have.set_alias("e"), "w.id = e.id AND w.day = e.day", how="anti")
    count = int(rel.count("*").fetchall()[0][0])
    if count:
        rel.write_parquet(str(folder), partition_by=["day"], append=True)
    else:
        folder.mkdir(exist_ok=True)
    return count
