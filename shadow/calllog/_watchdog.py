"""The writer's watchdog: a record's build that hangs (user code: ``__str__``, ``items()``) costs that record only.

Building a record may run the application's code on the writer thread. The watchdog looks at the build in
progress a few times a second. One that has run past ``timeout`` seconds while its thread used almost no CPU
(sleeping, blocked on a lock or on I/O), or that has used ``timeout`` CPU seconds (a loop in user code: walks over
values stop at ``_hostile.WALK_BUDGET`` items, so no honest value costs that much), is given up: the writer counts
it as a failed build, starts a fresh thread that carries on with the rest, and stops the old one with an
asynchronous exception, raised as soon as it runs Python code again (a call blocked in C returns first).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable

from shadow import _lazy


class BuildAbandoned(BaseException):
    """Raised into a writer thread whose build was given up, to end it."""


def thread_cpu(thread: threading.Thread) -> float:
    """CPU seconds ``thread`` has used (0.0 where the platform cannot tell)."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident or 0))
    except (AttributeError, OSError, ValueError):
        return 0.0


def stop_thread(thread: threading.Thread) -> None:
    """Raise ``BuildAbandoned`` in ``thread`` when it next runs Python code (CPython; elsewhere nothing)."""
    ident = thread.ident
    if ident is None or not thread.is_alive():
        return
    with contextlib.suppress(AttributeError, OSError, ImportError):
        _lazy.load("ctypes")  # here, not on import (about 2 ms); under the fork guard: this is the watchdog's thread
        ctypes = sys.modules["ctypes"]
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(BuildAbandoned))


def watch(timeout: float, building: Callable[[], float | None], thread: Callable[[], threading.Thread],
          give_up: Callable[[float, bool], None], done: Callable[[], bool]) -> None:
    """Loop until ``done()``: call ``give_up(since, busy)`` for a build started at ``since`` that hangs (``busy``:
    it used ``timeout`` CPU seconds)."""
    seen: tuple[float, float, float, float] | None = None  # (build start, when seen, CPU then, CPU when first seen)
    while not done():
        time.sleep(min(0.25, timeout / 4))
        since = building()
        if since is None:
            seen = None
            continue
        now = time.monotonic()
        if seen is None or seen[0] != since:
            cpu = thread_cpu(thread())
            seen = (since, now, cpu, cpu)
        if now - since < timeout or now - seen[1] < timeout / 2:
            continue
        used = thread_cpu(thread())
        if used - seen[3] >= timeout:
            give_up(since, True)
            seen = None
            continue
        if used - seen[2] > 0.05 * (now - seen[1]):
            seen = (since, now, used, seen[3])  # working, not hung: judge it again over the next window
            continue
        give_up(since, False)
        seen = None
