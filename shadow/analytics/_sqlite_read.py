"""The SQLite call log as Arrow batches: ADBC in a child process for a large read, Python's sqlite3 for a small one."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sqlalchemy import Boolean, Integer, Table

from shadow.analytics._source import SourceError
from shadow.analytics._sqlite_child import SEED_ID

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows per Arrow batch read from SQLite (ADBC's SQLite driver infers each column's type from the first batch).
BATCH_ROWS: Final = 16_384


def spawn(path: str) -> subprocess.Popen[bytes]:
    """A ``_sqlite_child`` process on the SQLite file ``path``: it imports what it needs, then waits for queries."""
    child = Path(__file__).with_name("_sqlite_child.py")
    env = {"OPENBLAS_NUM_THREADS": "1", **os.environ}  # should numpy be imported, no idle BLAS threads for it
    return subprocess.Popen([sys.executable, str(child), path, str(BATCH_ROWS)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def dismiss(proc: subprocess.Popen[bytes]) -> None:
    """End a child ``spawn`` started that was given no queries (it exits on an empty input)."""
    with contextlib.suppress(OSError):
        proc.stdin.close()  # type: ignore[union-attr]
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


@contextlib.contextmanager
def sqlite_child(path: str, queries: list[list[str]],
                 started: subprocess.Popen[bytes] | None = None) -> Iterator[Callable[[], pa.RecordBatchReader]]:
    """One child process (``_sqlite_child``) reading ``queries`` in order with ADBC, streamed back as Arrow IPC.

    Each item of ``queries`` is one stream: its parts (``sqlite_parts``) are read by parallel threads of the child.
    Yields ``next_stream()``: the batches of the next stream, each read to its end before the next is asked for. One
    process serves every log table of a sync, so its start-up (Python, pyarrow, the driver) is paid once;
    ``started`` is a child ``spawn`` started earlier on ``path`` (else one is started here).
    """
    import pyarrow as pa

    proc = started if started is not None else spawn(path)
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
        proc.stdin.write("\0".join("\1".join(parts) for parts in queries).encode())
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
def sqlite_inline(path: str, table: Table, query: str) -> Iterator[pa.RecordBatchReader]:
    """A small read (under ``CHILD_FROM_ROWS``) through Python's sqlite3, without a child process's start-up.

    ``query`` is a ``sqlite_query``: its typed seed row is dropped here, as the child drops it.
    """
    import sqlite3

    import pyarrow as pa

    types = [pa.int64() if isinstance(c.type, Integer | Boolean) else pa.string() for c in table.columns]
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
            seed = cur.fetchone()  # the typed first row of ``sqlite_query``, not a row of the log
        except sqlite3.Error as exc:
            raise SourceError(f"reading {table.name} from the call log failed: {exc}") from None
        if seed is not None and seed[0] != SEED_ID:
            raise SourceError(f"reading {table.name} from the call log failed: its query has no seed row")
        yield pa.RecordBatchReader.from_batches(schema, batches(cur))
