"""The writer's counters: what it did with what it was given, and their periodic copy in ``writer_stats``."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from shadow import _clock as clock
from shadow._logs import get_logger

log = get_logger("shadow.writer")

#: The host's name, as ``socket.gethostname()`` gives it (``shadow._sessions.HOST``, which imports the writer).
_HOST = (os.uname().nodename if hasattr(os, "uname") else __import__("socket").gethostname())[:255]


@dataclass(frozen=True, slots=True)
class WriterStats:
    """What a writer has done with what it was given.

    ``submitted`` counts every ``submit`` call; each item ends up ``written`` (stored directly), ``spooled`` (kept in
    the local spool, the disk buffer, when the store is away or the queue is full; ``replayed`` counts spooled
    records stored later, including those of dead processes), ``dropped`` (queue and spool full, or closed),
    ``rejected`` (a record the store can never accept, set aside with the reason) or in ``failed_builds``; until
    then it is ``pending`` (queued, being built, or held in memory while neither the store nor the spool takes it).
    ``reasons`` counts why records were dropped or failed to build, and parts of records built without the tool's
    value (``walk_budget``: an endless or huge value cut short; ``record_part_failed``: a part raised), sorted.
    """

    submitted: int
    written: int
    spooled: int
    replayed: int
    dropped: int
    failed_builds: int
    rejected: int = 0
    pending: int = 0
    reasons: tuple[tuple[str, int], ...] = ()


class StatsPublisher:
    """Upserts a writer's counters into the store's ``writer_stats`` table every ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.started_at = clock.now()
        self._next = time.monotonic() + min(interval, 1.0)
        self._last: WriterStats | None = None

    def due(self, force: bool) -> bool:
        """Whether to publish now (always when forced, at flush and exit)."""
        return force or time.monotonic() >= self._next

    def row(self, stats: WriterStats) -> dict[str, object] | None:
        """The row to upsert, or None when nothing changed since the last one."""
        self._next = time.monotonic() + self.interval
        if stats == self._last:
            return None
        self._last = stats
        values = asdict(stats)
        del values["pending"], values["reasons"]  # in-process only (the table's columns are the counters)
        return {"process": str(os.getpid()), "host": _HOST, **values,
                "started_at": self.started_at, "updated_at": dt.datetime.now(dt.UTC)}

    def publish(self, store: object, run: Callable[[Callable[[], Any], float], None], stats: WriterStats, *,
                force: bool, fail: Callable[..., None]) -> None:
        """Upsert ``stats`` through ``run`` (a bounded store call) when due; the store may lack ``write_stats``."""
        from shadow.calllog._store import StoreUnavailable

        write_stats = getattr(store, "write_stats", None)
        if write_stats is None or not self.due(force):
            return
        row = self.row(stats)
        if row is None:
            return
        try:
            prepare = getattr(store, "prepare", None)
            if callable(prepare):  # modules loaded before the bounded call, as before a write (``Storer``)
                prepare()
            run(lambda: write_stats(row), 2.0)
        except StoreUnavailable:
            self._last = None  # try again next time
        except Exception as exc:
            fail("writer.stats_failed", exc)

    def publish_from(self, store: object, stats: WriterStats, timeout: float) -> bool:
        """Upsert ``stats`` from the calling thread's side (a helper thread, joined for at most ``timeout``): at exit,
        when the writer thread is still busy past the deadline, so its losses still reach the ``writer_stats`` table.
        True when the row was stored."""
        write_stats = getattr(store, "write_stats", None)
        if write_stats is None:
            return False
        row = self.row(stats)
        if row is None:
            return True
        done = threading.Event()

        def upsert() -> None:
            try:
                write_stats(row)
                done.set()
            except Exception as exc:  # the store is away or busy: the loss is in the log line only
                log.warning("writer.stats_failed", error_type=type(exc).__name__, error=str(exc)[:200])

        helper = threading.Thread(target=upsert, name="shadow-writer-stats", daemon=True)
        helper.start()
        helper.join(timeout)
        return done.is_set()

