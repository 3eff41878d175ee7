"""Health of the call log: what each writing process wrote and when it last wrote, sequence gaps, writer counters."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final

from shadow.analytics._text import counted

#: The table the writer's counters are persisted in, when the writer persists them (read only if it exists).
WRITER_STATS_TABLE: Final = "writer_stats"
WRITER_STATS_COLUMNS: Final = ("process", "host", "written", "spooled", "replayed", "dropped", "updated_at")
#: The most processes listed (the latest writers).
MAX_PROCESSES: Final = 20


@dataclass(frozen=True, slots=True)
class ProcessHealth:
    """One writing process: records in the warehouse, when it first and last wrote, and its writer's counters
    (None each when the store does not record them)."""

    process: str
    host: str
    calls: int
    marks: int
    first_write: dt.datetime | None
    last_write: dt.datetime | None
    written: int | None = None
    spooled: int | None = None
    replayed: int | None = None
    dropped: int | None = None
    counters_at: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class LogHealth:
    """The whole log's health (no filters apply): sessions with holes in their sequence, and per process."""

    sessions: int
    sessions_with_gaps: int
    missing_records: int  # sequence numbers missing in those sessions
    writer_counters: bool  # False: the store has no writer_stats table ("not recorded")
    written: int | None  # totals over processes of the writer counters, None when not recorded
    spooled: int | None
    replayed: int | None
    dropped: int | None
    processes: tuple[ProcessHealth, ...]
    processes_total: int
    message: str


def _writer_stats(con: Any) -> dict[tuple[str, str], tuple[Any, ...]] | None:
    found = con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ?",
                        [WRITER_STATS_TABLE]).fetchall()
    if not set(WRITER_STATS_COLUMNS) <= {str(c) for c, in found}:
        return None
    cols = ", ".join(f'"{c}"' for c in WRITER_STATS_COLUMNS)
    rows = con.execute(f"SELECT {cols} FROM {WRITER_STATS_TABLE}").fetchall()
    if not rows:
        return None  # the table is mirrored from every store, but no writer has recorded its counters here
    return {(str(r[0]), str(r[1])): tuple(r[2:]) for r in rows}


def _writer_stats_of(source: Any) -> dict[tuple[str, str], tuple[Any, ...]] | None:
    """The writer counters from a DuckDB warehouse (its connection) or the Spark models (the export's view)."""
    con = getattr(source, "con", None)
    if con is not None:
        return _writer_stats(con)
    try:
        rows = source.table(WRITER_STATS_TABLE)
    except Exception:  # an export without the table (written before it existed)
        return None
    if not rows:
        return None
    return {(str(r["process"]), str(r["host"])): tuple(r[c] for c in WRITER_STATS_COLUMNS[2:]) for r in rows}


def log_health(source: Any) -> LogHealth:
    """Read the log's health from a synced warehouse or the Spark models (the same models and counters)."""
    rows = source.records("report_log_health")
    summary = next((r for r in rows if r["kind"] == "sessions"), None)
    counters = _writer_stats_of(source)
    procs = []
    for r in rows:
        if r["kind"] != "process":
            continue
        extra: dict[str, Any] = {}
        if counters is not None and (found := counters.get((str(r["process"]), str(r["host"])))) is not None:
            extra = dict(zip(("written", "spooled", "replayed", "dropped", "counters_at"), found, strict=True))
        procs.append(ProcessHealth(str(r["process"]), str(r["host"]), int(r["calls"]), int(r["marks"]),
                                   r["first_write"], r["last_write"], **extra))
    sessions = int(summary["calls"]) if summary else 0
    gaps = int(summary["marks"]) if summary else 0
    missing = int(summary["missing"]) if summary else 0

    def total(name: str) -> int | None:
        if counters is None:
            return None
        return sum(int(v[WRITER_STATS_COLUMNS.index(name) - 2] or 0) for v in counters.values())

    if gaps:
        message = (f"{gaps:,} of {sessions:,} sessions have gaps in their sequence numbers ({missing:,} records "
                   "missing): a writer dropped records or has not flushed them yet")
    else:
        message = f"no sequence gaps in {counted(sessions, 'session')}"
    message += ("" if counters is not None else "; writer counters: not recorded (this store has no "
                f"{WRITER_STATS_TABLE} table)")
    return LogHealth(sessions, gaps, missing, counters is not None, total("written"), total("spooled"),
                     total("replayed"), total("dropped"), tuple(procs[:MAX_PROCESSES]), len(procs), message)
