"""A child process reading SQLite queries with ADBC and writing each to stdout as an Arrow IPC stream, in order.

ADBC's SQLite driver carries its own copy of the SQLite library. Two copies in one process do not see each other's
POSIX locks: closing one's connection drops the other's locks and may delete a WAL file still in use (the
corruption the SQLite documentation warns of). In a child process the two copies lock like any two processes.

    python -m shadow.analytics._sqlite_child PATH BATCH_ROWS < QUERIES

QUERIES: one group per output stream, groups separated by NUL characters; a group's parts (ranges of one table's
rowids) separated by SOH characters are read by parallel threads, each on its own connection, their batches
written to the group's one stream as they come. Each part starts with a typed seed row (an empty id), dropped here.
No queries: the child exits at once (a sync started it early, then needed none).
One process reads every log table of a sync (calls, marks): its start-up (Python, pyarrow, the driver) is paid once.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

#: The id of the typed seed row each query starts with (no call or mark has an empty id).
SEED_ID = ""


def _read_group(database: Any, parts: list[str], batch_rows: str) -> None:
    """Read ``parts`` in parallel threads; write their batches, seed rows dropped, to one stream on stdout."""
    import adbc_driver_manager as adbc  # the low-level API: the DB-API layer imports pandas (half a second)
    import pyarrow as pa

    lock = threading.Lock()
    state: dict[str, Any] = {"out": None, "error": None}

    def read(query: str) -> None:
        try:
            conn = adbc.AdbcConnection(database)
            stmt = adbc.AdbcStatement(conn)
            stmt.set_options(**{"adbc.sqlite.query.batch_rows": batch_rows})
            stmt.set_sql_query(query)
            handle, _ = stmt.execute_query()
            reader = pa.RecordBatchReader._import_from_c(handle.address)
            first = True
            for got in reader:  # the driver reads with the GIL released
                batch = got
                if first:
                    first = False
                    if batch.num_rows and batch.column(0)[0].as_py() == SEED_ID:
                        batch = batch.slice(1)
                with lock:
                    if state["error"] is not None:
                        break
                    if state["out"] is None:
                        state["out"] = pa.ipc.new_stream(sys.stdout.buffer, reader.schema)
                    if batch.num_rows:
                        state["out"].write_batch(batch)
            reader.close()
            stmt.close()
            conn.close()
        except BaseException as exc:  # reported by the main thread
            with lock:
                if state["error"] is None:
                    state["error"] = exc

    threads = [threading.Thread(target=read, args=(q,), name=f"part-{i}") for i, q in enumerate(parts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if state["error"] is not None:
        raise state["error"]
    state["out"].close()
    sys.stdout.buffer.flush()


def _import_pyarrow() -> None:
    """pyarrow without numpy, which it imports when it can (numpy is optional since pyarrow 16; nothing here uses it).

    numpy and its BLAS threads cost 0.17 of the child's 0.30 CPU seconds of start-up. Should a pyarrow need numpy
    after all, it is imported with it.
    """
    if "numpy" not in sys.modules:
        sys.modules["numpy"] = None  # type: ignore[assignment]  # makes ``import numpy`` raise ImportError
        try:
            import pyarrow
            return
        except ImportError:
            for name in [n for n in sys.modules if n == "numpy" or n.startswith("pyarrow")]:
                del sys.modules[name]
    import pyarrow  # noqa: F401


def main(argv: list[str]) -> int:
    """Run the query groups read from stdin on the SQLite file ``argv[0]``; write one stream per group."""
    _import_pyarrow()  # before the queries arrive: a child started early has its imports done when they come
    import adbc_driver_manager  # noqa: F401
    import adbc_driver_sqlite

    path, batch_rows = argv
    text = sys.stdin.read()
    if not text:  # started early, then not needed
        return 0
    groups = [group.split("\1") for group in text.split("\0")]
    try:
        database = adbc_driver_sqlite.connect(path)
        for parts in groups:
            _read_group(database, parts, batch_rows)
        database.close()
    except BrokenPipeError:  # the parent stopped reading (an error on its side)
        return 1
    except Exception as exc:  # the driver's errors: reported on stderr, read by the parent
        print(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
