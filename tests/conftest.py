"""Shared fixtures: real SQLite files and real, throw-away PostgreSQL databases."""

from __future__ import annotations

import logging
import os
import tempfile
import uuid
from collections.abc import Iterator

import pytest
import structlog
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from shadow import _config as config
from shadow import _sessions as sessions

PG_ENV = "SHADOW_TEST_POSTGRES_URL"
# One fingerprint key for the suite and its subprocesses, so no test writes ~/.config/shadow/fingerprint.key.
os.environ.setdefault("SHADOW_FINGERPRINT_KEY", "shadow-test-suite-key")
# Last-known flag files of PostgreSQL flag databases go to the cache directory: a throw-away one, not ~/.cache.
os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="shadow-test-cache-"))


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("SHADOW_DB_URL", "SHADOW_WAREHOUSE", "SHADOW_SPOOL", "SHADOW_FLAG_TTL", "SHADOW_STRICT",
                "SHADOW_FLAGS"):
        monkeypatch.delenv(var, raising=False)
    config.reset()
    sessions._counters.clear()
    sessions.LATE.clear()
    sessions._late_flag.clear()
    yield
    config.reset()
    structlog.reset_defaults()  # capture_logs() leaves structlog "configured", which reroutes shadow's events
    _reset_shadow_logger()


def _reset_shadow_logger() -> None:
    """Undo ``_logs.setup_cli`` (an in-process ``shadow`` command): its handler, its level and ``propagate = False``
    would hide shadow's events from ``caplog`` in every later test of the same process."""
    logger = logging.getLogger("shadow")
    for handler in list(logger.handlers):
        if getattr(handler, "_shadow_cli", False):
            logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)
    logger.propagate = True


@pytest.fixture
def sqlite_url(tmp_path: os.PathLike[str]) -> str:
    """A URL for a new SQLite file in the test's temporary directory."""
    return f"sqlite:///{os.fspath(tmp_path)}/shadow.db"


def _pg_admin_url() -> str | None:
    url = os.environ.get(PG_ENV)
    if not url:
        if os.environ.get("CI"):
            raise RuntimeError(f"{PG_ENV} must be set in CI so that PostgreSQL tests never skip")
        return None
    return url


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL for a new, empty PostgreSQL database, dropped afterwards; skips without SHADOW_TEST_POSTGRES_URL."""
    admin = _pg_admin_url()
    if admin is None:
        pytest.skip(f"{PG_ENV} is not set")
    name = f"shadow_t_{uuid.uuid4().hex[:12]}"
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        from shadow.calllog import _db as db

        db.dispose_all()
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs on a SQLite file and on a throw-away PostgreSQL database."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))
