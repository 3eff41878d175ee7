"""Test helpers for users' own tools, and in-memory doubles of shadow's flag source and store."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from shadow._redact import find_leaks
from shadow.calllog._records import Record
from shadow.contract._schema import validate
from shadow.flags._db import LEGACY, FlagState, Mode
from shadow.typing import Store


class InMemoryFlags:
    """A flag source held in memory: ``InMemoryFlags({"search": "shadow"})``; ``set`` flips a tool at once."""

    def __init__(self, modes: Mapping[str, str | FlagState] | None = None) -> None:
        self.states: dict[str, FlagState] = {}
        self.killed = False
        for tool, mode in (modes or {}).items():
            self.states[tool] = mode if isinstance(mode, FlagState) else FlagState(Mode(mode))

    def set(self, tool: str, mode: str | Mode, percent: int = 100) -> None:
        """Flip ``tool`` to ``mode`` (and ``percent`` in cutover)."""
        self.states[tool] = FlagState(Mode(mode), percent)

    def state(self, tool: str) -> FlagState:
        """The flag of ``tool``; legacy when unknown or killed."""
        if self.killed:
            return LEGACY
        return self.states.get(tool, LEGACY)


def assert_valid_payload(payload: object) -> None:
    """Fail with the reason when ``payload`` is not one of the two contract shapes."""
    try:
        validate(payload)
    except ValueError as exc:
        raise AssertionError(f"invalid tool payload: {exc}") from None


def assert_no_leak(payload: object, secrets: Iterable[str] = ()) -> None:
    """Fail when ``payload`` holds a traceback, a file path, ``site-packages`` or one of ``secrets``."""
    leaks = find_leaks(payload, secrets)
    if leaks:
        raise AssertionError(f"payload leaks {leaks!r}")


class InMemoryStore:
    """A ``shadow.typing.Store`` that keeps records in memory, idempotent by id; set ``available = False`` to make
    every write raise ``StoreUnavailable`` (an outage), and ``refuse`` to ids it must reject (bad rows)."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.available = True
        self.refuse: set[str] = set()
        self.writes = 0  # write calls that stored something
        self.attempts = 0  # every write call
        self._lock = threading.Lock()

    def write(self, records: Iterable[Record]) -> None:
        """Store ``records``, skipping ids stored already; raise ``StoreUnavailable`` while not ``available``."""
        from shadow.calllog._store import StoreUnavailable

        with self._lock:
            self.attempts += 1
            if not self.available:
                raise StoreUnavailable("in-memory store switched off")
            records = list(records)
            bad = [r.id for r in records if r.id in self.refuse]
            if bad:
                raise ValueError(f"refused record ids {bad}")
            for record in records:
                self.records.setdefault(record.id, record)
            self.writes += 1

    @property
    def ids(self) -> set[str]:
        """Ids of the stored records."""
        with self._lock:
            return set(self.records)



@contextmanager
def recording(store: Store | None = None, *, strict: bool = True) -> Iterator[Store]:
    """Send every call record of the block to ``store`` (a new ``InMemoryStore`` by default), then flush.

    ``with recording() as store: my_tool(...)`` and the records are in ``store.records``; with a
    ``shadow.calllog.SqlStore`` they are in that database. Strict by default: a failure in the shadow machinery
    raises instead of being logged and swallowed.
    """
    from shadow.calllog._writer import Writer, set_writer

    target: Store = store if store is not None else InMemoryStore()
    writer = Writer(target, queue_size=100_000, batch_size=100, flush_interval=0.02, spool=None, strict=strict)
    set_writer(writer)
    try:
        yield target
        if not writer.flush(60):
            raise AssertionError("the call log writer did not finish within 60 s")
    finally:
        writer.close()
        set_writer(None)
