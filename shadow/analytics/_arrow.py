"""The call log as Arrow record batches: ADBC's SQLite and PostgreSQL drivers read in C, no Python object per row."""

from __future__ import annotations

import contextlib
import datetime as dt
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Boolean, DateTime, Integer, Table
from sqlalchemy.engine import make_url

from shadow.analytics._source import SourceError, display_url, lower_param
from shadow.calllog import _db as db

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows per Arrow batch read from SQLite (ADBC's SQLite driver infers each column's type from the first batch).
BATCH_ROWS: Final = 16_384
#: SQLite reads of this many rows or more (a sync: calls and marks together) use ADBC in a child process.
CHILD_FROM_ROWS: Final = 100_000
#: Batches read ahead of DuckDB by the reader thread.
_AHEAD: Final = 2
#: The id of the typed first row the SQLite query starts with (no call or mark has an empty id).
_SEED_ID: Final = ""


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_integer(column: Any) -> bool:
    return isinstance(column.type, Integer | Boolean)


def sqlite_query(table: Table, lower: dt.datetime | None) -> str:
    """Every column as TEXT or INTEGER, after one typed seed row.

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
            seed.append(f"'{_SEED_ID}' AS {name}")
            cols.append(f"CAST({name} AS TEXT)")
    where = ""
    if lower is not None:
        where = f" WHERE CAST(inserted_at AS TEXT) >= '{lower_param(lower, 'sqlite')}'"
    return f"SELECT {', '.join(seed)} UNION ALL SELECT {', '.join(cols)} FROM {_quote(table.name)}{where}"


def postgres_query(table: Table, lower: dt.datetime | None) -> str:
    """Every column in its own type, times as UTC without a zone and JSON as text (ADBC reads them through COPY)."""
    cols = []
    for c in table.columns:
        name = _quote(c.name)
        if isinstance(c.type, DateTime):
            cols.append(f"timezone('UTC', {name}) AS {name}")
        elif _is_integer(c):
            cols.append(name)
        else:
            cols.append(f"CAST({name} AS TEXT) AS {name}")
    where = ""
    if lower is not None:
        where = f" WHERE inserted_at >= '{lower.isoformat()}+00:00'::timestamptz"
    return f"SELECT {', '.join(cols)} FROM {_quote(table.name)}{where}"


def _postgres(url: str) -> Any:
    """An ADBC DB-API connection to the PostgreSQL call log at ``url``."""
    parsed = make_url(db.normalise_url(url))
    try:
        import adbc_driver_postgresql.dbapi as adbc_pg
    except ImportError:
        raise SourceError("reading a PostgreSQL call log needs adbc-driver-postgresql: "
                          "pip install 'shadow-errors[analytics]'") from None
    try:
        return adbc_pg.connect(parsed.set(drivername="postgresql").render_as_string(hide_password=False))
    except Exception as exc:  # the driver's DB-API errors
        raise SourceError(f"cannot read the call log at {display_url(url)}: {str(exc).splitlines()[0]}") from None


@contextlib.contextmanager
def sqlite_child(path: str, queries: list[str]) -> Iterator[Callable[[], pa.RecordBatchReader]]:
    """One child process (``_sqlite_child``) reading ``queries`` in order with ADBC, streamed back as Arrow IPC.

    Yields ``next_stream()``: the batches of the next query, each read to its end before the next is asked for. One
    process serves every log table of a sync, so its start-up (Python, pyarrow, the driver) is paid once.
    """
    import pyarrow as pa

    child = Path(__file__).with_name("_sqlite_child.py")
    proc = subprocess.Popen([sys.executable, str(child), path, str(BATCH_ROWS)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None

    ended: list[SourceError | None] = []

    def failure() -> SourceError | None:
        """Wait for the child (once); its error, if it failed."""
        if not ended:
            proc.stdout.close()  # type: ignore[union-attr]
            code = proc.wait()
            message = proc.stderr.read().decode(errors="replace").strip()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
            last = message.splitlines()[-1] if message else f"exit status {code}"
            ended.append(None if code == 0 else SourceError(f"reading the SQLite call log {path} failed: {last}"))
        return ended[0]

    def next_stream() -> pa.RecordBatchReader:
        try:
            return pa.ipc.open_stream(proc.stdout)
        except Exception:
            found = failure()
            raise found or SourceError(f"reading the SQLite call log {path} failed") from None

    try:
        proc.stdin.write("\0".join(queries).encode())
        proc.stdin.close()
    except Exception:
        found = failure()
        raise found or SourceError(f"reading the SQLite call log {path} failed") from None
    try:
        yield next_stream
    except SourceError:  # a stream cut short: the child's own error, when it has one, says why
        found = failure()
        if found is not None:
            raise found from None
        raise
    except BaseException:  # an error on this side (a row DuckDB refused, an interrupt) is the one to report
        failure()
        raise
    found = failure()
    if found is not None:
        raise found


@contextlib.contextmanager
def _sqlite_inline(path: str, table: Table, query: str) -> Iterator[pa.RecordBatchReader]:
    """A small read (under ``CHILD_FROM_ROWS``) through Python's sqlite3, without a child process's start-up."""
    import sqlite3

    import pyarrow as pa

    types = [pa.int64() if _is_integer(c) else pa.string() for c in table.columns]
    schema = pa.schema([pa.field(c.name, t) for c, t in zip(table.columns, types, strict=True)])

    def batches(cur: sqlite3.Cursor) -> Iterator[pa.RecordBatch]:
        while rows := cur.fetchmany(BATCH_ROWS):
            cols = zip(*rows, strict=True)
            yield pa.RecordBatch.from_arrays([pa.array(v, type=t) for v, t in zip(cols, types, strict=True)],
                                             schema=schema)

    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)  # the reader thread
    except sqlite3.Error as exc:
        raise SourceError(f"cannot read the SQLite call log {path}: {exc}") from None
    with contextlib.closing(conn):
        try:
            cur = conn.execute(query)
        except sqlite3.Error as exc:
            raise SourceError(f"reading {table.name} from the call log failed: {exc}") from None
        yield pa.RecordBatchReader.from_batches(schema, batches(cur))


@contextlib.contextmanager
def read_table(url: str, table: Table, lower: dt.datetime | None, advance: Callable[[int], None],
               rows: int = 0, child: Callable[[], pa.RecordBatchReader] | None = None
               ) -> Iterator[pa.RecordBatchReader]:
    """The rows of ``table`` (inserted at or after ``lower``) as a stream of Arrow batches, read one thread ahead.

    ``rows`` is the expected row count: SQLite reads of ``CHILD_FROM_ROWS`` or more go through ADBC in a child
    process; ``child`` is the next stream of a ``sqlite_child`` already reading this table's ``sqlite_query``.
    ``advance(rows)`` is called as each batch is handed on. Errors of the reader surface from the stream.
    """
    import pyarrow as pa

    parsed = make_url(db.normalise_url(url))
    dialect = parsed.get_backend_name()
    with contextlib.ExitStack() as stack:
        if dialect == "sqlite":
            if not parsed.database or parsed.database == ":memory:":
                raise SourceError("an in-memory SQLite store cannot be synced; log to a file (sqlite:///shadow.db)")
            query = sqlite_query(table, lower)
            if child is not None:
                raw = child()
            elif rows >= CHILD_FROM_ROWS:
                raw = stack.enter_context(sqlite_child(parsed.database, [query]))()
            else:
                raw = stack.enter_context(_sqlite_inline(parsed.database, table, query))
        elif dialect == "postgresql":
            conn = stack.enter_context(contextlib.closing(_postgres(url)))
            cur = stack.enter_context(contextlib.closing(conn.cursor()))
            try:
                cur.execute(postgres_query(table, lower))
                raw = cur.fetch_record_batch()
            except Exception as exc:
                raise SourceError(f"reading {table.name} from the call log failed: "
                                  f"{str(exc).splitlines()[0]}") from None
        else:
            raise SourceError(f"cannot sync from {display_url(url)}: only SQLite and PostgreSQL call logs are "
                              "supported")
        names = [c.name for c in table.columns]
        schema = pa.schema([raw.schema.field(i).with_name(n) for i, n in enumerate(names)])
        yield pa.RecordBatchReader.from_batches(
            schema, _ahead(raw, schema, skip_seed=dialect == "sqlite", advance=advance))


def _ahead(raw: pa.RecordBatchReader, schema: pa.Schema, *, skip_seed: bool,
           advance: Callable[[int], None]) -> Iterator[pa.RecordBatch]:
    """The batches of ``raw`` renamed to ``schema``, fetched by a thread while DuckDB writes the previous ones."""
    import pyarrow as pa

    ready: queue.Queue[pa.RecordBatch | BaseException | None] = queue.Queue(maxsize=_AHEAD)
    stop = threading.Event()

    def pump() -> None:
        first = skip_seed
        try:
            for got in raw:
                if stop.is_set():
                    return
                batch = got
                if first:
                    first = False
                    if batch.num_rows and batch.column(0)[0].as_py() == _SEED_ID:
                        batch = batch.slice(1)
                if batch.num_rows:
                    ready.put(pa.RecordBatch.from_arrays(batch.columns, schema=schema))
            ready.put(None)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            ready.put(exc)

    reader = threading.Thread(target=pump, name="shadow-sync-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            advance(item.num_rows)
            yield item
    finally:
        stop.set()
        while reader.is_alive():  # unblock a reader waiting to put, then let it finish
            with contextlib.suppress(queue.Empty):
                ready.get(timeout=0.05)
        reader.join()
