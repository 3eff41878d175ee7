"""A child process reading SQLite queries with ADBC and writing each to stdout as an Arrow IPC stream, in order.

ADBC's SQLite driver carries its own copy of the SQLite library. Two copies in one process do not see each other's
POSIX locks: closing one's connection drops the other's locks and may delete a WAL file still in use (the
corruption the SQLite documentation warns of). In a child process the two copies lock like any two processes.

    python -m shadow.analytics._sqlite_child PATH BATCH_ROWS < QUERIES   (separated by NUL characters)

One process reads every log table of a sync (calls, marks): its start-up (Python, pyarrow, the driver) is paid once.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    """Run the queries read from stdin on the SQLite file ``argv[0]``, one connection; write their batches."""
    import adbc_driver_sqlite.dbapi as adbc
    import pyarrow as pa

    path, batch_rows = argv
    queries = sys.stdin.read().split("\0")
    try:
        conn = adbc.connect(path)
        for query in queries:
            cur = conn.cursor()
            cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": batch_rows})
            cur.execute(query)
            reader = cur.fetch_record_batch()
            with pa.ipc.new_stream(sys.stdout.buffer, reader.schema) as out:
                for batch in reader:
                    out.write_batch(batch)
            sys.stdout.buffer.flush()
            cur.close()
        conn.close()
    except BrokenPipeError:  # the parent stopped reading (an error on its side)
        return 1
    except Exception as exc:  # the driver's errors: reported on stderr, read by the parent
        print(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
