"""The spool: JSON lines that round-trip records, a size cap, and orphans claimed only from dead processes."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shadow._ids import new_id
from shadow.calllog._records import CallRecord, MarkRecord, Record
from shadow.calllog._spool import Spool
from shadow.calllog._spool_lines import decode, encode

TS = dt.datetime(2025, 3, 14, 9, 26, 53, 589793, tzinfo=dt.UTC)


def call(i: int = 0) -> CallRecord:
    return CallRecord(
        id=new_id(), session_id="s", seq=i, ts=TS, tool="t", mode="shadow", variant="legacy", fingerprint="f" * 32,
        arg_hashes={"q": "1" * 32}, args={"q": "ünïcode ✓", "n": [1, 2.5, None, True]}, outcome="ok",
        legacy_payload="plain string", new_payload={"ok": True, "data": {"x": 1}}, code=None, retryable=None,
        next_action=None, retry_after_ms=None, error_field=None, rule=None, unmapped=False, schema_valid=True,
        latency_us=12, process="1", host="h",
    )


def mark(i: int = 0) -> MarkRecord:
    return MarkRecord(id=new_id(), session_id="s", seq=i, ts=TS, kind="end", process="1", host="h")


def replay_all(spool: Spool, files: list[Any]) -> list[Record]:
    out: list[Record] = []
    for held in files:
        for batch in held.batches(3):
            out.extend(batch)
    return out


def test_a_record_survives_a_spool_line_unchanged() -> None:
    for record in (call(1), mark(2)):
        line = encode(record)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert decode(line) == record


def test_appended_batches_are_replayed_in_order_after_set_aside(tmp_path: Path) -> None:
    spool = Spool(tmp_path / f"shadow.{os.getpid()}.spool", max_bytes=10**6, tag="store-a")
    first, second = [call(i) for i in range(4)], [mark(5), call(6)]
    assert spool.append(first) and spool.append(second)
    assert spool.active_path == tmp_path / f"shadow.{os.getpid()}.spool"
    held = spool.set_aside()
    assert held is not None
    assert [len(b) for b in held.batches(3)] == [3, 3]
    assert list(held.batches(100)) == [first + second]
    spool.append([call(7)])  # a new active file; the set-aside one is untouched
    assert spool.active_path.exists() and held.path.exists() and held.path != spool.active_path
    spool.done(held, replayed=True)
    assert not held.path.exists()
    spool.close()


def test_the_cap_refuses_a_batch_that_would_pass_it_and_writes_nothing(tmp_path: Path) -> None:
    one = len(encode(call(0)))
    spool = Spool(tmp_path / "shadow.spool", max_bytes=one * 3 + 100)
    assert spool.append([call(1), call(2)])
    size = spool.active_path.stat().st_size
    assert not spool.append([call(3), call(4)])
    assert spool.active_path.stat().st_size == size
    assert spool.append([call(5)])
    spool.close()


def test_the_cap_counts_set_aside_files_until_they_are_replayed(tmp_path: Path) -> None:
    one = len(encode(call(0)))
    spool = Spool(tmp_path / "shadow.spool", max_bytes=one * 2 + 150)
    assert spool.append([call(1), call(2)])
    held = spool.set_aside()
    assert held is not None
    assert not spool.append([call(3)])
    spool.done(held, replayed=True)
    assert spool.append([call(3)])
    spool.close()


def test_close_removes_an_empty_file_and_keeps_one_with_records(tmp_path: Path) -> None:
    empty = Spool(tmp_path / "a.spool", max_bytes=10**6)
    empty.append([call(1)])
    held = empty.set_aside()
    assert held is not None
    empty.done(held, replayed=True)
    empty.append([])  # header only
    path = empty.active_path
    empty.close()
    assert not path.exists()
    full = Spool(tmp_path / "b.spool", max_bytes=10**6)
    full.append([call(1)])
    path = full.active_path
    full.close()
    assert path.exists()


_HOLD = """
import sys, time, datetime as dt
from shadow.calllog._spool import Spool
from shadow.calllog._records import MarkRecord
spool = Spool(sys.argv[1], max_bytes=10**6, tag=sys.argv[2])
spool.append([MarkRecord(id=sys.argv[3], session_id="s", seq=1, ts=dt.datetime.now(dt.UTC), kind="end",
                         process="p", host="h")])
print(spool.active_path, flush=True)
if sys.argv[4] == "stay":
    time.sleep(60)
"""


def _spool_in_child(path: Path, tag: str, record_id: str, stay: bool) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path), tag, record_id, "stay" if stay else "exit"],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    written = Path(proc.stdout.readline().strip())
    return proc, written


def test_the_spool_of_a_dead_process_is_claimed_and_replayed(tmp_path: Path) -> None:
    record_id = new_id()
    proc, orphan = _spool_in_child(tmp_path / "shadow.spool", "store-a", record_id, stay=False)
    assert proc.wait(timeout=30) == 0
    assert orphan.exists()
    spool = Spool(tmp_path / f"shadow.{os.getpid()}.spool", max_bytes=10**6, tag="store-a")
    claimed = spool.claim_orphans()
    assert [c.path for c in claimed] == [orphan]
    assert [r.id for r in replay_all(spool, claimed)] == [record_id]
    assert Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="store-a").claim_orphans() == []  # locked by us
    spool.done(claimed[0], replayed=True)
    assert not orphan.exists()


def test_a_live_process_keeps_its_spool(tmp_path: Path) -> None:
    proc, held = _spool_in_child(tmp_path / "shadow.spool", "store-a", new_id(), stay=True)
    try:
        spool = Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="store-a")
        assert spool.claim_orphans() == []
        assert held.exists()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert [c.path for c in spool.claim_orphans()] == [held]  # dead now: its lock went with it


def test_another_stores_spool_is_left_alone(tmp_path: Path) -> None:
    proc, other = _spool_in_child(tmp_path / "shadow.spool", "store-b", new_id(), stay=False)
    proc.wait(timeout=30)
    assert Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="store-a").claim_orphans() == []
    assert other.exists()


def test_two_writers_never_claim_the_same_orphan(tmp_path: Path) -> None:
    proc, orphan = _spool_in_child(tmp_path / "shadow.spool", "t", new_id(), stay=False)
    proc.wait(timeout=30)
    one = Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="t").claim_orphans()
    two = Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="t").claim_orphans()
    assert [c.path for c in one] == [orphan]
    assert two == []
    one[0].release()
    assert [c.path for c in Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="t").claim_orphans()] == [orphan]


def test_a_line_cut_short_by_a_crash_is_skipped_and_counted(tmp_path: Path) -> None:
    proc, orphan = _spool_in_child(tmp_path / "shadow.spool", "t", new_id(), stay=False)
    proc.wait(timeout=30)
    with orphan.open("ab") as fh:
        fh.write(b"not json at all\n")
        fh.write(encode(call(9)))
        fh.write(encode(call(10))[:40])  # the crash
    (held,) = Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="t").claim_orphans()
    records = [r for b in held.batches(10) for r in b]
    assert [type(r).__name__ for r in records] == ["MarkRecord", "CallRecord"]
    assert held.damaged == 2


def test_a_stale_file_with_this_pid_is_kept_as_an_orphan_not_overwritten(tmp_path: Path) -> None:
    stale = tmp_path / f"shadow.{os.getpid()}.spool"
    first = Spool(stale, max_bytes=10**6, tag="t")
    old = call(1)
    first.append([old])
    first.close()  # as if an earlier process with this pid had died
    second = Spool(stale, max_bytes=10**6, tag="t")
    second.append([call(2)])
    (orphan,) = second.claim_orphans()
    assert [r.id for b in orphan.batches(10) for r in b] == [old.id]
    second.close()


def test_two_spools_of_one_process_do_not_share_a_file(tmp_path: Path) -> None:
    a = Spool(tmp_path / "shadow.spool", max_bytes=10**6)
    b = Spool(tmp_path / "shadow.spool", max_bytes=10**6)
    a.append([call(1)])
    b.append([call(2)])
    assert a.active_path != b.active_path
    a.close()
    b.close()


@pytest.mark.parametrize("name", ["shadow.spool", "custom-name", "shadow.12345.spool"])
def test_the_active_file_carries_this_process_id(tmp_path: Path, name: str) -> None:
    spool = Spool(tmp_path / name, max_bytes=10**6)
    assert spool.path.name.endswith(f".{os.getpid()}.spool")
    spool.close()


def test_an_overlong_line_is_kept_apart_in_bounded_pieces_and_the_lines_after_it_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow.calllog import _spool_file as _spool

    monkeypatch.setattr(_spool, "MAX_LINE", 4096)
    proc, orphan = _spool_in_child(tmp_path / "shadow.spool", "t", new_id(), stay=False)
    proc.wait(timeout=30)
    with orphan.open("ab") as fh:
        fh.write(b"x" * 50_000 + b"\n")  # damage far longer than any record
        fh.write(encode(call(9)))
    reads: list[int] = []
    real = _spool.Path.open

    def watched(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = real(self, *args, **kwargs)
        if self == orphan:
            line = handle.readline
            handle.readline = lambda limit=-1: (reads.append(limit), line(limit))[1]
        return handle

    monkeypatch.setattr(_spool.Path, "open", watched)
    (held,) = Spool(tmp_path / "shadow.spool", max_bytes=10**6, tag="t").claim_orphans()
    records = [r for b in held.batches(10) for r in b]
    assert [type(r).__name__ for r in records] == ["MarkRecord", "CallRecord"]
    assert held.damaged == 1
    assert reads and all(0 < limit <= 4097 for limit in reads)  # every read bounded
    assert b"over 4096 bytes" in held.bad_path.read_bytes()
