"""Engines for the call log: SQLite (WAL, busy timeout) by default, PostgreSQL through psycopg 3."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Final

from sqlalchemy import Engine, create_engine, event, pool
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from shadow.calllog._fork_gate import gate

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


#: The database backends the call log runs on (SQLAlchemy backend names).
SUPPORTED: Final = ("sqlite", "postgresql")
_EXAMPLES: Final = "sqlite:///shadow.db or postgresql://user@host:5432/dbname"


def normalise_url(url: str) -> str:
    """The canonical form of a call-log URL: ``postgres(ql)://`` as psycopg 3, a SQLite file by its absolute path.

    Raises ``ValueError`` (one line, naming the supported databases) for what is not a database URL or names a
    database shadow does not support.
    """
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ValueError(f"{url!r} is not a database URL; use for example {_EXAMPLES}") from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED:
        raise ValueError(f"the call log supports SQLite and PostgreSQL, not {backend!r}; use for example {_EXAMPLES}")
    if backend == "sqlite" and parsed.database not in (None, "", ":memory:") and "uri" not in parsed.query:
        absolute = os.path.abspath(parsed.database or "")
        if absolute != parsed.database:  # the same file by a relative or an absolute URL is the same call log
            url = parsed.set(database=absolute).render_as_string(hide_password=False)
    return url


#: The fork gate (``shadow.calllog._fork_gate``): every SQLite pool below, and the direct flag reads, go through it.
_gate: Final = gate


class _Gated(pool.Pool):
    """Getting a connection (connecting included) and returning it (closing included) inside the fork gate."""

    def _do_get(self) -> pool.ConnectionPoolEntry:
        _gate.enter()
        try:
            return super()._do_get()
        except BaseException:
            _gate.leave()
            raise

    def _do_return_conn(self, record: pool.ConnectionPoolEntry) -> None:
        try:
            super()._do_return_conn(record)
        finally:
            _gate.leave()


class _GatedQueuePool(_Gated, pool.QueuePool):
    """SQLAlchemy's pool for a SQLite file, with every use of a connection and every close of idle ones inside the
    fork gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _gate.add(self)

    def dispose(self) -> None:
        _gate.enter()
        try:
            super().dispose()
        finally:
            _gate.leave()


class _GatedNullPool(_Gated, pool.NullPool):
    """A connection per use (migrations), connecting and closing inside the fork gate."""


def _sqlite_pool(url: str, requested: type[pool.Pool] | None) -> type[pool.Pool] | None:
    """The gated pool class for a SQLite file (SQLAlchemy's default there is a ``QueuePool``); else ``requested``."""
    if requested is pool.NullPool:
        return _GatedNullPool
    database = make_url(url).database
    in_memory = database in (None, "", ":memory:") or "mode=memory" in url
    return _GatedQueuePool if requested is None and not in_memory else requested


def create(url: str, **kwargs: Any) -> Engine:
    """A new engine for ``url``, with SQLite set up for several writers (WAL, 30 s busy timeout)."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        poolclass = _sqlite_pool(url, kwargs.pop("poolclass", None))
        if poolclass is not None:
            kwargs["poolclass"] = poolclass
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    connect_args: dict[str, Any] = libpq_timeouts(url) if url.startswith("postgresql") else {}
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args, **kwargs)


def libpq_timeouts(url: str) -> dict[str, int]:
    """The libpq parameters that make an unreachable or vanished PostgreSQL host fail, not hang (``url``'s own win).

    Statement timeouts are the writer's (``SqlStore.write``); a sync's reads may take as long as they need.
    """
    return {key: value for key, value in (("connect_timeout", 5), ("keepalives", 1), ("keepalives_idle", 10),
                                          ("keepalives_interval", 5), ("keepalives_count", 3),
                                          ("tcp_user_timeout", 15000))
            if f"{key}=" not in url}


def preload(url: str) -> None:
    """Import the dialect and the driver of ``url`` now, in the calling thread (never raises).

    A child forked while a thread of its parent was importing a module waits for ever to import that module (the
    thread holding its import lock does not exist in the child). So the constructors of stores and flag sources call
    this, and their background threads find everything imported already.
    """
    with contextlib.suppress(Exception):
        make_url(normalise_url(url)).get_dialect().import_dbapi()


preload("sqlite://")  # the default store's, on import: before any thread of the application or of shadow's runs


def engine(url: str) -> Engine:
    """The shared engine for ``url`` in this process."""
    url = normalise_url(url)
    with _lock:
        found = _engines.get(url)
        if found is None:
            found = _engines[url] = create(url)
        return found


#: The pools a forked child inherited, kept so that their connections (the parent's) are never closed here: closing
#: one runs SQLite's close (a checkpoint attempt, its file locks) in the child.
_inherited: list[pool.Pool] = []


def _after_fork_in_child() -> None:
    """A forked child must not reuse its parent's connections (dropped from the pools without closing them), nor
    wait on a lock a thread of the parent held at ``fork``."""
    global _lock
    _lock = threading.Lock()
    for item in list(_engines.values()):
        _inherited.append(item.pool)
        item.dispose(close=False)


os.register_at_fork(after_in_child=_after_fork_in_child)


def dispose_all() -> None:
    """Close every shared engine (tests, and after fork)."""
    with _lock:
        for item in _engines.values():
            item.dispose()
        _engines.clear()


def safe_url(url: str) -> str:
    """``url`` with any password hidden, for logs and messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<invalid url>"
