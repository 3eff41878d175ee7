"""The process-wide call-log writer: ``get_writer``, ``set_writer`` and ``shadow.flush()``.

The writer itself (a bounded queue drained by a daemon thread into the store, with a spool as its disk buffer) is
``shadow.calllog._writer_thread.Writer``; this module builds one from the settings on first use, replaces it when
the settings change, closes it at exit and forgets it in a forked child.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
import time

from shadow import _scrub as scrub
from shadow._config import is_otlp_url, settings
from shadow._logs import get_logger
from shadow.calllog._replay import ORPHAN_SCAN_INTERVAL
from shadow.calllog._spool import Spool, default_fallback
from shadow.calllog._store import SqlStore
from shadow.calllog._writer_thread import RecordDropped, Writer, WriterStats
from shadow.contract import _reading as reading
from shadow.typing import Store

#: How many times ``queue_size`` raw calls a burst may add in memory before callers spool (the caller never builds
#: or spools a record in a burst the writer catches up with; a raw call of a small tool is under 1 KB).
BURST = 4
#: Seconds the start-up work waits for the first call to finish (``_after_start_up``).
FREEZE_AFTER = 0.05

__all__ = ["ORPHAN_SCAN_INTERVAL", "RecordDropped", "Writer", "WriterStats", "flush", "get_writer", "set_writer"]

log = get_logger("shadow.writer")

_lock = threading.Lock()
_writer: Writer | None = None
_writer_settings: object | None = None  # the Settings object the writer was built from; None for set_writer's
_retired: list[Writer] = []
_started_up: list[bool] = []  # ``_after_start_up`` was started (once per process)
_frozen: list[bool] = []  # the start-up objects are frozen or about to be (once per process: gc_freeze)
_frozen_loaded: list[bool] = []  # and again once the store's modules were loaded (once per process)
_atexit_registered = False
_exit_hooked_pid = 0  # the process whose multiprocessing exit hook is registered (a forked child needs its own)


def _build() -> Writer:
    s = settings()
    store: Store
    if s.store is not None:  # shadow.configure(store=...)
        store = s.store
    elif is_otlp_url(s.db_url):  # SHADOW_DB_URL=otlp+http://collector:4318: records out as OpenTelemetry spans
        from shadow.calllog._otel import OtlpStore

        store = OtlpStore.from_url(s.db_url)
    else:
        store = SqlStore(s.db_url, lock_timeout=min(1.0, s.store_timeout / 4))  # a short wait, then the spool
    tag = getattr(store, "display_url", None) or type(store).__qualname__
    spool = Spool(s.spool_file(), max_bytes=s.spool_max_bytes, tag=str(tag), fallback=default_fallback())
    return Writer(
        store,
        queue_size=s.queue_size,
        burst_size=BURST * s.queue_size,
        batch_size=s.batch_size,
        flush_interval=s.flush_interval,
        spool=spool,
        strict=s.strict,
        store_timeout=s.store_timeout,
        on_error=s.on_internal_error,
        on_prepared=_freeze_loaded if s.gc_freeze else None,
    )


def get_writer() -> Writer:
    """The process-wide writer, created on first use from ``shadow._config.settings()``.

    After ``shadow.configure(...)`` changes the settings, the next call builds a new writer and retires the old one
    (it finishes its queue in the background). A writer installed with ``set_writer`` stays until replaced.
    """
    global _writer, _writer_settings
    current = _writer
    if current is not None and (_writer_settings is None or _writer_settings is settings()):
        return current
    with _lock:
        s = settings()
        if _writer is not None and (_writer_settings is None or _writer_settings is s):
            return _writer
        old = _writer
        _writer = _build()
        _writer_settings = s
        if not _started_up:
            _started_up.append(True)
            if s.gc_freeze:
                _frozen.append(True)
            threading.Thread(target=_after_start_up, args=(s.gc_freeze,), name="shadow-start-up", daemon=True).start()
        _hook_exit()
        if old is not None:
            _retire(old)
        return _writer


def _after_start_up(freeze: bool) -> None:
    """What waits until the first call is served (``FREEZE_AFTER``), in a thread of its own.

    First the patterns ``import shadow`` leaves for first use are compiled (the phrase table and the scrubber's
    words, about 30 ms): a caller's first error reading in cutover then finds them ready. Then, with ``gc_freeze``,
    what start-up made leaves the cyclic GC's reach (the ``gc.freeze`` recipe: collect, then freeze): without it,
    each full collection during a burst walks every object of the process, about 3 us per call (issue 32). A full
    collection holds the GIL throughout (about 10 ms): started at once, it held up the first call, whose
    ``Thread.start`` waits for the GIL after the thread has started. Compiling imports nothing: no fork guard."""
    time.sleep(FREEZE_AFTER)
    reading.warm()
    scrub.warm()
    if freeze:
        gc.collect()
        gc.freeze()


def _freeze_loaded() -> None:
    """Once the store has loaded its modules (SQLAlchemy, the driver, Alembic: in the writer's thread, after the
    start-up freeze), those too, once per process: else every full collection of a burst walks them again, about
    4 us per call of a 30,000-call burst (issue 32)."""
    if not _frozen_loaded:
        _frozen_loaded.append(True)
        gc.collect()
        gc.freeze()


def _retire(old: Writer) -> None:
    _retired.append(old)
    threading.Thread(target=old.close, name="shadow-writer-retire", daemon=True).start()


def set_writer(writer: Writer | None) -> None:
    """Install ``writer`` as the process-wide writer (tests, custom stores); the previous one is closed."""
    global _writer, _writer_settings
    with _lock:
        old = _writer
        _writer = writer
        _writer_settings = None  # kept until replaced, whatever the settings say
        if writer is not None:
            _hook_exit()
    if old is not None and old is not writer:
        old.close()


def flush(timeout: float | None = 10.0) -> bool:
    """Wait until every record submitted so far is written or spooled; False on timeout (``shadow.flush()``)."""
    current = _writer
    if current is None:
        return True
    return current.flush(timeout)


def _hook_exit() -> None:
    """Close the writers at exit (held ``_lock``): ``atexit``, and in a ``multiprocessing`` child, which ends with
    ``os._exit`` (no ``atexit``), a finalizer its exit runs (``Process.join``, ``Pool.close()`` then ``join()``;
    ``Pool.terminate()``, which a ``with Pool(...)`` block ends with, kills workers like a signal: see README)."""
    global _atexit_registered, _exit_hooked_pid
    if not _atexit_registered:
        atexit.register(_close_at_exit)
        _atexit_registered = True
    mp = sys.modules.get("multiprocessing")  # never imported here: only a process that uses it has such children
    if mp is None or _exit_hooked_pid == os.getpid() or mp.parent_process() is None:
        return
    import multiprocessing.util

    multiprocessing.util.Finalize(None, _close_at_exit, exitpriority=100)
    _exit_hooked_pid = os.getpid()


def _close_at_exit() -> None:
    with _lock:
        writers = [w for w in (*_retired, _writer) if w is not None]
    for writer in writers:
        try:
            writer.close()
        except Exception as exc:
            log.error("writer.exit_failed", error_type=type(exc).__name__, error=str(exc)[:300])


def _after_fork_in_child() -> None:
    global _lock, _writer, _writer_settings
    _lock = threading.Lock()
    for writer in (*_retired, _writer):
        if writer is not None:
            writer._forget_in_child()
    _retired.clear()
    _writer = None
    _writer_settings = None


os.register_at_fork(after_in_child=_after_fork_in_child)
