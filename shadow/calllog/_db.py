"""Engines for the call log: SQLite (WAL, busy timeout) by default, PostgreSQL through psycopg 3."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Final

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

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


class _ForkGate:
    """Keeps ``fork`` out of SQLite transactions.

    SQLite keeps its in-process lock state in library memory: a child forked while a thread of the parent held a
    connection mid-transaction inherits that lock, held by a connection it does not have, and its own writes then wait
    for a lock that is never released. ``fork`` waits (at most ``_FORK_WAIT`` seconds) until no SQLite connection is
    checked out, and none is checked out until it is done.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.busy = 0

    def enter(self, *_args: Any) -> None:
        with self.cond:
            self.busy += 1

    def leave(self, *_args: Any) -> None:
        with self.cond:
            self.busy = max(0, self.busy - 1)
            if not self.busy:
                self.cond.notify_all()

    def before_fork(self) -> None:
        self.cond.acquire()
        deadline = time.monotonic() + _FORK_WAIT
        while self.busy and (left := deadline - time.monotonic()) > 0:
            self.cond.wait(left)

    def after_fork_in_parent(self) -> None:
        self.cond.release()

    def after_fork_in_child(self) -> None:
        self.cond = threading.Condition()
        self.busy = 0


_FORK_WAIT: Final = 5.0
_gate = _ForkGate()
os.register_at_fork(before=_gate.before_fork, after_in_parent=_gate.after_fork_in_parent,
                    after_in_child=_gate.after_fork_in_child)


def create(url: str, **kwargs: Any) -> Engine:
    """A new engine for ``url``, with SQLite set up for several writers (WAL, 30 s busy timeout)."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        event.listen(engine, "checkout", _gate.enter)
        event.listen(engine, "checkin", _gate.leave)
        return engine
    connect_args: dict[str, Any] = {}
    if url.startswith("postgresql"):
        # An unreachable or vanished host must fail, not hang the writer (statement timeouts: SqlStore.write).
        for key, value in (("connect_timeout", 5), ("keepalives", 1), ("keepalives_idle", 10),
                           ("keepalives_interval", 5), ("keepalives_count", 3), ("tcp_user_timeout", 15000)):
            if f"{key}=" not in url:
                connect_args[key] = value
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args, **kwargs)


def engine(url: str) -> Engine:
    """The shared engine for ``url`` in this process."""
    url = normalise_url(url)
    with _lock:
        found = _engines.get(url)
        if found is None:
            found = _engines[url] = create(url)
        return found


def _after_fork_in_child() -> None:
    """A forked child must not reuse its parent's connections (dropped from the pools without closing them), nor
    wait on a lock a thread of the parent held at ``fork``."""
    global _lock
    _lock = threading.Lock()
    for item in list(_engines.values()):
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
