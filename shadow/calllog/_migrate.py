"""Schema migrations of the call log (Alembic), shipped inside the package, safe under concurrency."""

from __future__ import annotations

import importlib.resources
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, pool, text

from shadow._config import sqlite_path
from shadow.calllog import _db as db

#: Key of the PostgreSQL advisory lock that serialises concurrent upgrades ("SHADW" in ASCII).
_PG_LOCK_KEY: Final = 0x5348414457

_lock = threading.Lock()
_ensured: set[str] = set()


def migrations_dir() -> Path:
    """Where the Alembic environment lives: ``shadow/calllog/migrations``, package data in a checkout and a wheel."""
    return Path(str(importlib.resources.files("shadow.calllog") / "migrations"))


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for the shipped migrations; env.py takes ``url``/``connection`` from its attributes."""
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        cfg.attributes["url"] = db.normalise_url(url)
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    """The newest revision the shipped migrations know."""
    found = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if found is None:
        raise RuntimeError(f"no migration revisions under {migrations_dir()}")
    return found


def _current_on(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


@contextmanager
def _locked_connection(url: str) -> Iterator[Connection]:
    """A connection in a transaction that holds the database's migration lock until it commits."""
    engine = db.create(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                # A write lock taken up front: concurrent upgrades queue on SQLite's busy timeout.
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            elif conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
            yield conn
            conn.commit()
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> None:
    """Create or upgrade the database at ``url`` to ``revision``, holding the migration lock while doing so."""
    url = db.normalise_url(url)
    with _locked_connection(url) as conn:
        command.upgrade(alembic_config(url, conn), revision)


def current(url: str) -> str | None:
    """The revision the database at ``url`` is at, or None when it has none (empty or missing)."""
    url = db.normalise_url(url)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return None
    engine = db.create(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            return _current_on(conn)
    finally:
        engine.dispose()


def ensure(url: str) -> None:
    """Upgrade the database at ``url`` to head unless it is there; cached per URL per process, safe across processes."""
    url = db.normalise_url(url)
    if url in _ensured:
        return
    with _lock:
        if url in _ensured:
            return
        target = head()
        if current(url) != target:
            with _locked_connection(url) as conn:
                # Another process may have upgraded while this one waited for the lock.
                if _current_on(conn) != target:
                    command.upgrade(alembic_config(url, conn), "head")
        _ensured.add(url)


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def forget(url: str | None = None) -> None:
    """Drop the ``ensure`` cache for ``url`` (or all URLs), so the next call checks the database again."""
    with _lock:
        if url is None:
            _ensured.clear()
        else:
            _ensured.discard(db.normalise_url(url))
