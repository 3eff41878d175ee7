"""SQLite without SQLAlchemy: URLs, and the flag read at start-up (inside the fork gate, ``_fork_gate``)."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Final

from shadow.calllog._fork_gate import gate

#: A plain SQLite file URL: no query string and no character SQLAlchemy's URL parser would decode or treat apart.
_PLAIN_SQLITE: Final = re.compile(r"(sqlite|sqlite\+pysqlite):///([A-Za-z0-9_./,=+~ -]+)")


def normalise_url(url: str) -> str:
    """``shadow.calllog._db.normalise_url``, without importing SQLAlchemy for a plain SQLite file URL."""
    found = _PLAIN_SQLITE.fullmatch(url)
    if found is not None and found.group(2) != ":memory:":
        return f"{found.group(1)}:///{os.path.abspath(found.group(2))}"
    from shadow.calllog._db import normalise_url as full

    return full(url)


def safe_url(url: str) -> str:
    """``url`` with any password hidden (a plain SQLite URL has none)."""
    if _PLAIN_SQLITE.fullmatch(url):
        return url
    from shadow.calllog._db import safe_url as full

    return full(url)


def preload(url: str) -> None:
    """``shadow.calllog._db.preload``: the dialect and driver imported now (sqlite3 already is)."""
    if _PLAIN_SQLITE.fullmatch(url):
        return
    from shadow.calllog._db import preload as full

    full(url)


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
