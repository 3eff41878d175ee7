"""A burst past the queue costs the caller nothing: it waits in memory (``burst_size``), nothing is spooled on the
caller's thread, and every call is stored once the writer catches up (issue 32)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from shadow.calllog import _intake
from shadow.calllog._spool import Spool
from shadow.calllog._writer import BURST, Writer
from shadow.testing import InMemoryStore
from tests.calllog.test_writer import rec


class _Held(InMemoryStore):
    """A store that takes its first batch only when ``release`` is set: the writer falls behind the callers."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, records: Any) -> None:
        self.release.wait(30)
        super().write(records)


def test_a_burst_waits_in_memory_and_is_all_stored_without_the_caller_spooling(tmp_path: Path,
                                                                                monkeypatch: Any) -> None:
    store = _Held()
    spool = Spool(tmp_path / "shadow.spool", max_bytes=1 << 20)
    writer = Writer(store, queue_size=20, burst_size=80, batch_size=10, flush_interval=0.02, spool=spool)
    built_on_caller: list[object] = []
    overflow = _intake.Intake._overflow
    monkeypatch.setattr(_intake.Intake, "_overflow", lambda self, item: built_on_caller.append(item) or
                        overflow(self, item))
    records = [rec(i) for i in range(100)]  # queue 20 + burst 80: one batch may be in the writer's hands
    for record in records:
        writer.submit(record)
    assert built_on_caller == []
    assert writer.stats.spooled == 0 and writer.stats.dropped == 0
    store.release.set()
    assert writer.flush(10)
    assert sorted(store.ids) == sorted(r.id for r in records)
    writer.close()


def test_past_the_burst_room_the_caller_still_keeps_the_record_in_the_spool(tmp_path: Path) -> None:
    store = _Held()
    spool = Spool(tmp_path / "shadow.spool", max_bytes=1 << 20)
    writer = Writer(store, queue_size=5, burst_size=5, batch_size=5, flush_interval=0.02, spool=spool)
    records = [rec(i) for i in range(40)]
    for record in records:
        writer.submit(record)
    assert writer.stats.spooled >= 40 - 15 and writer.stats.dropped == 0
    store.release.set()
    assert writer.flush(10)
    assert sorted(store.ids) == sorted(r.id for r in records)
    writer.close()


def test_the_process_writer_takes_bursts_of_several_queues(tmp_path: Path) -> None:
    import shadow
    from shadow.calllog import get_writer

    shadow.configure(db_url=f"sqlite:///{tmp_path}/s.db", queue_size=300)  # the fixture resets the settings
    writer = get_writer()
    assert (writer.queue_size, writer.burst_size) == (300, BURST * 300) and BURST >= 4


def _freeze_count(tmp_path: Path, freeze: bool) -> int:
    import subprocess
    import sys

    code = ("import gc, time, shadow\n"
            f"shadow.configure(db_url='sqlite:///{tmp_path}/f.db', gc_freeze={freeze})\n"
            "from shadow.calllog import get_writer\n"
            "get_writer()\n"
            "deadline = time.monotonic() + 20\n"
            "while not gc.get_freeze_count() and time.monotonic() < deadline and shadow.calllog._writer._frozen:\n"
            "    time.sleep(0.01)\n"
            "print(gc.get_freeze_count())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    return int(done.stdout.split()[-1])


def test_the_process_writer_freezes_what_start_up_made_unless_told_not_to(tmp_path: Path) -> None:
    assert _freeze_count(tmp_path, True) > 1000  # the modules' objects: full collections in a burst skip them
    assert _freeze_count(tmp_path, False) == 0
