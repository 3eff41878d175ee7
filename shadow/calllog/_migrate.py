"""Schema migrations of the call log (Alembic), shipped inside the package, safe under concurrency."""

from __future__ import annotations

import importlib.resources
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sqlalchemy import Connection, pool, text

from shadow import _lazy as preload
from shadow._config import sqlite_path
from shadow.calllog import _db as db

if TYPE_CHECKING:
    from alembic.config import Config

#: Key of the PostgreSQL advisory lock that serialises concurrent upgrades ("SHADW" in ASCII).
_PG_LOCK_KEY: Final = 0x5348414457

_lock = threading.Lock()
_ensured: set[str] = set()
#: Alembic's logger level while shadow migrates: its INFO lines (a plugin set up, a context, each revision run)
#: are not the host's business; warnings and errors still reach the host's handlers.
_QUIET_LEVEL: Final = logging.WARNING
_quiet_lock = threading.Lock()
_quiet_depth = 0
_quiet_saved = logging.NOTSET
#: The parts of Alembic the migrations run (``ensure``, ``head``, ``current``, ``upgrade``).
ALEMBIC: Final = ("alembic", "alembic.config", "alembic.script", "alembic.runtime.migration", "alembic.command",
                  "alembic.autogenerate", "alembic.operations", "alembic.ddl")


@contextmanager
def _quiet() -> Iterator[None]:
    """Alembic's loggers at WARNING for the time shadow imports or runs it (nested and concurrent uses counted)."""
    global _quiet_depth, _quiet_saved
    logger = logging.getLogger("alembic")
    with _quiet_lock:
        if _quiet_depth == 0:
            _quiet_saved = logger.level
            if logger.getEffectiveLevel() < _QUIET_LEVEL:
                logger.setLevel(_QUIET_LEVEL)
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0 and logger.level == _QUIET_LEVEL:
                logger.setLevel(_quiet_saved)


def load_alembic() -> None:
    """Import ``ALEMBIC`` now, quietly, under the fork guard (``shadow._lazy``): a background thread that will
    migrate calls this first, so that nothing is left to import while the application may fork."""
    with _quiet():
        preload.load(*ALEMBIC)


def migrations_dir() -> Path:
    """Where the Alembic environment lives: ``shadow/calllog/migrations``, package data in a checkout and a wheel."""
    return Path(str(importlib.resources.files("shadow.calllog") / "migrations"))


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for the shipped migrations; env.py takes ``url``/``connection`` from its attributes."""
    with _quiet():  # the first import of alembic sets up its plugins, with an INFO line each
        from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        cfg.attributes["url"] = db.normalise_url(url)
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    """The newest revision the shipped migrations know."""
    with _quiet():
        from alembic.script import ScriptDirectory

        found = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if found is None:
        raise RuntimeError(f"no migration revisions under {migrations_dir()}")
    return found


def _current_on(connection: Connection) -> str | None:
    with _quiet():
        from alembic.runtime.migration import MigrationContext

        return MigrationContext.configure(connection).get_current_revision()


def _upgrade_on(url: str, connection: Connection, revision: str) -> None:
    with _quiet():
        from alembic import command

        command.upgrade(alembic_config(url, connection), revision)


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
        _upgrade_on(url, conn, revision)


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
                    _upgrade_on(url, conn, "head")
        _ensured.add(url)


def _after_fork_in_child() -> None:
    global _lock, _quiet_lock, _quiet_depth
    _lock = threading.Lock()
    _quiet_lock = threading.Lock()
    if _quiet_depth:  # forked while another thread migrated: that thread does not run here to restore the level
        _quiet_depth = 0
        logging.getLogger("alembic").setLevel(_quiet_saved)


os.register_at_fork(after_in_child=_after_fork_in_child)


def forget(url: str | None = None) -> None:
    """Drop the ``ensure`` cache for ``url`` (or all URLs), so the next call checks the database again."""
    with _lock:
        if url is None:
            _ensured.clear()
        else:
            _ensured.discard(db.normalise_url(url))
