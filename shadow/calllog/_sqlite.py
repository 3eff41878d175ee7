"""The call log without SQLAlchemy: plain URLs, the flag read at start-up (inside the fork gate, ``_fork_gate``)."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Final

from shadow.calllog._fork_gate import gate

#: A plain SQLite file URL: no query string and no character SQLAlchemy's URL parser would decode or treat apart.
_PLAIN_SQLITE: Final = re.compile(r"(sqlite|sqlite\+pysqlite):///([A-Za-z0-9_./,=+~ -]+)")
#: A plain PostgreSQL URL (user, password, host, port, database; no query string, nothing percent-encoded): one that
#: SQLAlchemy's URL parser reads and renders back unchanged.
_PLAIN_POSTGRES: Final = re.compile(r"(?:postgres|postgresql|postgresql\+psycopg)://((?:[A-Za-z0-9_.~-]+"
                                    r"(:[A-Za-z0-9_.~-]+)?@)?[A-Za-z0-9_.-]+(?::[0-9]{1,5})?/[A-Za-z0-9_.-]+)")


def normalise_url(url: str) -> str:
    """``shadow.calllog._db.normalise_url``, without importing SQLAlchemy for a plain SQLite file or PostgreSQL URL."""
    found = _PLAIN_SQLITE.fullmatch(url)
    if found is not None and found.group(2) != ":memory:":
        return f"{found.group(1)}:///{os.path.abspath(found.group(2))}"
    found = _PLAIN_POSTGRES.fullmatch(url)
    if found is not None:
        return f"postgresql+psycopg://{found.group(1)}"
    from shadow.calllog._db import normalise_url as full

    return full(url)


def safe_url(url: str) -> str:
    """``url`` with any password hidden (a plain SQLite URL has none)."""
    if _PLAIN_SQLITE.fullmatch(url):
        return url
    found = _PLAIN_POSTGRES.fullmatch(url)
    if found is not None:
        return url if found.group(2) is None else url[:found.start(2)] + ":***" + url[found.end(2):]
    from shadow.calllog._db import safe_url as full

    return full(url)


def backend_of(url: str) -> str:
    """The database backend of a normalised URL (``sqlite``, ``postgresql``), read without SQLAlchemy."""
    return url.split(":", 1)[0].split("+", 1)[0]


#: What the call log's SQL side imports, in order: SQLAlchemy, the engines (and SQLite's dialect), the schema and the
#: migrations (which load the parts of Alembic they run: ``_migrate.load_alembic``). Loaded together by the thread
#: that first needs them (``shadow._lazy``), so nothing is left to import while the application may fork.
_SQL_MODULES: Final = ("sqlalchemy", "shadow.calllog._db", "shadow.calllog._tables", "shadow.calllog._migrate")


def sql_modules(url: str) -> tuple[str, ...]:
    """The modules a ``SqlStore`` or a flag source of ``url`` needs: ``_SQL_MODULES`` and the database's driver
    (Alembic's are ``_migrate.load_alembic``'s)."""
    if backend_of(url) != "postgresql":
        return _SQL_MODULES
    driver = url.split(":", 1)[0].partition("+")[2] or "psycopg2"
    return (*_SQL_MODULES, f"sqlalchemy.dialects.postgresql.{driver}", driver)


def read_sqlite(path: Path) -> list[tuple[Any, ...]]:
    """The ``flags`` rows (tool, mode, percent) of an existing SQLite call log, read through ``sqlite3`` alone.

    The file is opened without creating it (``mode=rw``) and read in one short transaction inside the fork gate; a
    call log made before the flags table existed has no flags (all legacy). Raises ``sqlite3.Error`` when the file
    cannot be read (the caller keeps the flags it had).
    """
    gate.enter()
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=30,
                               check_same_thread=False)
        try:
            return conn.execute("SELECT tool, mode, percent FROM flags").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
        finally:
            conn.close()
    finally:
        gate.leave()
