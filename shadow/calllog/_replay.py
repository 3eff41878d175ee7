"""Spool replay: the spool files waiting to be stored (this process's and dead processes'), a batch at a time."""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from typing import Final

from shadow._logs import get_logger
from shadow.calllog._records import Record
from shadow.calllog._spool import Spool
from shadow.calllog._spool_file import SpoolFile

log = get_logger("shadow.writer")

#: Seconds between looks for spool files left by dead processes.
ORPHAN_SCAN_INTERVAL: Final = 60.0


class Replayer:
    """Hands out spooled records in batches; a file is removed only once every line of it is stored or kept apart.

    ``next_batch`` gives the batch to store; after storing it, ``stored``; when the store is away the batch stays
    current and comes back on the next ``next_batch``. A file that cannot be read to its end is left in place for
    a later writer, never deleted.
    """

    def __init__(self, spool: Spool | None, batch_size: int) -> None:
        self.spool = spool
        self.batch_size = batch_size
        self.files: collections.deque[SpoolFile] = collections.deque()
        self.replayed = 0
        self.damaged = 0
        self._iter: Iterator[list[Record]] | None = None
        self._batch: list[Record] | None = None
        self._next_scan = 0.0

    def pending(self, *, own: bool = False) -> bool:
        """Whether spooled records wait to be stored: a file set aside or claimed, or the active spool file;
        ``own``: of this process only (a dead process's file claimed for replay left out)."""
        if own:
            if any(not f.orphan for f in self.files):
                return True
        elif self._batch is not None or self._iter is not None or self.files:
            return True
        return self.spool is not None and self.spool.has_active()

    def release_orphans(self) -> None:
        """Give the dead processes' files back (at exit): a later writer goes on where this one's replay stopped."""
        if not any(f.orphan for f in self.files):
            return
        if self.files and self.files[0].orphan:
            self._iter = None
            self._batch = None  # not stored: still in the file past its kept progress
        kept: collections.deque[SpoolFile] = collections.deque()
        for held in self.files:
            if not held.orphan:
                kept.append(held)
            elif self.spool is not None:
                self.spool.done(held, replayed=False)
            else:
                held.release()
        self.files = kept

    def scan_soon(self) -> None:
        """Look for dead processes' spools on the next round (the store just came back)."""
        self._next_scan = 0.0

    def claim_orphans(self) -> None:
        """Claim the spool files of dead processes of this store, at most every ``ORPHAN_SCAN_INTERVAL``."""
        now = time.monotonic()
        if self.spool is None or now < self._next_scan:
            return
        self._next_scan = now + ORPHAN_SCAN_INTERVAL
        for orphan in self.spool.claim_orphans():
            log.info("writer.orphan_found", spool=str(orphan.path), bytes=orphan.size)
            self.files.append(orphan)

    def set_aside(self) -> None:
        """Queue the active spool file for replay; later spills go to a new file."""
        if self.spool is not None:
            held = self.spool.set_aside()
            if held is not None:
                self.files.append(held)

    def next_batch(self) -> list[Record] | None:
        """The next batch to store, or None when nothing is left to replay right now. This process's own records
        go first: a dead process's file is paused between batches (its progress kept) while they wait."""
        if self._batch is None and self.files and self.files[0].orphan and not all(f.orphan for f in self.files):
            self._iter = None
            self.files = collections.deque(sorted(self.files, key=lambda f: f.orphan))
        while self._batch is None:
            if self._iter is None:
                if not self.files:
                    self.set_aside()
                if not self.files:
                    return None
                self._iter = self.files[0].batches(self.batch_size)
            try:
                self._batch = next(self._iter)
            except StopIteration:
                self._finish(complete=True)
            except Exception as exc:  # unreadable: keep the file for a later writer
                log.error("writer.replay_failed", spool=str(self.files[0].path), error_type=type(exc).__name__,
                          error=str(exc)[:300])
                self._finish(complete=False)
                return None
        return self._batch

    def stored(self, count: int) -> None:
        """The current batch is stored (``count`` of its records; the rest were set aside)."""
        self.replayed += count
        self._batch = None
        if self.files:
            self.files[0].stored_batch()

    def _finish(self, *, complete: bool) -> None:
        done = self.files.popleft()
        self._iter = None
        self._batch = None
        if done.damaged:
            self.damaged += done.damaged
            log.warning("writer.replay_damaged_lines", spool=str(done.path), lines=done.damaged,
                        kept=str(done.bad_path))
        if complete:
            log.info("writer.replayed", spool=str(done.path), replayed_total=self.replayed)
        if self.spool is not None:
            self.spool.done(done, replayed=complete)
        elif complete:
            done.finish()
        else:
            done.release()

    def release_all(self) -> None:
        """Give up every file for now (at exit): they stay on disk, unlocked, for a later writer."""
        self._iter = None
        self._batch = None
        while self.files:
            held = self.files.popleft()
            if self.spool is not None:
                self.spool.done(held, replayed=False)
            else:
                held.release()

    def forget_in_child(self) -> None:
        """After ``fork``: close the child's copies of the held files' descriptors."""
        import contextlib
        import os

        for held in self.files:
            if held.fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(held.fd)
                held.fd = -1
        self.files.clear()
