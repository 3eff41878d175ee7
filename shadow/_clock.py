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


def parse_time(text: str, *, until: bool = False) -> dt.datetime:
    """A UTC time from ``YYYY-MM-DD`` or ISO 8601; a bare date as ``until`` means through the end of that day."""
    raw = text.strip()
    try:
        if len(raw) == 10:
            day = dt.date.fromisoformat(raw)
            start = dt.datetime(day.year, day.month, day.day)
            return start + dt.timedelta(days=1) if until else start
        parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date; use YYYY-MM-DD or an ISO 8601 time, for example 2025-03-14 "
                         "or 2025-03-14T09:30:00Z") from None
    if parsed.tzinfo is not None:
        return parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed
