"""The writer thread: a bounded queue, batched idempotent inserts, the spool as a disk buffer, bounded waits.

``submit`` is O(1) and never waits on the database: it appends to a bounded queue that a daemon thread drains in
batches (on size, on interval, on ``flush`` and at exit). A burst may hold ``burst_size`` more; past that the caller
appends the record to the spool (the disk is the buffer); only when the spool is full too is a record dropped.
Every store call is bounded (``BoundedStore``); a batch the store cannot take in time goes to the spool, the
writer probes the store with backoff (``Outage``) and replays the spool and the spools of dead processes
(``Replayer``) once it is back. A record's build (which may run user code: ``__str__``, ``items()``) is watched:
one that takes longer than ``build_timeout`` costs that record, and a fresh thread carries on with the rest.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence

from shadow import _hostile as hostile
from shadow._logs import get_logger
from shadow.calllog._bounded import BoundedStore
from shadow.calllog._intake import SPOOL_RETRY, Intake, RecordDropped
from shadow.calllog._outage import Outage
from shadow.calllog._records import Built, Record
from shadow.calllog._replay import ORPHAN_SCAN_INTERVAL, Replayer
from shadow.calllog._spool import Spool
from shadow.calllog._storing import Storer
from shadow.calllog._taking import Taking
from shadow.calllog._watchdog import watch
from shadow.calllog._writer_life import Lifecycle, error_text
from shadow.calllog._writer_stats import StatsPublisher, WriterStats
from shadow.typing import Deferred, Store

__all__ = ["ORPHAN_SCAN_INTERVAL", "RecordDropped", "Writer", "WriterStats"]

log = get_logger("shadow.writer")

ErrorHook = Callable[[str, BaseException], object]
#: Seconds of its exit a writer goes on replaying a dead process's spool (its progress kept for the next writer).
EXIT_ORPHAN_REPLAY = 1.0
#: Seconds ``close`` waits past its deadline while the writer spools what the store did not take in time; again
#: each time it made progress (a loaded machine builds records slowly), up to ``EXIT_GRACE_MAX`` in all.
EXIT_GRACE, EXIT_GRACE_MAX = 3.0, 30.0


class Writer(Intake, Taking, Lifecycle):
    """Moves records from callers to a ``Store`` off their path; see the module docstring.

    ``burst_size`` raw calls past ``queue_size`` wait in memory too before callers spool (none by default);
    ``retry_initial``/``retry_max`` bound the backoff (seconds) between probes of an unavailable store;
    ``store_timeout`` bounds one store call, ``build_timeout`` one record's build; ``stats_interval`` is how often
    the counters are copied into the store's ``writer_stats`` table (when the store has ``write_stats``);
    ``on_prepared`` runs in the writer's thread once the store's ``prepare`` (its modules loaded) is done.
    """

    def __init__(
        self, store: Store, *, queue_size: int, batch_size: int, flush_interval: float, spool: Spool | None,
        strict: bool = False, retry_initial: float = 0.5, retry_max: float = 30.0, store_timeout: float = 10.0,
        build_timeout: float = 2.0, stats_interval: float = 10.0, on_error: ErrorHook | None = None,
        burst_size: int = 0, on_prepared: Callable[[], object] | None = None,
    ) -> None:
        if queue_size < 1 or batch_size < 1 or flush_interval <= 0:
            raise ValueError(
                "queue_size and batch_size must be at least 1 and flush_interval above 0, "
                "for example queue_size=10000, batch_size=500, flush_interval=0.5"
            )
        self.store = store
        self.spool = spool
        self.queue_size = queue_size
        self.burst_size = max(0, burst_size)
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.strict = strict
        self.build_timeout = build_timeout
        self.on_error = on_error
        self._calls = BoundedStore(store_timeout)
        self._outage = Outage(retry_initial, retry_max)
        self._replay = Replayer(spool, batch_size)
        self._publisher = StatsPublisher(stats_interval)
        self._storer = Storer(store, self._calls, self._outage, spool, self._fail, on_prepared)
        self._queue: collections.deque[Record | Deferred] = collections.deque()
        self._submit_lock = threading.Lock()
        self._wake = threading.Event()
        self._done = threading.Condition()
        self._submitted = self._accepted = self._processed = self._written = self._spooled = self._overflowed = 0
        self._dropped_submit = self._dropped = self._failed_builds = self._logged_drops = 0
        self._errors: list[BaseException] = []
        self._reasons: dict[str, int] = {}  # why records were dropped or failed to build
        self._dead = False  # the writer thread ended unexpectedly: the next submit starts another
        self._held: tuple[list[Built], int] | None = None  # a batch neither the store nor the spool could take yet
        self._taking: list[Built] = []  # the batch being built (a replacement thread carries it on)
        self._taking_popped = self._generation = 0
        self._building_since: float | None = None
        self._gen_lock = threading.Lock()
        self._stopping = self._force_publish = self._closed = self._drain = False
        self._deadline = 0.0
        self._orphans_until = 0.0
        self._thread = self._start()
        watching = (build_timeout, lambda: self._building_since, lambda: self._thread, self._give_up_build,
                    lambda: self._closed and not self._thread.is_alive())
        threading.Thread(target=watch, args=watching, name="shadow-writer-watchdog", daemon=True).start()

    # -- callers' side (``submit`` and the overflow to the spool: ``Intake``) ---------------------------------------

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until everything submitted so far is stored (or spooled while the store is away).

        Records that overflowed to the spool while the store is up are replayed before this returns. False on
        timeout or when the writer thread is gone. In strict mode, raises the first failure the writer thread met.
        """
        if self._dead:
            self._revive()
        with self._submit_lock:
            target = self._accepted
        self._force_publish = True
        attempts = self._outage.attempts
        self._outage.probe_now()  # during an outage: try the store now rather than after the backoff
        self._drain = True  # a partial batch too, now
        self._wake.set()
        with self._done:
            reached = self._done.wait_for(lambda: self._flushed(target, attempts), timeout=timeout)
            reached = reached and self._processed >= target
        self._raise_if_strict()
        return reached

    def _flushed(self, target: int, attempts: int) -> bool:
        if self._dead or not self._thread.is_alive():
            return True
        if self._processed < target:
            return False
        if self._outage.down:
            return self._outage.attempts > attempts or self._spool_name() is None
        return not self._replay.pending(own=True) or self._stopping

    def close(self, timeout: float = 10.0) -> None:
        """Store or spool what is queued (within ``timeout``), then stop the thread and release the spool.

        During an outage the store is tried once more before giving up; records left in the spool are logged
        with its path (a later process of the same store replays them).
        """
        with self._submit_lock:
            if self._closed:
                return
            self._closed = True
            self._deadline = time.monotonic() + timeout
            self._orphans_until = time.monotonic() + min(EXIT_ORPHAN_REPLAY, timeout)
        self._stopping = True
        self._outage.probe_now()
        self._wake.set()
        self._wait_for_exit(self._deadline, EXIT_GRACE, EXIT_GRACE_MAX)  # past the deadline: spooled (builds first)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            with self._done:
                lost = self._accepted - self._processed
                self._processed = self._accepted  # counted here: what the thread does later is not
            if lost:
                self._drop(lost, "exit_deadline")
            counted = self._publisher.publish_from(self.store, self.stats, 2.0)  # the loss reaches writer_stats
            log.error("writer.close_timeout", queued=len(self._queue), timeout=timeout, lost=lost,
                      dropped_total=self.stats.dropped, counted=counted)
        self._raise_if_strict()

    @property
    def stats(self) -> WriterStats:
        """Counters so far."""
        return WriterStats(
            submitted=self._submitted, written=self._written, spooled=self._spooled + self._overflowed,
            replayed=self._replay.replayed, dropped=self._dropped + self._dropped_submit,
            failed_builds=self._failed_builds, rejected=self._storer.rejected,
            pending=max(0, self._accepted - self._processed),
            reasons=tuple(sorted({**hostile.counts(), **self._reasons}.items())),
        )

    def _count(self, reason: str, count: int = 1) -> None:
        self._reasons[reason] = self._reasons.get(reason, 0) + count

    def _drop(self, count: int, reason: str) -> None:
        """``count`` records are lost for ``reason``: counted before anything reads the counters."""
        self._dropped += count
        self._count(reason, count)

    def _raise_if_strict(self) -> None:
        if self.strict and self._errors:
            raise self._errors.pop(0)

    def _done_one(self, count: int = 1) -> None:
        with self._done:
            self._processed += count
            self._done.notify_all()

    # -- the writer thread ----------------------------------------------------------------------------------------

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(self._generation,), name="shadow-writer", daemon=True)
        thread.start()
        return thread

    def _current(self, generation: int) -> bool:
        return generation == self._generation

    def _run(self, generation: int) -> None:
        try:
            self._loop(generation)
        except BaseException as exc:  # whatever it was (a store's own BaseException, an async exception)
            if self._current(generation) and not self._closed:
                self._died(exc)

    def _loop(self, generation: int) -> None:
        while self._current(generation):
            woken = self._wake.wait(self._timeout())
            self._wake.clear()
            stopping = self._stopping
            # woken by a full batch: full batches only (a partial one waits for the next, or for the interval)
            drain, self._drain = not woken or self._drain or stopping, False
            try:
                self._step(stopping, generation, drain)
            except BaseException as exc:  # a bug in the machinery, a store's BaseException: keep the thread
                if not self._current(generation):
                    return  # given up while building (the watchdog stopped it): the new thread carries on
                self._fail("writer.error", exc)
            self._log_drops()
            force, self._force_publish = self._force_publish and not self._queue, False
            self._publish(force=stopping or force)
            with self._done:
                self._done.notify_all()
            if stopping and self._finished():
                break
        if not self._current(generation):
            return  # replaced after a build that hung; the new thread carries on
        try:
            self._shutdown()
        except BaseException as exc:
            self._fail("writer.error", exc)
        self._log_drops()
        with self._done:
            self._done.notify_all()

    def _timeout(self) -> float:
        if self._stopping:
            return 0.0
        if self._outage.down:
            return self._outage.wait_hint(self.flush_interval)
        return 0.0 if self._replay.pending() else self.flush_interval

    def _finished(self) -> bool:
        if self._queue or self._held is not None:
            return False
        past = time.monotonic() >= self._deadline
        return (self._outage.down and not self._outage.probe_due()) or not self._replay.pending(own=True) or past

    def _step(self, stopping: bool, generation: int, drain: bool) -> None:
        if self.spool is not None:
            self.spool.sync()
            if not stopping or time.monotonic() < self._orphans_until:  # a short script's exit gives them a second
                self._replay.claim_orphans()
        if self._taking_popped:  # a batch left by a replaced thread
            batch, popped = self._taking, self._taking_popped
            self._taking, self._taking_popped = [], 0
            self._place(batch, popped, stopping)
        if self._held is not None and not self._place(*self._held, stopping, held=True):
            return
        while self._queue and self._current(generation):
            if not drain and len(self._queue) < self.batch_size:
                break  # fewer, larger batches: a commit and a store call per call cost the application GIL time
            batch, popped = self._take(generation)
            if not self._current(generation):
                return
            self._place(batch, popped, stopping)
            if self._held is not None:
                return
        while self._replay.pending() and self._outage.probe_due():
            if self._stopping and time.monotonic() >= self._orphans_until:
                # past a second of exit, this process's own records only: a dead one's spool waits for a later
                # writer, which goes on where this replay stopped (a short script's exit is no spool's replay)
                self._replay.release_orphans()
                if not self._replay.pending():
                    break
            if stopping and time.monotonic() >= self._deadline:
                break
            spooled = self._replay.next_batch()
            if spooled is None:
                break
            stored = self._store(spooled, replay=True)
            if stored is None:
                break  # kept for the next probe
            self._replay.stored(stored)
            if len(self._queue) >= self.batch_size:
                self._wake.set()  # interleave: write the queue, then go on replaying
                break

    def _store(self, batch: Sequence[Built], *, replay: bool) -> int | None:
        """Store ``batch`` (``Storer``): how many records went in, or None while the store is away."""
        remaining = self._deadline - time.monotonic() if self._stopping else None
        stored = self._storer.store_batch(batch, remaining)
        if stored is None:
            return None
        if not replay:
            self._written += stored
        if stored or not batch:
            self._back()
        return stored

    def _back(self) -> None:
        if self._outage.succeeded(spooled=self.stats.spooled, replayed=self._replay.replayed):
            self._replay.scan_soon()  # look for the spools of processes that died during the outage
        if self.spool is not None and self.spool.has_active() and not self._replay.files:
            try:
                self._replay.set_aside()
            except OSError as exc:
                self._fail("writer.spool_failed", exc, spool=self._spool_name())

    def _place(self, batch: list[Built], popped: int, stopping: bool, *, held: bool = False) -> bool:
        """Store ``batch``, or spool it while the store is away; hold it when neither can take it."""
        self._held = None
        if not batch:
            self._done_one(popped)
            return True
        past = stopping and time.monotonic() >= self._deadline  # at exit, past the deadline: straight to the spool
        if not past and (self._outage.probe_due() or (held and stopping)) and self._store(batch, replay=False) \
                is not None:
            self._done_one(popped)
            return True
        if self._spill(batch):
            self._done_one(popped)
            return True
        if stopping:
            self._drop(len(batch), "closed_store_and_spool_unavailable")
            log.error("writer.drop", count=len(batch), reason="closed while the database and the spool are "
                      "unavailable", dropped_total=self.stats.dropped)
            self._done_one(popped)
            return True
        self._held = (batch, popped)
        return False

    def _spill(self, batch: list[Built]) -> bool:
        if self.spool is None or (not self._stopping and time.monotonic() < self._spool_down_until):
            return False  # failing a moment ago: the batch is held, tried again after SPOOL_RETRY (at exit, now)
        try:
            ok = self.spool.append(batch)
        except OSError as exc:
            first = time.monotonic() >= self._spool_down_until
            self._spool_down_until = time.monotonic() + SPOOL_RETRY
            if first:
                self._fail("writer.spool_failed", exc, spool=self._spool_name())
            return False
        if ok:
            self._spooled += len(batch)
        elif self._held is None:
            log.error("writer.spool_full", spool=self._spool_name(), max_bytes=self.spool.max_bytes)
        return ok

    def _log_drops(self) -> None:
        dropped = self._dropped_submit
        if dropped != self._logged_drops:
            log.error("writer.drop", count=dropped - self._logged_drops,
                      reason="queue and spool full" if not self._closed else "writer closed",
                      dropped_total=self.stats.dropped, queue_size=self.queue_size)
            self._logged_drops = dropped

    def _publish(self, *, force: bool) -> None:
        if not (self._outage.down and not force):
            self._publisher.publish(self.store, self._calls.run, self.stats, force=force, fail=self._fail)

    def _shutdown(self) -> None:
        self._publish(force=True)
        if self.spool is not None and self._replay.pending():
            pending = self.spool.active_bytes + sum(f.size for f in self._replay.files)  # set-aside files once
            log.error("writer.spool_left", spool=str(self.spool.directory), prefix=self.spool.prefix, bytes=pending,
                      hint="a later process of the same store replays it")
        self._replay.release_all()
        if self.spool is not None:
            self.spool.close()

    def _spool_name(self) -> str | None:
        return str(self.spool.active_path) if self.spool is not None else None

    def _fail(self, event: str, exc: BaseException, **fields: object) -> None:
        # No traceback and no statement text: a database error quotes every parameter of the rows it refused.
        log.error(event, error_type=type(exc).__name__, error=error_text(exc), **fields)
        if self.on_error is not None:
            try:
                self.on_error(event, exc)
            except BaseException as hook_error:
                if not hostile.swallowed(hook_error):
                    raise
                log.error("writer.on_internal_error_failed", error_type=type(hook_error).__name__)
        if self.strict:
            self._errors.append(exc)

    def _forget_in_child(self) -> None:
        """After ``fork`` in the child: this writer's thread does not exist here; let go of the parent's spool."""
        self._closed = True
        if self.spool is not None:
            self.spool.forget_in_child()
        self._replay.forget_in_child()
