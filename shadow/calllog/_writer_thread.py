"""The writer thread: a bounded queue, batched idempotent inserts, a spool while the database is away.

``submit`` is O(1) and never blocks: it appends to a bounded queue that a daemon thread drains in batches (on size,
on interval, on ``flush`` and at exit). A batch the store cannot take (``StoreUnavailable``) goes to the spool; the
writer probes the store with backoff and replays the spool, and the spools of dead processes, once it is back.
Records are dropped only when queue and spool are both full, and every drop is counted and logged.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from shadow._logs import get_logger
from shadow._redact import scrub_text
from shadow.calllog._records import CallRecord, MarkRecord, Record
from shadow.calllog._spool import Spool, SpoolFile
from shadow.calllog._store import StoreUnavailable
from shadow.typing import Deferred, Store

log = get_logger("shadow.writer")

#: Seconds between looks for spool files left by dead processes.
ORPHAN_SCAN_INTERVAL: Final = 60.0


class RecordDropped(RuntimeError):
    """Raised by ``Writer.submit`` in strict mode when the queue is full (outside strict mode it only counts)."""


@dataclass(frozen=True, slots=True)
class WriterStats:
    """What a writer has done with what it was given.

    ``submitted`` counts every ``submit`` call; each item ends up ``written`` (stored directly), ``spooled`` (kept in
    the local spool; ``replayed`` counts spooled records stored later, including those of dead processes),
    ``dropped`` (queue and spool full, closed writer, or refused by the store), or in ``failed_builds``.
    """

    submitted: int
    written: int
    spooled: int
    replayed: int
    dropped: int
    failed_builds: int


class Writer:
    """Moves records from callers to a ``Store`` off their path; see the module docstring.

    ``retry_initial``/``retry_max`` bound the backoff (seconds) between probes of an unavailable store.
    """

    def __init__(
        self,
        store: Store,
        *,
        queue_size: int,
        batch_size: int,
        flush_interval: float,
        spool: Spool | None,
        strict: bool = False,
        retry_initial: float = 0.5,
        retry_max: float = 30.0,
    ) -> None:
        if queue_size < 1 or batch_size < 1 or flush_interval <= 0:
            raise ValueError(
                "queue_size and batch_size must be at least 1 and flush_interval above 0, "
                "for example queue_size=10000, batch_size=500, flush_interval=0.5"
            )
        self.store = store
        self.spool = spool
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.strict = strict
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self._queue: collections.deque[Record | Deferred] = collections.deque()
        self._submit_lock = threading.Lock()
        self._wake = threading.Event()
        self._done = threading.Condition()
        self._submitted = 0
        self._accepted = 0  # items that entered the queue
        self._processed = 0  # queued items handled, in queue order (written, spooled, dropped or failed)
        self._written = 0
        self._spooled = 0
        self._replayed = 0
        self._dropped_submit = 0  # counted by callers; logged by the writer thread
        self._dropped = 0
        self._failed_builds = 0
        self._logged_drops = 0
        self._errors: list[BaseException] = []
        self._held: list[Record] | None = None  # a batch neither the store nor the spool could take yet
        self._held_popped = 0
        self._down = False
        self._delay = retry_initial
        self._next_probe = 0.0
        self._replays: collections.deque[SpoolFile] = collections.deque()
        self._replay_iter: Iterator[list[Record]] | None = None
        self._replay_batch: list[Record] | None = None
        self._next_orphan_scan = 0.0
        self._stopping = False
        self._deadline = 0.0
        self._closed = False
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="shadow-writer", daemon=True)
        self._thread.start()

    # -- callers' side --------------------------------------------------------------------------------------------

    def submit(self, item: Record | Deferred) -> None:
        """Queue ``item`` for writing; O(1), never blocks, never raises (except in strict mode)."""
        try:
            with self._submit_lock:
                self._submitted += 1
                accepted = not self._closed and len(self._queue) < self.queue_size
                if accepted:
                    self._queue.append(item)
                    self._accepted += 1
                    queued = len(self._queue)
                else:
                    self._dropped_submit += 1
            if accepted:
                if queued >= self.batch_size:
                    self._wake.set()
                return
            if self._closed:
                log.error("writer.drop", count=1, reason="writer closed", dropped_total=self.stats.dropped)
            else:
                self._wake.set()  # the writer thread logs queue-full drops, off the caller's path
            if self.strict:
                raise RecordDropped("the call log's queue is full (or the writer is closed); the record is lost")
        except RecordDropped:
            raise
        except Exception as exc:
            log.exception("writer.submit_failed", error_type=type(exc).__name__)
            if self.strict:
                raise

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until everything submitted so far is handled; False on timeout (or when the writer thread is gone).

        Handled means written or spooled, or lost and counted in ``stats`` (``dropped``, ``failed_builds``) and
        logged. In strict mode, raises the first failure the writer thread met (a ``Deferred`` that raised,
        refused records).
        """
        with self._submit_lock:
            target = self._accepted
        self._wake.set()
        with self._done:
            reached = self._done.wait_for(
                lambda: self._processed >= target or not self._thread.is_alive(), timeout=timeout
            )
            reached = reached and self._processed >= target
        self._raise_if_strict()
        return reached

    def close(self, timeout: float = 10.0) -> None:
        """Write or spool what is queued (within ``timeout``), then stop the thread and release the spool."""
        with self._submit_lock:
            if self._closed:
                return
            self._closed = True
            self._deadline = time.monotonic() + timeout
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._thread.is_alive():
            log.error("writer.close_timeout", queued=len(self._queue), timeout=timeout)
        self._raise_if_strict()

    @property
    def stats(self) -> WriterStats:
        """Counters so far."""
        return WriterStats(
            submitted=self._submitted,
            written=self._written,
            spooled=self._spooled,
            replayed=self._replayed,
            dropped=self._dropped + self._dropped_submit,
            failed_builds=self._failed_builds,
        )

    def _raise_if_strict(self) -> None:
        if self.strict and self._errors:
            error = self._errors.pop(0)
            raise error

    def _done_one(self, count: int = 1) -> None:
        with self._done:
            self._processed += count
            self._done.notify_all()

    # -- the writer thread ----------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self._timeout())
            self._wake.clear()
            stopping = self._stopping
            try:
                self._step(stopping)
            except Exception as exc:  # a bug in the machinery: log it, keep the thread alive
                self._fail("writer.error", exc)
            self._log_drops()
            if stopping and self._finished():
                break
        try:
            self._shutdown()
        except Exception as exc:
            self._fail("writer.error", exc)
        self._log_drops()
        with self._done:
            self._done.notify_all()

    def _timeout(self) -> float:
        if self._stopping:
            return 0.0
        now = time.monotonic()
        if self._replay_pending() and not self._down:
            return 0.0
        if self._down and (self._held is not None or self._replay_pending()):
            return max(0.0, min(self.flush_interval, self._next_probe - now))
        return self.flush_interval

    def _finished(self) -> bool:
        if self._queue or self._held is not None:
            return False
        return self._down or not self._replay_pending() or time.monotonic() >= self._deadline

    def _replay_pending(self) -> bool:
        """Whether spooled records wait to be stored: a file set aside or claimed, or the active spool file."""
        if self._replay_batch is not None or self._replay_iter is not None or self._replays:
            return True
        return self.spool is not None and self.spool.has_active()

    def _step(self, stopping: bool) -> None:
        now = time.monotonic()
        if self.spool is not None and now >= self._next_orphan_scan and not stopping:
            self._next_orphan_scan = now + ORPHAN_SCAN_INTERVAL
            self._claim_orphans()
        if self._held is not None and not self._place_held(stopping):
            return
        while self._queue:
            batch, popped = self._take()
            if batch:
                self._place(batch, popped, stopping)
            elif popped:
                self._done_one(popped)
            if self._held is not None:
                return
        while self._replay_pending() and self._probe_due() and not (stopping and time.monotonic() >= self._deadline):
            if not self._replay_one():
                break
            if len(self._queue) >= self.batch_size:
                self._wake.set()  # interleave: write the queue, then go on replaying
                break

    def _take(self) -> tuple[list[Record], int]:
        """Pop up to one batch from the queue, building deferred items; returns the records and how many popped."""
        batch: list[Record] = []
        popped = 0
        while popped < self.batch_size:
            try:
                item = self._queue.popleft()
            except IndexError:
                break
            popped += 1
            if isinstance(item, CallRecord | MarkRecord):
                batch.append(item)
                continue
            try:
                built = item.build()
                if not isinstance(built, CallRecord | MarkRecord):
                    raise TypeError(f"build() returned {type(built).__name__}, not a CallRecord or MarkRecord")
            except Exception as exc:
                self._failed_builds += 1
                self._fail("writer.build_failed", exc, item=type(item).__name__)
                continue
            batch.append(built)
        return batch, popped

    def _probe_due(self) -> bool:
        return not self._down or time.monotonic() >= self._next_probe

    def _went_down(self, error: StoreUnavailable) -> None:
        now = time.monotonic()
        if not self._down:
            log.warning("writer.store_unavailable", error=str(error), spool=self._spool_name())
            self._delay = self.retry_initial
        else:
            self._delay = min(self._delay * 2, self.retry_max)
        self._down = True
        self._next_probe = now + self._delay

    def _came_back(self) -> None:
        if self._down:
            log.info("writer.store_back", spooled=self._spooled, replayed=self._replayed)
            self._next_orphan_scan = 0.0  # look for the spools of processes that died during the outage
        self._down = False
        self._delay = self.retry_initial
        self._set_aside()

    def _set_aside(self) -> None:
        """Queue the active spool file for replay; later spills go to a new file."""
        if self.spool is not None:
            try:
                held = self.spool.set_aside()
            except OSError as exc:
                self._fail("writer.spool_failed", exc, spool=self._spool_name())
                return
            if held is not None:
                self._replays.append(held)

    def _write(self, batch: list[Record]) -> bool:
        """Write ``batch`` to the store; True when stored (or refused and counted), False when it is unavailable."""
        try:
            self.store.write(batch)
        except StoreUnavailable as error:
            self._went_down(error)
            return False
        except Exception as exc:
            self._refused(batch, exc)
            return True
        self._written += len(batch)
        self._came_back()
        return True

    def _refused(self, batch: list[Record], exc: Exception, *, replay: bool = False) -> None:
        """The store refused ``batch`` for what is in it: store the records one by one, drop those it refuses."""
        stored = 0
        if len(batch) > 1:
            for record in batch:
                try:
                    self.store.write([record])
                except StoreUnavailable:
                    continue  # counted below as lost: one bad batch must not loop on an outage
                except Exception:
                    continue
                stored += 1
        if replay:
            self._replayed += stored
        else:
            self._written += stored
        lost = len(batch) - stored
        if lost:
            self._dropped += lost
            self._fail("writer.records_refused", exc, count=lost)

    def _place(self, batch: list[Record], popped: int, stopping: bool) -> None:
        """Store ``batch``, or spool it while the store is away; hold it when neither can take it."""
        if self._probe_due() and self._write(batch):
            self._done_one(popped)
            return
        if self._spill(batch):
            self._done_one(popped)
            return
        if stopping:
            self._drop(batch, popped, "queue closed while the database and the spool are unavailable")
            return
        self._held = batch
        self._held_popped = popped

    def _place_held(self, stopping: bool) -> bool:
        batch = self._held
        assert batch is not None
        popped = self._held_popped
        if ((self._probe_due() or stopping) and self._write(batch)) or self._spill(batch):
            self._held = None
            self._done_one(popped)
            return True
        if stopping:
            self._held = None
            self._drop(batch, popped, "queue closed while the database and the spool are unavailable")
            return True
        return False

    def _spill(self, batch: list[Record]) -> bool:
        if self.spool is None:
            return False
        try:
            ok = self.spool.append(batch)
        except OSError as exc:
            self._fail("writer.spool_failed", exc, spool=self._spool_name())
            return False
        if ok:
            self._spooled += len(batch)
        elif self._held is None:
            log.error("writer.spool_full", spool=self._spool_name(), max_bytes=self.spool.max_bytes)
        return ok

    def _drop(self, batch: list[Record], popped: int, reason: str) -> None:
        self._dropped += len(batch)
        log.error("writer.drop", count=len(batch), reason=reason, dropped_total=self.stats.dropped)
        self._done_one(popped)

    def _log_drops(self) -> None:
        dropped = self._dropped_submit
        if dropped != self._logged_drops:
            log.error(
                "writer.drop",
                count=dropped - self._logged_drops,
                reason="queue full" if not self._closed else "writer closed",
                dropped_total=self.stats.dropped,
                queue_size=self.queue_size,
            )
            self._logged_drops = dropped

    # -- replay ---------------------------------------------------------------------------------------------------

    def _claim_orphans(self) -> None:
        assert self.spool is not None
        try:
            orphans = self.spool.claim_orphans()
        except Exception as exc:
            self._fail("writer.orphan_scan_failed", exc)
            return
        for orphan in orphans:
            log.info("writer.orphan_found", spool=str(orphan.path), bytes=orphan.size)
            self._replays.append(orphan)

    def _replay_one(self) -> bool:
        """Store one batch of spooled records; False when the store is unavailable (the batch is kept)."""
        if self._replay_batch is None:
            if self._replay_iter is None:
                if not self._replays:
                    self._set_aside()
                if not self._replays:
                    return False  # nothing could be set aside: try again on a later round
                self._replay_iter = self._replays[0].batches(self.batch_size)
            try:
                self._replay_batch = next(self._replay_iter)
            except StopIteration:
                self._finish_replay()
                return True
            except OSError as exc:
                self._fail("writer.replay_failed", exc, spool=str(self._replays[0].path))
                self._give_up_replay()
                return True
        batch = self._replay_batch
        try:
            self.store.write(batch)
        except StoreUnavailable as error:
            self._went_down(error)
            return False
        except Exception as exc:
            self._refused(batch, exc, replay=True)
        else:
            self._replayed += len(batch)
            self._came_back()
        self._replay_batch = None
        return True

    def _finish_replay(self) -> None:
        done = self._replays.popleft()
        self._replay_iter = None
        if done.damaged:
            log.warning("writer.replay_damaged_lines", spool=str(done.path), lines=done.damaged)
        log.info("writer.replayed", spool=str(done.path), replayed_total=self._replayed)
        if self.spool is not None:
            self.spool.done(done, replayed=True)
        else:
            done.finish()

    def _give_up_replay(self) -> None:
        done = self._replays.popleft()
        self._replay_iter = None
        self._replay_batch = None
        if self.spool is not None:
            self.spool.done(done, replayed=False)
        else:
            done.release()

    def _shutdown(self) -> None:
        self._replay_iter = None
        self._replay_batch = None
        if self.spool is not None:
            for held in self._replays:
                self.spool.done(held, replayed=False)
            self._replays.clear()
            self.spool.close()

    def _spool_name(self) -> str | None:
        return str(self.spool.active_path) if self.spool is not None else None

    def _fail(self, event: str, exc: BaseException, **fields: object) -> None:
        # No traceback and no statement text: a database error quotes every parameter of the rows it refused.
        log.error(event, error_type=type(exc).__name__, error=_error_text(exc), **fields)
        if self.strict:
            self._errors.append(exc)

    def _forget_in_child(self) -> None:
        """After ``fork`` in the child: this writer's thread does not exist here; let go of the parent's spool."""
        self._closed = True
        if self.spool is not None:
            self.spool.forget_in_child()
        for held in self._replays:
            if held.fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(held.fd)
                held.fd = -1
        self._replays.clear()


def _error_text(exc: BaseException) -> str:
    """The driver's first line of ``exc`` (never SQLAlchemy's ``[SQL: ...] [parameters: ...]``), scrubbed."""
    text = str(getattr(exc, "orig", None) or exc).split("\n", 1)[0]
    return scrub_text(text.split("[SQL:", 1)[0].strip())[:300]
