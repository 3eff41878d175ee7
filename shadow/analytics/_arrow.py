"""The call log as Arrow record batches: ADBC's SQLite and PostgreSQL drivers read in C, no Python object per row.

A sync reads its tables in order through ``open_reads``: a large SQLite read in one child process
(``_sqlite_read``), PostgreSQL through one ADBC database (``_postgres_read``); a large table in parallel parts.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Boolean, DateTime, Engine, Integer, Table, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from shadow.analytics import _postgres_read, _sqlite_read
from shadow.analytics._source import SourceError, display_url, lower_param, reason, rowid_range
from shadow.analytics._sqlite_child import SEED_ID
from shadow.calllog import _db as db

if TYPE_CHECKING:
    import pyarrow as pa

#: SQLite reads of this many rows or more (a sync's tables together) use ADBC in a child process.
CHILD_FROM_ROWS: Final = 100_000
#: A table of this many rows per core or more is read in parallel parts (SQLite: ranges of rowids; PostgreSQL:
#: ranges of pages), up to ``_MAX_PARTS``.
PART_FROM_ROWS: Final = 100_000
_MAX_PARTS: Final = 4
#: Batches read ahead of DuckDB by the reader threads.
_AHEAD: Final = 2

#: ``next_read(advance)``: the next table's batches, renamed to its columns, ``advance(rows)`` called per batch.
NextRead = Callable[[Callable[[int], None]], contextlib.AbstractContextManager["pa.RecordBatchReader"]]


@dataclass(frozen=True, slots=True)
class Read:
    """One table to read: its rows inserted at or after ``lower`` (all when None), about ``rows`` of them."""

    table: Table
    lower: dt.datetime | None
    rows: int


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_integer(column: Any) -> bool:
    return isinstance(column.type, Integer | Boolean)


def sqlite_query(table: Table, lower: dt.datetime | None, rowids: tuple[int, int] | None = None) -> str:
    """Every column as TEXT or INTEGER, after one typed seed row; ``rowids`` limits it to a range of rowids.

    ADBC's SQLite driver infers a column's Arrow type from the first batch and fails on a later value of another
    type, so a column that is NULL throughout the first batch (``code`` on a run of successes) would break it. The
    seed row (dropped on reading) fixes every type; the casts make stored values agree with it, whatever affinity
    turned them into (a JSON payload ``42`` is stored as an integer in a ``JSON`` column).
    """
    seed, cols = [], []
    for c in table.columns:
        name = _quote(c.name)
        if _is_integer(c):
            seed.append(f"0 AS {name}")
            cols.append(f"CAST({name} AS INTEGER)")
        else:
            seed.append(f"'{SEED_ID}' AS {name}")
            cols.append(f"CAST({name} AS TEXT)")
    where = []
    if lower is not None:
        where.append(f"CAST(inserted_at AS TEXT) >= '{lower_param(lower, 'sqlite')}'")
    if rowids is not None:
        where.append(f"rowid BETWEEN {int(rowids[0])} AND {int(rowids[1])}")
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return f"SELECT {', '.join(seed)} UNION ALL SELECT {', '.join(cols)} FROM {_quote(table.name)}{clause}"


def _parts(rows: int) -> int:
    """How many parallel parts a read of ``rows`` rows is split into: one per core, up to 4, from 100,000 rows each."""
    return max(1, min(os.cpu_count() or 1, _MAX_PARTS, rows // PART_FROM_ROWS))


def sqlite_parts(engine: Engine, table: Table, lower: dt.datetime | None, rows: int) -> list[str]:
    """``sqlite_query`` split into ranges of rowids that the child reads in parallel (one per core, up to 4)."""
    parts = _parts(rows)
    if parts == 1:
        return [sqlite_query(table, lower)]
    try:
        span = rowid_range(engine, table)
    except SQLAlchemyError as exc:  # a damaged file, say
        raise SourceError(f"reading {table.name} from the call log failed: {reason(exc)}") from None
    if span is None:
        return [sqlite_query(table, lower)]
    low, high = span
    step = (high - low) // parts + 1
    return [sqlite_query(table, lower, (low + i * step, min(high, low + (i + 1) * step - 1))) for i in range(parts)]


def postgres_query(table: Table, lower: dt.datetime | None,
                   pages: tuple[int, int | None] | None = None) -> str:
    """Every column in its own type, times as UTC without a zone and JSON as text (ADBC reads them through COPY).

    ``pages`` limits it to a range of the table's pages (the upper bound open when None).
    """
    cols = []
    for c in table.columns:
        name = _quote(c.name)
        if isinstance(c.type, DateTime):
            cols.append(f"timezone('UTC', {name}) AS {name}")
        elif _is_integer(c):
            cols.append(name)
        else:
            cols.append(f"CAST({name} AS TEXT) AS {name}")
    where = []
    if lower is not None:
        where.append(f"inserted_at >= '{lower.isoformat()}+00:00'::timestamptz")
    if pages is not None:  # a TID range scan (PostgreSQL 14 and later) reads just those pages
        where.append(f"ctid >= '({int(pages[0])},0)'::tid")
        if pages[1] is not None:
            where.append(f"ctid < '({int(pages[1])},0)'::tid")
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return f"SELECT {', '.join(cols)} FROM {_quote(table.name)}{clause}"


def postgres_parts(engine: Engine, table: Table, lower: dt.datetime | None, rows: int) -> list[str]:
    """``postgres_query`` split into ranges of the table's pages, read in parallel (PostgreSQL 14 and later).

    Each part reads its own snapshot, a moment apart: the call log is append-only, so a row is in one part, and a
    row committed in that moment, if missed, is read by the next sync (its lower bound keeps a margin).
    """
    parts = _parts(rows)
    if parts == 1 or (engine.dialect.server_version_info or (0,)) < (14,):
        return [postgres_query(table, lower)]
    try:
        with engine.connect() as conn:
            pages = conn.execute(text("SELECT pg_relation_size(CAST(:name AS regclass)) / "
                                      "current_setting('block_size')::bigint"), {"name": table.name}).scalar_one()
    except SQLAlchemyError as exc:
        raise SourceError(f"reading {table.name} from the call log failed: {reason(exc)}") from None
    step = int(pages) // parts + 1
    bounds = [(i * step, (i + 1) * step if i < parts - 1 else None) for i in range(parts)]
    return [postgres_query(table, lower, b) for b in bounds]


@dataclass(slots=True)
class Early:
    """What a sync starts before it plans, to overlap with the planning: PostgreSQL's ADBC database opening in a
    thread, or the SQLite reader process importing its modules (for a full sync of a large file)."""

    database: Callable[[], Any] | None = None
    child: subprocess.Popen[bytes] | None = None


#: A SQLite file of this size or more gets its reader process before a full sync plans (a call takes more than 160
#: bytes of a file, so it holds ``CHILD_FROM_ROWS`` rows or fewer); a started child reads whatever the count.
EARLY_CHILD_FROM_BYTES: Final = 16 * 1024 * 1024


@contextlib.contextmanager
def connecting(url: str, *, full: bool) -> Iterator[Early]:
    """Start the reads' set-up for ``url`` now (``open_reads`` takes it); whatever is left unused is closed on leaving.

    ``full``: a full sync is expected (a SQLite reader process is started early for a large file only then).
    """
    try:
        parsed = make_url(db.normalise_url(url))
        dialect = parsed.get_backend_name()
    except Exception:  # a malformed URL: the sync's plan says what is wrong with it
        yield Early()
        return
    if dialect == "postgresql":
        with _postgres_read.opening(url) as database:
            yield Early(database=database)
        return
    path = parsed.database if dialect == "sqlite" else None
    big = False
    if full and path and path != ":memory:":
        with contextlib.suppress(OSError):
            big = os.path.getsize(path) >= EARLY_CHILD_FROM_BYTES
    early = Early(child=_sqlite_read.spawn(path) if big and path else None)
    try:
        yield early
    finally:
        if early.child is not None:  # not taken by open_reads
            _sqlite_read.dismiss(early.child)


@contextlib.contextmanager
def open_reads(url: str, engine: Engine, reads: Sequence[Read], early: Early | None = None) -> Iterator[NextRead]:
    """The tables of ``reads``, in that order: each call of the yielded ``next_read`` opens the next one.

    Every stream is read a few batches ahead by threads while DuckDB writes; errors of a reader surface from it.
    ``early``: what ``connecting`` started (the PostgreSQL database, the SQLite reader process), taken from it here.
    """
    early = early or Early()
    parsed = make_url(db.normalise_url(url))
    dialect = parsed.get_backend_name()
    todo = iter(reads)
    with contextlib.ExitStack() as stack:
        if dialect == "sqlite":
            path = parsed.database
            if not path or path == ":memory:":
                raise SourceError("an in-memory SQLite store cannot be synced; log to a file (sqlite:///shadow.db)")
            child = None
            started, early.child = early.child, None
            if started is not None or sum(r.rows for r in reads) >= CHILD_FROM_ROWS:
                child = stack.enter_context(_sqlite_read.sqlite_child(
                    path, [sqlite_parts(engine, r.table, r.lower, r.rows) for r in reads], started))

            @contextlib.contextmanager
            def next_read(advance: Callable[[int], None]) -> Iterator[pa.RecordBatchReader]:
                r = next(todo)
                if child is not None:
                    yield _renamed(r.table, [child()], advance)
                else:
                    with _sqlite_read.sqlite_inline(path, r.table, sqlite_query(r.table, r.lower)) as raw:
                        yield _renamed(r.table, [raw], advance)

        elif dialect == "postgresql":
            handle = (early.database() if early.database is not None
                      else stack.enter_context(_postgres_read.database(url)))

            @contextlib.contextmanager
            def next_read(advance: Callable[[int], None]) -> Iterator[pa.RecordBatchReader]:
                r = next(todo)
                queries = postgres_parts(engine, r.table, r.lower, r.rows)
                with _postgres_read.streams(handle, r.table.name, queries) as raws:
                    yield _renamed(r.table, raws, advance)

        else:
            raise SourceError(f"cannot sync from {display_url(url)}: only SQLite and PostgreSQL call logs are "
                              "supported")
        yield next_read


def _renamed(table: Table, raws: list[pa.RecordBatchReader], advance: Callable[[int], None]) -> pa.RecordBatchReader:
    """One stream of the batches of ``raws`` (parts of ``table``, in any order), renamed to its columns."""
    import pyarrow as pa

    names = [c.name for c in table.columns]
    schema = pa.schema([raws[0].schema.field(i).with_name(n) for i, n in enumerate(names)])
    return pa.RecordBatchReader.from_batches(schema, _ahead(raws, schema, advance))


def _ahead(raws: list[pa.RecordBatchReader], schema: pa.Schema,
           advance: Callable[[int], None]) -> Iterator[pa.RecordBatch]:
    """The batches of ``raws`` renamed to ``schema``, fetched by one thread each while DuckDB writes earlier ones."""
    import pyarrow as pa

    ready: queue.Queue[pa.RecordBatch | BaseException | None] = queue.Queue(maxsize=_AHEAD * len(raws))
    stop = threading.Event()

    def pump(raw: pa.RecordBatchReader) -> None:
        try:
            for batch in raw:  # the driver reads with the GIL released
                if stop.is_set():
                    return
                if batch.num_rows:
                    ready.put(pa.RecordBatch.from_arrays(batch.columns, schema=schema))
            ready.put(None)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            ready.put(exc)

    threads = [threading.Thread(target=pump, args=(raw,), name=f"shadow-sync-reader-{i}", daemon=True)
               for i, raw in enumerate(raws)]
    for t in threads:
        t.start()
    try:
        running = len(threads)
        while running:
            item = ready.get()
            if item is None:
                running -= 1
                continue
            if isinstance(item, BaseException):
                raise item
            advance(item.num_rows)
            yield item
    finally:
        stop.set()
        while any(t.is_alive() for t in threads):  # unblock readers waiting to put, then let them finish
            with contextlib.suppress(queue.Empty):
                ready.get(timeout=0.05)
        for t in threads:
            t.join()
