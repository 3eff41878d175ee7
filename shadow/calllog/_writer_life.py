"""The writer thread's life: a build given up (hung or CPU-bound), the thread's unexpected end and its restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from shadow._redact import scrub_text
from shadow.calllog._watchdog import stop_thread


class Lifecycle:
    """What ``Writer`` does when a build hangs or its thread ends (the state is the writer's)."""

    build_timeout: float
    _gen_lock: threading.Lock
    _building_since: float | None
    _processed: int
    _generation: int
    _failed_builds: int
    _taking_popped: int
    _thread: threading.Thread
    _dead: bool
    _done: threading.Condition
    _fail: Callable[..., None]
    _count: Callable[..., None]
    _done_one: Callable[..., None]
    _start: Callable[[], threading.Thread]

    def _wait_for_exit(self, deadline: float, grace: float, most: float) -> None:
        """Join the thread until ``grace`` seconds past ``deadline``, and ``grace`` more each time it processed records
        meanwhile (it is still spooling), but no later than ``most`` seconds past ``deadline``."""
        end, cap, seen = deadline + grace, deadline + most, self._processed
        while (thread := self._thread).is_alive() and thread is not threading.current_thread():
            thread.join(max(0.0, min(end, cap) - time.monotonic()))
            now = time.monotonic()
            if now >= min(end, cap):
                if self._processed == seen or now >= cap:
                    return
                end, seen = now + grace, self._processed

    def _died(self, exc: BaseException) -> None:
        """The writer thread ends unexpectedly: count it; the next ``submit`` starts another (``_revive``)."""
        with self._gen_lock:
            if self._building_since is not None:  # it died building one: that record is lost
                self._building_since = None
                self._failed_builds += 1
                self._taking_popped -= 1
                self._count("writer_died")
                self._done_one(1)
            self._dead = True
        try:
            self._fail("writer.died", exc)
        finally:
            with self._done:
                self._done.notify_all()

    def _revive(self) -> None:
        """A submit found the writer thread dead: start another; it carries on with what the dead one held."""
        with self._gen_lock:
            if not self._dead:
                return
            self._dead = False
            self._generation += 1
            self._count("writer_restarted")
            self._thread = self._start()

    def _give_up_build(self, since: float, busy: bool) -> None:
        """The build that started at ``since`` hangs (or burns CPU past its bound, ``busy``): count it as failed,
        stop its thread as soon as it runs Python code again, and carry on in a fresh thread."""
        with self._gen_lock:
            if self._building_since != since:
                return
            self._generation += 1
            self._building_since = None
            self._failed_builds += 1
            self._count("build_cpu_bound" if busy else "build_timeout")
            self._taking_popped -= 1  # the hung item
            old = self._thread
            self._thread = self._start()
        stop_thread(old)
        self._done_one(1)
        what = "used its CPU bound" if busy else f"took over {self.build_timeout:g} s"
        self._fail("writer.build_timeout", TimeoutError(f"a record {what} to build (user code such as __str__); "
                                                        "it is given up"))


def error_text(exc: BaseException) -> str:
    """The driver's first line of ``exc`` (never SQLAlchemy's ``[SQL: ...] [parameters: ...]``), scrubbed."""
    try:
        text = str(getattr(exc, "orig", None) or exc).split("\n", 1)[0]
    except BaseException:  # an exception whose __str__ raises (even KeyboardInterrupt): its type says enough
        return f"<{type(exc).__name__}: unprintable>"
    return scrub_text(text.split("[SQL:", 1)[0].strip())[:300]
