"""The callers' side of the writer: ``submit`` queues a record in O(1), a burst waits in memory.

A burst past the queue waits in memory (``burst_size`` more), and only past that does the caller spool it."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Final

from shadow import _hostile as hostile
from shadow._logs import get_logger
from shadow.calllog._records import CallRecord, MarkRecord, Record
from shadow.calllog._spool import Spool
from shadow.calllog._writer_stats import WriterStats
from shadow.typing import Deferred

log = get_logger("shadow.writer")


class RecordDropped(RuntimeError):
    """Raised by ``Writer.submit`` in strict mode when a record is lost (queue and spool full, or closed)."""


#: Seconds callers leave a spool that failed alone: neither building records for it nor logging its failure again.
SPOOL_RETRY: Final = 5.0


class Intake:
    """What callers of a ``Writer`` run: never waits on the database, never raises (except in strict mode)."""

    #: Until when (``time.monotonic``) the spool is taken to be failing: callers drop (counted) without trying it.
    _spool_down_until: float = 0.0
    spool: Spool | None
    queue_size: int
    burst_size: int
    batch_size: int
    strict: bool
    _queue: collections.deque[Record | Deferred]
    _submit_lock: threading.Lock
    _wake: threading.Event
    _submitted: int
    _accepted: int
    _overflowed: int
    _dropped_submit: int
    _failed_builds: int
    _closed: bool
    _dead: bool
    _fail: Callable[..., None]
    _revive: Callable[[], None]
    _count: Callable[..., None]

    @property
    def stats(self) -> WriterStats:
        raise NotImplementedError

    def _spool_name(self) -> str | None:
        raise NotImplementedError

    def submit(self, item: Record | Deferred) -> None:
        """Queue ``item`` for writing; O(1), never waits on the database, never raises (except in strict mode).

        A burst past ``queue_size`` is queued too, up to ``burst_size`` more raw calls: the caller never builds or
        spools a record in a burst the writer catches up with. Past that the record is built here and appended to
        the spool (no fsync: the writer thread syncs it) instead of being lost.
        """
        if self._dead:  # the writer thread ended unexpectedly: a new one carries on (one attribute read per call)
            self._revive()
        try:
            with self._submit_lock:
                self._submitted += 1
                closed = self._closed
                accepted = not closed and len(self._queue) < self.queue_size + self.burst_size
                if accepted:
                    self._queue.append(item)
                    self._accepted += 1
                    queued = len(self._queue)
            if accepted:
                if queued >= self.batch_size and not self._wake.is_set():  # the thread takes the full batches queued
                    self._wake.set()
                return
            if not closed and self._overflow(item):
                return
            with self._submit_lock:
                self._dropped_submit += 1
            if closed:
                log.error("writer.drop", count=1, reason="writer closed", dropped_total=self.stats.dropped)
            else:
                self._wake.set()  # the writer thread logs queue-full drops, off the caller's path
            if self.strict:
                raise RecordDropped("the call log's queue and spool are full (or the writer is closed)")
        except RecordDropped:
            raise
        except Exception as exc:
            log.exception("writer.submit_failed", error_type=type(exc).__name__)
            if self.strict:
                raise

    def _overflow(self, item: Record | Deferred) -> bool:
        """The queue is full: build ``item`` here and append it to the spool; False when it cannot be kept."""
        if self.spool is None or getattr(item, "provisional", None) is not None:
            return False  # a call made before the flags loaded needs them resolved; it waits for the queue
        if time.monotonic() < self._spool_down_until:
            return False  # it failed a moment ago: no build, no write, no log line per call (counted as dropped)
        try:
            record = item if isinstance(item, CallRecord | MarkRecord) else item.build()
            if not isinstance(record, CallRecord | MarkRecord):
                raise TypeError(f"build() returned {type(record).__name__}, not a CallRecord or MarkRecord")
        except BaseException as exc:  # the tool's values raised; on the main thread Ctrl-C still propagates
            with self._submit_lock:
                self._failed_builds += 1
                self._count("build_raised" if isinstance(exc, Exception) else "build_interrupted")
            if not hostile.swallowed(exc):
                raise
            self._fail("writer.build_failed", exc, item=type(item).__name__)
            return True
        try:
            kept = self.spool.append([record], sync=False)
        except OSError as exc:
            first = time.monotonic() >= self._spool_down_until
            self._spool_down_until = time.monotonic() + SPOOL_RETRY
            if first:
                self._fail("writer.spool_failed", exc, spool=self._spool_name(),
                           hint=f"calls past the queue are dropped (counted) for {SPOOL_RETRY:g} s, then it is "
                                "tried again")
            return False
        if kept:
            with self._submit_lock:
                self._overflowed += 1
        return kept
