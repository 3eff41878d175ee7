"""The wall clock records are stamped with; replaceable so simulations (``shadow demo``) can run days in seconds."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_now_ns: Callable[[], int] = time.time_ns


def now_ns() -> int:
    """Nanoseconds since the Unix epoch."""
    return _now_ns()


def now() -> dt.datetime:
    """The current time, timezone-aware UTC, with microseconds."""
    return dt.datetime.fromtimestamp(_now_ns() / 1e9, dt.UTC)


def utc(value: dt.datetime) -> dt.datetime:
    """``value`` in UTC; a naive datetime (as SQLite gives back) is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


@contextmanager
def using(source: Callable[[], int]) -> Iterator[None]:
    """Stamp records with ``source()`` (nanoseconds) inside the block; only for simulations and tests."""
    global _now_ns
    previous, _now_ns = _now_ns, source
    try:
        yield
    finally:
        _now_ns = previous
