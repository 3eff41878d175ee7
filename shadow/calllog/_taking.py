"""The writer thread's side of the queue: pop up to one batch and build its deferred items, watched for hung builds."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

from shadow.calllog._records import Built, CallRecord, CallRow, MarkRecord, Record
from shadow.calllog._storing import Storer
from shadow.typing import Deferred

_RECORDS = (CallRecord, MarkRecord, CallRow)
#: Seconds of building between two hand-overs of the GIL (a ``sleep(0)`` each). An application thread that wakes
#: while the writer builds waits for the GIL until the next hand-over: 0.15 ms keeps 16 threads of a 1 ms tool at
#: about 90% of their legacy rate, 0.5 ms at about 83% (issue 32). Past two batches queued, the writer catches up in
#: 0.5 ms slices: shorter slices give it less of the GIL, and a backlog would grow until callers spool.
_SLICE = 0.00015
_SLICE_BEHIND = 0.0005


class Taking:
    """``_take``: the batch a ``Writer`` stores next; a build the watchdog gives up leaves it to a new thread."""

    batch_size: int
    _queue: collections.deque[Record | Deferred]
    _storer: Storer
    _gen_lock: threading.Lock
    _generation: int
    _taking: list[Built]
    _taking_popped: int
    _building_since: float | None
    _failed_builds: int
    _count: Callable[..., None]
    _fail: Callable[..., None]

    def _take(self, generation: int) -> tuple[list[Built], int]:
        """Pop up to one batch from the queue, building deferred items (watched by ``_watch``): a plain call as
        the row a store that takes rows inserts (``CallRow``), anything else as its record."""
        taking: list[Built] = []
        rows = self._storer.takes_rows
        self._taking, self._taking_popped = taking, 0
        queue, gen_lock, clock, size = self._queue, self._gen_lock, time.monotonic, self.batch_size
        behind = 2 * size

        def slice_end(start: float) -> float:  # when building next hands the GIL over: later while catching up
            return start + (_SLICE if len(queue) < behind else _SLICE_BEHIND)

        handed = slice_end(clock())
        while self._taking_popped < size:
            try:
                item = queue.popleft()
            except IndexError:
                break
            self._taking_popped += 1
            if isinstance(item, _RECORDS):
                taking.append(item)
                continue
            self._building_since = now = clock()
            if now >= handed:  # else an application thread that woke meanwhile waits up to 5 ms for the GIL
                time.sleep(0)
                handed = slice_end(now)
            try:
                build_row = getattr(item, "build_row", None) if rows else None
                built = item.build() if build_row is None else build_row()
                if not isinstance(built, _RECORDS):
                    raise TypeError(f"build() returned {type(built).__name__}, not a CallRecord or MarkRecord")
            except BaseException as exc:  # anything user code raises here (this is never the main thread)
                built = None
                with gen_lock:
                    if generation != self._generation:
                        return [], 0  # this build hung, was given up and stopped: the new thread owns the batch
                    self._failed_builds += 1
                    self._count("build_raised" if isinstance(exc, Exception) else "build_interrupted")
                self._fail("writer.build_failed", exc, item=type(item).__name__)
            finally:
                if generation == self._generation:  # not a replacement's build
                    self._building_since = None
            with gen_lock:
                if generation != self._generation:
                    return [], 0  # this build hung and was given up: the new thread owns the batch
                if built is not None:
                    taking.append(built)
        batch, popped = self._taking, self._taking_popped
        self._taking, self._taking_popped = [], 0
        return batch, popped
