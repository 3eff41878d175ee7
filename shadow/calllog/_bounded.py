"""Store calls with a deadline: a write that does not return in time is an outage, and the record is spooled.

A hung database (a stalled TCP connection, a lock held for minutes) must not stop the call log. ``BoundedStore``
runs each write in a helper thread and waits at most ``timeout`` seconds; a late write is reported as
``StoreUnavailable`` (the writer spools the batch), and while it still runs every later write is too. When it
finally returns its rows may be stored as well: inserts are idempotent by record id, so the replay adds nothing
twice.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from shadow.calllog._outage import ExitDeadline, StoreUnavailable


class _Job:
    __slots__ = ("call", "done", "error")

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.done = threading.Event()
        self.error: BaseException | None = None


class BoundedStore:
    """Run store calls in one helper thread, each bounded by ``timeout`` seconds."""

    def __init__(self, timeout: float, name: str = "shadow-store") -> None:
        self.timeout = timeout
        self.name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._late: _Job | None = None
        self._thread: threading.Thread | None = None

    def run(self, call: Callable[[], Any], timeout: float | None = None) -> None:
        """Run ``call`` (a store write) within the deadline; raises what it raises, or ``StoreUnavailable``."""
        late = self._late
        if late is not None:
            if not late.done.is_set():
                raise StoreUnavailable(f"a store call has been running for more than {self.timeout:g} s")
            self._late = None
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            self._thread.start()
        job = _Job(call)
        self._jobs.put(job)
        limit = max(0.0, self.timeout if timeout is None else min(timeout, self.timeout))  # past a deadline: 0
        if not job.done.wait(limit):
            self._late = job
            if timeout is not None and timeout < self.timeout:  # the exit's time left, not the store's slowness
                raise ExitDeadline(f"the exit deadline came before the store answered ({limit:.3g} s were left)")
            raise StoreUnavailable(f"the store did not answer within {limit:g} s")
        if job.error is not None:
            raise job.error

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job.call()
            except BaseException as exc:  # handed to the waiting thread
                job.error = exc
            finally:
                job.done.set()
