"""Fixtures for the framework integrations: flags in memory, call logs in memory and in a real SQLite file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadow.calllog._store import SqlStore
from shadow.testing import InMemoryFlags, InMemoryStore, recording


@pytest.fixture
def flags() -> InMemoryFlags:
    """Every tool in legacy mode until a test flips it."""
    return InMemoryFlags()


@pytest.fixture
def log() -> Iterator[InMemoryStore]:
    """The call records of the test, in memory."""
    with recording(InMemoryStore()) as store:
        assert isinstance(store, InMemoryStore)
        yield store


@pytest.fixture
def sql_log(tmp_path: Path) -> Iterator[str]:
    """A real SQLite call log; yields its URL."""
    url = f"sqlite:///{os.fspath(tmp_path)}/calls.db"
    with recording(SqlStore(url)):
        yield url
