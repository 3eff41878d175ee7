"""The start wait: a process's first calls wait (at most a bound) for the first flag read; what a source knows."""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Any

from shadow._config import settings
from shadow._logs import get_logger
from shadow.typing import FlagSource

log = get_logger("shadow.flags")

#: Per flag source: the monotonic time its start wait ends, shared by every call made meanwhile (by id for a source
#: that takes no weak reference); and the sources whose start wait passed without flags (warned once).
_deadlines: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
_by_id: dict[int, float] = {}
_warned: set[int] = set()
_lock = threading.Lock()


def _deadline(source: FlagSource, now: float) -> float:
    with _lock:
        try:
            return _deadlines.setdefault(source, now + settings().flag_start_wait)
        except TypeError:
            return _by_id.setdefault(id(source), now + settings().flag_start_wait)


def is_pending(source: FlagSource, tool: str) -> bool:
    """Whether ``source`` does not know ``tool``'s flag yet (a source without ``pending`` always knows)."""
    pending = getattr(source, "pending", None)
    return bool(pending(tool)) if callable(pending) else False


def wait_for(source: FlagSource, timeout: float | None = 5.0) -> bool:
    """Block until ``source`` has loaded its flags, if it loads them at all (``wait``); False on timeout."""
    waiter = getattr(source, "wait", None)
    return bool(waiter(timeout)) if callable(waiter) else True


def await_start(source: FlagSource, tool: str) -> bool:
    """Whether ``source`` knows ``tool``'s flag, after waiting for it if need be: every call of the process waits
    for the same deadline, ``flag_start_wait`` seconds after the first one asked (LaunchDarkly's ``start_wait``).

    Past the deadline nothing waits any more: a last-known file too old to start on is served if the source kept one
    (``serve_last_known``), else the call is served legacy; the first call that finds the flags still unknown logs
    one ``flags_start_wait_passed`` warning.
    """
    key = id(source)
    now = time.monotonic()
    left = _deadline(source, now) - now
    if left > 0:
        wait_for(source, left)
    if not is_pending(source, tool):
        return True
    fallback = getattr(source, "serve_last_known", None)
    served = bool(fallback()) if callable(fallback) else False
    if key not in _warned:
        _warned.add(key)
        log.warning("flags_start_wait_passed", tool=tool, waited_s=settings().flag_start_wait,
                    serving="the last-known flags until the flags are read" if served else
                    "legacy until the flags are read; these calls' records say flag_source='late'",
                    setting="SHADOW_FLAG_START_WAIT")
    return served or not is_pending(source, tool)


def origin(source: FlagSource, tool: str) -> str:
    """Where ``source`` had ``tool``'s flag from: ``database``, ``last_known``, ``env`` (``SHADOW_FLAGS``), or
    ``custom`` for a source that does not say (a test double, OpenFeature)."""
    found = getattr(source, "origin", None)
    return str(found(tool)) if callable(found) else "custom"


def logs_any(source: FlagSource) -> bool:
    """Whether some tool may be logged under ``source`` (False only when it knows every tool is legacy)."""
    found = getattr(source, "logs_any", None)
    return bool(found()) if callable(found) else True


def _after_fork_in_child() -> None:
    """A child's start wait is its own (a source it reloads waits again; one it inherited never waits)."""
    global _lock
    _lock = threading.Lock()
    _deadlines.clear()
    _by_id.clear()
    _warned.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
