"""The PostgreSQL call log as Arrow batches: ADBC's driver (binary COPY underneath), one connection per part.

ADBC's low-level API, not its DB-API layer, which imports pandas (half a second). One ADBC database serves a whole
sync: its set-up, which reads the server's type catalogue (65 ms), is paid once, in a thread while the sync plans
(``opening``); each query gets its own connection, so the parts of a large table (ranges of its pages) stream in
parallel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import make_url

from shadow.analytics._source import SourceError, display_url
from shadow.calllog import _db as db

if TYPE_CHECKING:
    import pyarrow as pa


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _import() -> None:
    try:
        import adbc_driver_manager  # noqa: F401
        import adbc_driver_postgresql  # noqa: F401
    except ImportError:
        raise SourceError("reading a PostgreSQL call log needs adbc-driver-postgresql: "
                          "pip install 'shadow-errors[analytics]'") from None


def _open(url: str) -> Any:
    """One ADBC database on the PostgreSQL call log at ``url``, a connection tried; a wrong URL fails here."""
    _import()
    import adbc_driver_manager as adbc
    import adbc_driver_postgresql

    normal = db.normalise_url(url)  # a host that vanishes fails the read, as it fails the writer, instead of hanging it
    parsed = make_url(normal).set(drivername="postgresql")
    uri = parsed.update_query_dict({k: str(v) for k, v in db.libpq_timeouts(normal).items()}).render_as_string(
        hide_password=False)
    try:
        handle = adbc_driver_postgresql.connect(uri)
    except Exception as exc:  # the driver's errors
        raise SourceError(f"cannot read the call log at {display_url(url)}: {_first_line(exc)}") from None
    try:
        adbc.AdbcConnection(handle).close()
    except Exception as exc:
        handle.close()
        raise SourceError(f"cannot read the call log at {display_url(url)}: {_first_line(exc)}") from None
    return handle


@contextlib.contextmanager
def database(url: str) -> Iterator[Any]:
    """One ADBC database on the PostgreSQL call log at ``url``, closed on leaving; a wrong URL fails here."""
    handle = _open(url)
    try:
        yield handle
    finally:
        handle.close()


@contextlib.contextmanager
def opening(url: str) -> Iterator[Callable[[], Any]]:
    """``database(url)`` opened from now on in a thread (the driver releases the GIL while it waits on the server).

    Yields a function that waits for the database and returns it, or raises what opening it raised; the database
    is closed on leaving, used or not.
    """
    try:  # here, not in the thread: a process forked while a thread imports could never import the module
        _import()
    except SourceError as exc:
        missing = exc

        def fail() -> Any:
            raise missing

        yield fail
        return
    with ThreadPoolExecutor(1, thread_name_prefix="shadow-sync-connect") as pool:
        future = pool.submit(_open, url)
        try:
            yield future.result
        finally:
            if future.exception() is None:  # waits for it; an error was raised to the caller if it asked
                future.result().close()


@contextlib.contextmanager
def streams(handle: Any, table_name: str, queries: Sequence[str]) -> Iterator[list[pa.RecordBatchReader]]:
    """``queries`` started at once, each on its own connection of ``handle``; everything closed on leaving."""
    import adbc_driver_manager as adbc
    import pyarrow as pa

    with contextlib.ExitStack() as stack:
        readers = []
        for query in queries:
            try:
                conn = adbc.AdbcConnection(handle)
                stack.callback(conn.close)
                stmt = adbc.AdbcStatement(conn)
                stack.callback(stmt.close)
                stmt.set_sql_query(query)
                result, _ = stmt.execute_query()
            except Exception as exc:
                raise SourceError(f"reading {table_name} from the call log failed: {_first_line(exc)}") from None
            reader = pa.RecordBatchReader._import_from_c(result.address)
            stack.callback(reader.close)  # the stream is released before its statement closes
            readers.append(reader)
        yield readers
