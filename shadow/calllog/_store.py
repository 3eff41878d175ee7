"""Where call records land: the ``Store`` protocol and ``SqlStore``, idempotent inserts into SQLite or PostgreSQL."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from shadow import _lazy as preload
from shadow._clock import utc
from shadow.calllog import _plain as plain
from shadow.calllog import _sqlite as light
from shadow.calllog._outage import StoreUnavailable
from shadow.calllog._records import Built, CallRecord, CallRow, MarkRecord, Record

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine, Table

#: SQLSTATE classes and codes that say "not now", not "never": connection failures (08), a read-only
#: transaction or database (25006, a failover), resources (53: disk full, too many connections), operator
#: intervention (57: shutdown, cancelled by statement_timeout), lock timeouts (55P03), serialization (40).
_OUTAGE_STATES: Final = ("08", "25006", "40", "53", "55P03", "57", "58")


def is_outage(error: BaseException) -> bool:
    """Whether a database error means the store cannot write right now (rather than refusing these rows)."""
    if isinstance(error, _unavailable()):
        return True
    orig = getattr(error, "orig", None)
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if isinstance(state, str) and state.startswith(_OUTAGE_STATES):
        return True
    text = str(orig if orig is not None else error).lower()
    return "read-only" in text or "readonly database" in text or "database is locked" in text


def _unavailable() -> tuple[type[BaseException], ...]:
    """Errors that say "the database is not there right now", not "these rows are wrong" (SQLAlchemy's only once
    it is loaded: before that no error can be one of them)."""
    exc = sys.modules.get("sqlalchemy.exc")
    if exc is None:
        return (OSError,)
    return (exc.OperationalError, exc.InterfaceError, exc.DisconnectionError, exc.TimeoutError, OSError)


#: The last second formatted (its fields, its text): a batch's records mostly share it, and ``isoformat`` is most
#: of this conversion's cost. One tuple, replaced whole, so threads never see a key with another second's text.
_last_second: tuple[tuple[int, ...], str] = ((), "")


def _sqlite_time(value: dt.datetime) -> str:
    """UTC wall time in the form SQLAlchemy's SQLite ``DateTime`` stores and reads (readers attach UTC)."""
    global _last_second
    if value.tzinfo is dt.UTC:  # "YYYY-MM-DD HH:MM:SS.ffffff", as isoformat(" ", "microseconds") without "+00:00"
        key = (value.second, value.minute, value.hour, value.day, value.month, value.year)
        last = _last_second
        if last[0] != key:
            last = _last_second = (key, value.isoformat(" ", "seconds")[:-6])
        return f"{last[1]}.{value.microsecond:06d}"
    return utc(value).replace(tzinfo=None).isoformat(" ", "microseconds")


#: Rows per SQLite insert statement, at most: within the 999 variables older SQLite allows (28 columns x 32 rows).
_GROUP: Final = 32
_flat: Final = itertools.chain.from_iterable


def _quote(name: str) -> str:
    """A quoted SQL identifier (standard double quotes: SQLite and PostgreSQL alike)."""
    return '"' + name.replace('"', '""') + '"'


class _Insert:
    """One table's idempotent ``executemany`` insert, built from ``shadow.calllog._tables`` (the schema source).

    Rows go to the driver as tuples, bypassing per-value processing: JSON columns are serialised with orjson
    (``None`` becomes JSON ``null``) and times become UTC, as SQLAlchemy's types would.
    """

    def __init__(self, table: Table, record_type: type[CallRecord] | type[MarkRecord], backend: str) -> None:
        from sqlalchemy import JSON, DateTime

        fields = [f.name for f in dataclasses.fields(record_type)]
        missing = [name for name in fields if name not in table.c]
        if missing:
            raise RuntimeError(f"{record_type.__name__} fields {missing} have no column in table {table.name!r}")
        mark = "?" if backend == "sqlite" else "%s"
        into = f"INSERT INTO {_quote(table.name)} ({', '.join(_quote(n) for n in fields)}) VALUES "
        on_conflict = f" ON CONFLICT ({_quote('id')}) DO NOTHING"
        row_marks = f"({', '.join(mark for _ in fields)})"
        self.sql = into + row_marks + on_conflict
        self.to_time: Callable[[dt.datetime], Any] = _sqlite_time if backend == "sqlite" else utc
        # One generated function per table (as dataclasses generates __init__): a tuple of the fields in order,
        # JSON columns through orjson, times in UTC; a third faster than a loop over the fields.
        json = {name for name in fields if isinstance(table.c[name].type, JSON)}
        times = {name for name in fields if isinstance(table.c[name].type, DateTime)}
        values = ", ".join(f"_json(r.{n})" if n in json else f"_time(r.{n})" if n in times else f"r.{n}"
                           for n in fields)
        namespace: dict[str, Any] = {"_json": plain.dumps, "_time": self.to_time}
        exec(f"def row(r):\n    return ({values},)\n", namespace)
        self.row: Callable[[Record], tuple[Any, ...]] = namespace["row"]
        self.bulk_sql = _bulk_sql(table, fields, json) if backend == "postgresql" else None
        # SQLite: rows in groups per statement. Its driver lets go of the GIL for every statement step, and each
        # time a busy thread takes it, the writer waits for it back: one step per group, not one per row.
        self.group = min(_GROUP, 999 // len(fields))
        self.group_sql = into + ", ".join([row_marks] * self.group) + on_conflict if backend == "sqlite" else None

    def statements(self, records: Sequence[Built]) -> list[tuple[str, Any]]:
        """The statements that insert ``records``: on SQLite, ``group`` rows per statement and the rest one per
        row; on PostgreSQL, ``statement``'s one."""
        if self.group_sql is None:
            return [self.statement(records)]
        rows, group = self._rows(records), self.group
        full = len(rows) - len(rows) % group
        out: list[tuple[str, Any]] = []
        if full:
            out.append((self.group_sql, [tuple(_flat(rows[at:at + group])) for at in range(0, full, group)]))
        if full < len(rows):
            out.append((self.sql, rows[full:]))
        return out

    def statement(self, records: Sequence[Built]) -> tuple[str, Any]:
        """The statement and its parameters: each record's row (a ``CallRow``'s as it is); on PostgreSQL, when
        JSON carries the rows exactly, one document of them (orjson encodes the batch in one call, the server reads
        it with ``json_array_elements``); else one tuple per row for ``executemany``."""
        rows = self._rows(records)
        if self.bulk_sql is not None:
            try:
                text = orjson.dumps(rows, option=orjson.OPT_NAIVE_UTC).decode()
            except TypeError:  # an integer past 64 bits: the driver's path, as json.dumps stores it
                text = None
            if text is not None and "\\u0000" not in text:  # NUL: json columns take it, the text in them not
                return self.bulk_sql, (text,)
        return self.sql, rows

    def _rows(self, records: Sequence[Built]) -> list[tuple[Any, ...]]:
        """Each record's row: a ``CallRow``'s values as they are (JSON encoded once, by ``_direct``), the time in
        the backend's form; a record's made here."""
        row, to_time = self.row, self.to_time
        as_is = to_time is utc  # PostgreSQL takes a CallRow's time as it is: UTC already (``_direct``)
        rows: list[tuple[Any, ...]] = []
        for record in records:
            if type(record) is CallRow:
                values = record.values
                rows.append(values if as_is else (values[0], values[1], values[2], to_time(values[3]), *values[4:]))
            else:
                rows.append(row(record))  # type: ignore[arg-type]
        return rows


def _bulk_sql(table: Table, fields: list[str], json: set[str]) -> str:
    """A PostgreSQL insert of a JSON array of rows (each an array of the columns in order): text as text, so a value
    too long for its column is refused as the per-row insert refuses it, never cut; other values cast to their
    column's type; JSON columns parsed from their JSON text (``null`` kept as JSON ``null``, as the per-row insert
    stores it)."""
    from sqlalchemy import String
    from sqlalchemy.dialects import postgresql

    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]

    def value(at: int, name: str) -> str:
        kind = table.c[name].type
        if name in json:
            return f"coalesce((e.v->>{at})::json, 'null'::json)"
        if isinstance(kind, String):
            return f"e.v->>{at}"
        return f"(e.v->>{at})::{kind.compile(dialect=dialect)}"

    values = ", ".join(value(at, name) for at, name in enumerate(fields))
    return (f"INSERT INTO {_quote(table.name)} ({', '.join(_quote(n) for n in fields)}) SELECT {values} "
            f"FROM json_array_elements(%s::json) AS e(v) ON CONFLICT ({_quote('id')}) DO NOTHING")


__all__ = ["SqlStore", "StoreUnavailable", "is_outage"]


class SqlStore:
    """A ``Store`` for a database URL, through ``_db.engine``; the schema is ensured once, on first write.

    Making one imports nothing heavy: SQLAlchemy, the driver and Alembic are loaded by the first write, in the thread
    that writes (the writer's), through ``shadow._lazy``.

    ``lock_timeout`` (seconds) bounds how long a write waits for a lock held by another connection (PostgreSQL:
    ``lock_timeout``, and ``statement_timeout`` at four times it)
    before the store reports itself unavailable; the default is the engine's busy timeout (30 s).
    """

    #: The writer hands this store a plain call's row (``CallRow``) rather than its ``CallRecord``: its values go
    #: to the insert as they are, JSON already text.
    takes_rows: Final = True

    def __init__(self, url: str, *, lock_timeout: float | None = None) -> None:
        self.url = light.normalise_url(url)
        backend = light.backend_of(self.url)
        if backend not in ("sqlite", "postgresql"):
            raise ValueError(
                f"the call log supports SQLite and PostgreSQL, not {backend!r}; use for example "
                "sqlite:///shadow.db or postgresql+psycopg://user@host:5432/dbname"
            )
        self.backend = backend
        self.lock_timeout = lock_timeout
        self._ensured = False
        self._inserts: tuple[_Insert, _Insert] | None = None

    def __repr__(self) -> str:
        return f"SqlStore({self.display_url!r})"

    @property
    def display_url(self) -> str:
        """The URL with any password hidden."""
        return light.safe_url(self.url)

    def prepare(self) -> tuple[_Insert, _Insert]:
        """SQLAlchemy, the driver and Alembic loaded (under the fork guard), and the two inserts built, once (the
        writer calls this before its first write; a write calls it too). No lock of its own (a fork may come at any
        time): two threads that prepare at once build the same inserts."""
        inserts = self._inserts
        if inserts is None:
            preload.load(*light.sql_modules(self.url))
            from shadow.calllog import _migrate as migrate
            from shadow.calllog._tables import calls, marks

            migrate.load_alembic()
            inserts = self._inserts = (_Insert(calls, CallRecord, self.backend),
                                       _Insert(marks, MarkRecord, self.backend))
        return inserts

    def _engine(self) -> Engine:
        self.prepare()
        from shadow.calllog import _db as db

        return db.engine(self.url)  # shared per URL; shadow.db drops a forked child's inherited connections

    def _ensure(self) -> None:
        if not self._ensured:
            from shadow.calllog import _migrate as migrate

            migrate.ensure(self.url)
            self._ensured = True

    def write(self, records: Sequence[Built]) -> None:
        """Insert ``records`` in one transaction, skipping ids already stored (``ON CONFLICT DO NOTHING``)."""
        if not records:
            return
        call_records: list[Built] = []
        mark_records: list[Built] = []
        for record in records:
            if isinstance(record, CallRecord | CallRow):
                call_records.append(record)
            elif isinstance(record, MarkRecord):
                mark_records.append(record)
            else:
                raise TypeError(f"not a call or mark record: {type(record).__name__}")
        calls, marks = self.prepare()
        statements = [statement for insert, kind in ((calls, call_records), (marks, mark_records)) if kind
                      for statement in insert.statements(kind)]
        try:
            engine = self._engine()
            self._ensure()
            with engine.begin() as conn:
                self._bound(conn)
                for sql, parameters in statements:
                    conn.exec_driver_sql(sql, parameters)
        except Exception as error:
            if not is_outage(error):
                raise
            # The schema may be gone with the database (a new file, a restored server): check it again next time;
            # and pooled connections may keep what caused the outage (a read-only session after a failover).
            self._ensured = False
            from shadow.calllog import _migrate as migrate

            migrate.forget(self.url)
            self._engine().dispose()
            raise StoreUnavailable(f"{self.display_url}: {type(error).__name__}: {_first_line(error)}") from error

    def _bound(self, conn: Connection) -> None:
        """Bound this transaction's waits: SQLite's busy timeout, PostgreSQL's statement and lock timeouts."""
        if self.lock_timeout is None:
            return
        ms = max(1, int(self.lock_timeout * 1000))
        if self.backend == "sqlite":
            conn.exec_driver_sql(f"PRAGMA busy_timeout={ms}")
        else:
            conn.exec_driver_sql(f"SET LOCAL statement_timeout = {ms * 4}")
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {ms}")

    def write_stats(self, row: dict[str, Any]) -> None:
        """Upsert one process's writer counters into ``writer_stats`` (keyed by process and host)."""
        try:
            engine = self._engine()
            self._ensure()
            names = list(row)
            mark = "?" if self.backend == "sqlite" else "%s"
            updates = ", ".join(f"{_quote(n)} = excluded.{_quote(n)}" for n in names if n not in ("process", "host"))
            from shadow.calllog._tables import writer_stats

            sql = (f"INSERT INTO {_quote(writer_stats.name)} ({', '.join(_quote(n) for n in names)}) "
                   f"VALUES ({', '.join(mark for _ in names)}) ON CONFLICT (process, host) DO UPDATE SET {updates}")
            values = tuple(self.prepare()[0].to_time(v) if isinstance(v, dt.datetime) else v for v in row.values())
            with engine.begin() as conn:
                self._bound(conn)
                conn.exec_driver_sql(sql, values)
        except Exception as error:
            if not is_outage(error):
                raise
            raise StoreUnavailable(f"{self.display_url}: {type(error).__name__}: {_first_line(error)}") from error


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""
