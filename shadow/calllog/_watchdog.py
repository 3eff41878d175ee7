"""The writer's watchdog: a record's build that hangs (user code: ``__str__``, ``items()``) costs that record only.

Building a record may run the application's code on the writer thread. The watchdog looks at the build in
progress a few times a second; one that has run past ``timeout`` seconds while its thread used almost no CPU
(sleeping, blocked on a lock or on I/O) is given up: the writer counts it as a failed build and starts a fresh
thread that carries on with the rest. A build that keeps working (a very large value) is left to finish.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def thread_cpu(thread: threading.Thread) -> float:
    """CPU seconds ``thread`` has used (0.0 where the platform cannot tell)."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident or 0))
    except (AttributeError, OSError, ValueError):
        return 0.0


def watch(timeout: float, building: Callable[[], float | None], thread: Callable[[], threading.Thread],
          give_up: Callable[[float], None], done: Callable[[], bool]) -> None:
    """Loop until ``done()``: call ``give_up(since)`` for a build started at ``since`` that hangs."""
    seen: tuple[float, float, float] | None = None  # (build start, when seen, the thread's CPU then)
    while not done():
        time.sleep(min(0.25, timeout / 4))
        since = building()
        if since is None:
            seen = None
            continue
        now = time.monotonic()
        if seen is None or seen[0] != since:
            seen = (since, now, thread_cpu(thread()))
        if now - since < timeout or now - seen[1] < timeout / 2:
            continue
        used = thread_cpu(thread())
        if used - seen[2] > 0.05 * (now - seen[1]):
            seen = (since, now, used)  # working, not hung: judge it again over the next window
            continue
        give_up(since)
        seen = None
