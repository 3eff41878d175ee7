"""The background writer: batching, flushing, outages and the spool, crashes, concurrency, drops, failed builds."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from sqlalchemy import create_engine, inspect, select
from sqlalchemy.engine import make_url
from structlog.testing import capture_logs

from shadow import _config as config
from shadow._ids import new_id
from shadow.calllog import _migrate as migrate
from shadow.calllog._records import CallRecord, MarkRecord, Record
from shadow.calllog._spool import Spool, encode
from shadow.calllog._store import SqlStore
from shadow.calllog._tables import calls
from shadow.calllog._writer import RecordDropped, Writer, flush, get_writer, set_writer
from shadow.testing import InMemoryStore

TS = dt.datetime(2025, 3, 14, 9, 26, 53, 589793, tzinfo=dt.UTC)


def rec(i: int = 0, session: str = "s") -> CallRecord:
    return CallRecord(
        id=new_id(), session_id=session, seq=i, ts=TS, tool="t", mode="shadow", variant="legacy",
        fingerprint="f" * 32, arg_hashes=None, args={"i": i}, outcome="ok", legacy_payload={"r": i},
        new_payload={"ok": True, "data": i}, code=None, retryable=None, next_action=None, retry_after_ms=None,
        error_field=None, rule=None, unmapped=False, schema_valid=True, latency_us=1, process="p", host="h",
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def fast(store: Any, spool: Spool | None = None, **kw: Any) -> Writer:
    options: dict[str, Any] = {"queue_size": 10_000, "batch_size": 50, "flush_interval": 0.02, "spool": spool,
                               "retry_initial": 0.02, "retry_max": 0.1}
    options.update(kw)
    return Writer(store, **options)


def batch_sizes(store: InMemoryStore) -> list[int]:
    """The size of each batch ``store`` is given from now on, in order."""
    sizes: list[int] = []
    inner = store.write

    def write(records: Any) -> None:
        records = list(records)
        sizes.append(len(records))
        inner(records)

    store.write = write  # type: ignore[method-assign]
    return sizes


def stored_ids(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("calls"):
                return []
            return list(conn.execute(select(calls.c.id)).scalars())
    finally:
        engine.dispose()


def spool_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.spool"))


class Deferred:
    """A stand-in for the adapter's deferred record: built in the writer thread."""

    def __init__(self, record: Record | None = None, error: Exception | None = None) -> None:
        self.record = record
        self.error = error
        self.thread: str | None = None

    def build(self) -> Record:
        self.thread = threading.current_thread().name
        if self.error is not None:
            raise self.error
        assert self.record is not None
        return self.record


class BlockingStore(InMemoryStore):
    """A store whose writes wait until ``release`` is set: a database that hangs."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, records: Any) -> None:
        self.release.wait(30)
        super().write(records)


# -- batching and flushing ----------------------------------------------------------------------------------------

def test_records_are_written_in_batches_of_at_most_batch_size() -> None:
    store = InMemoryStore()
    writer = fast(store, batch_size=7, flush_interval=5.0)
    sizes = batch_sizes(store)
    records = [rec(i) for i in range(50)]
    for r in records:
        writer.submit(r)
    assert writer.flush(5)
    assert store.ids == {r.id for r in records}
    assert max(sizes) <= 7 and sum(sizes) == 50
    assert writer.stats.written == 50
    writer.close()


def test_a_partial_batch_is_written_after_the_flush_interval_without_a_flush() -> None:
    store = InMemoryStore()
    writer = fast(store, batch_size=1000, flush_interval=0.05)
    writer.submit(rec(1))
    assert wait_for(lambda: len(store.ids) == 1, timeout=5)
    writer.close()


def test_a_full_batch_is_written_before_the_interval() -> None:
    store = InMemoryStore()
    writer = fast(store, batch_size=10, flush_interval=60.0)
    for i in range(10):
        writer.submit(rec(i))
    assert wait_for(lambda: len(store.ids) == 10, timeout=5)
    writer.close()


def test_a_writer_woken_by_a_full_batch_stores_full_batches_and_leaves_the_rest_to_the_interval_or_a_flush() -> None:
    store = InMemoryStore()
    writer = fast(store, batch_size=50, flush_interval=60.0)
    sizes = batch_sizes(store)
    for i in range(120):
        writer.submit(rec(i))
    assert wait_for(lambda: len(store.ids) == 100, timeout=5)
    time.sleep(0.2)  # the 20 left wait: one commit per full batch, not one per call that arrived meanwhile
    assert sizes == [50, 50] and writer.stats.pending == 20
    assert writer.flush(5)
    assert sizes == [50, 50, 20] and len(store.ids) == 120
    writer.close()


def test_close_writes_what_is_queued_and_later_submits_are_counted_as_dropped() -> None:
    store = InMemoryStore()
    writer = fast(store, batch_size=1000, flush_interval=60.0)
    for i in range(25):
        writer.submit(rec(i))
    writer.close()
    assert len(store.ids) == 25
    with capture_logs() as logs:
        writer.submit(rec(99))
    assert writer.stats.dropped == 1
    assert any(e["event"] == "writer.drop" and e["reason"] == "writer closed" for e in logs)
    assert writer.flush(0.1) is True  # nothing is pending: the lost record is counted, not waited for


def test_a_deferred_is_built_in_the_writer_thread() -> None:
    store = InMemoryStore()
    writer = fast(store)
    item = Deferred(rec(1))
    writer.submit(item)
    assert writer.flush(5)
    assert item.thread == "shadow-writer"
    assert store.ids == {item.record.id}  # type: ignore[union-attr]
    writer.close()


def test_a_deferred_whose_build_raises_is_counted_logged_and_swallowed() -> None:
    store = InMemoryStore()
    writer = fast(store)
    good = rec(2)
    with capture_logs() as logs:
        writer.submit(Deferred(error=ValueError("boom")))
        writer.submit(good)
        assert writer.flush(5) is True
    assert writer.stats.failed_builds == 1
    assert store.ids == {good.id}
    (event,) = [e for e in logs if e["event"] == "writer.build_failed"]
    assert event["error_type"] == "ValueError"
    writer.close()


def test_strict_mode_re_raises_a_failed_build_from_flush() -> None:
    writer = fast(InMemoryStore(), strict=True)
    writer.submit(Deferred(error=KeyError("missing")))
    with pytest.raises(KeyError, match="missing"):
        writer.flush(5)
    assert writer.stats.failed_builds == 1
    writer.close()


def test_a_build_that_returns_no_record_counts_as_failed() -> None:
    writer = fast(InMemoryStore())
    writer.submit(Deferred(record="not a record"))  # type: ignore[arg-type]
    assert writer.flush(5)
    assert writer.stats.failed_builds == 1
    writer.close()


def test_a_record_the_store_refuses_alone_is_set_aside_with_its_reason(tmp_path: Path) -> None:
    store = InMemoryStore()
    writer = fast(store, Spool(tmp_path / "shadow.spool", max_bytes=10**7), batch_size=5, flush_interval=60.0)
    records = [rec(i) for i in range(5)]
    store.refuse = {records[2].id}
    with capture_logs() as logs:
        for r in records:
            writer.submit(r)
        assert writer.flush(5)
    assert store.ids == {r.id for r in records} - {records[2].id}
    assert writer.stats.rejected == 1 and writer.stats.written == 4 and writer.stats.dropped == 0
    assert any(e["event"] == "writer.record_rejected" and e["id"] == records[2].id for e in logs)
    kept = [json.loads(line) for line in (tmp_path / "shadow.rejected.jsonl").read_text().splitlines()]
    assert [k["record"]["r"]["id"] for k in kept] == [records[2].id] and "refused" in kept[0]["reason"]
    writer.close()


def test_a_store_that_refuses_every_record_is_an_outage_and_nothing_is_lost(tmp_path: Path) -> None:
    store = InMemoryStore()
    writer = fast(store, Spool(tmp_path / "shadow.spool", max_bytes=10**7), batch_size=5)
    records = [rec(i) for i in range(5)]
    store.refuse = {r.id for r in records}
    for r in records:
        writer.submit(r)
    assert writer.flush(5)
    assert writer.stats.spooled == 5 and writer.stats.rejected == 0 and writer.stats.dropped == 0
    store.refuse = set()
    assert wait_for(lambda: store.ids == {r.id for r in records})
    writer.close()


# -- outages, the spool and drops ---------------------------------------------------------------------------------

def test_while_the_store_is_away_batches_are_spooled_then_replayed_once(tmp_path: Path) -> None:
    store = InMemoryStore()
    spool = Spool(tmp_path / "shadow.spool", max_bytes=10**7, tag="mem")
    writer = fast(store, spool)
    before = [rec(i) for i in range(30)]
    during = [rec(i) for i in range(30, 90)]
    for r in before:
        writer.submit(r)
    assert writer.flush(5)
    store.available = False
    with capture_logs() as logs:
        for r in during:
            writer.submit(r)
        assert writer.flush(5)  # spooled counts as done
        assert writer.stats.spooled == 60 and writer.stats.written == 30
        assert spool_files(tmp_path)
        store.available = True
        assert wait_for(lambda: writer.stats.replayed == 60)
        assert wait_for(lambda: not spool_files(tmp_path))  # the file is finished (and writer.replayed logged)
    assert store.ids == {r.id for r in before + during}
    assert {e["event"] for e in logs} >= {"writer.store_unavailable", "writer.store_back", "writer.replayed"}
    writer.close()
    assert not spool_files(tmp_path)


def test_the_spool_is_replayed_when_the_store_comes_back_without_new_records(tmp_path: Path) -> None:
    store = InMemoryStore()
    store.available = False
    writer = fast(store, Spool(tmp_path / "shadow.spool", max_bytes=10**7))
    records = [rec(i) for i in range(10)]
    for r in records:
        writer.submit(r)
    assert writer.flush(5)
    store.available = True
    assert wait_for(lambda: store.ids == {r.id for r in records})
    writer.close()


def test_without_a_spool_records_wait_in_memory_for_the_store(tmp_path: Path) -> None:
    store = InMemoryStore()
    store.available = False
    writer = fast(store, None, queue_size=100, batch_size=10)
    records = [rec(i) for i in range(40)]
    for r in records:
        writer.submit(r)
    assert writer.flush(0.2) is False
    assert writer.stats.dropped == 0
    store.available = True
    assert writer.flush(5)
    assert store.ids == {r.id for r in records}
    writer.close()


def test_with_queue_and_spool_full_records_are_dropped_counted_and_logged(tmp_path: Path) -> None:
    store = InMemoryStore()
    store.available = False
    one = len(encode(rec(0)))
    spool = Spool(tmp_path / "shadow.spool", max_bytes=one * 5 + 200)
    writer = fast(store, spool, queue_size=10, batch_size=5, retry_initial=60.0, retry_max=60.0)
    with capture_logs() as logs:
        for i in range(10):
            writer.submit(rec(i))  # 5 fit in the spool, 5 more are held by the writer
        assert wait_for(lambda: any(e["event"] == "writer.spool_full" for e in logs))
        started = time.monotonic()
        for i in range(20):
            writer.submit(rec(i))  # 10 fill the queue, 10 are dropped
        submitting = time.monotonic() - started
        assert wait_for(lambda: sum(e.get("count", 0) for e in logs if e["event"] == "writer.drop") == 10)
    assert writer.stats.spooled == 5
    assert writer.stats.dropped == 10
    assert writer.stats.submitted == 30
    assert writer.flush(0.05) is False
    assert submitting < 5  # a blocked submit would hang here
    writer.close(timeout=2)
    assert writer.stats.dropped == 25  # closing with nowhere to put them: the held and queued ones
    assert not store.ids


def test_submit_never_blocks_on_a_hanging_database() -> None:
    store = BlockingStore()
    writer = fast(store, None, queue_size=50, batch_size=10)
    for i in range(1000):
        writer.submit(rec(i))
    dropped = writer.stats.dropped
    assert 1000 - 50 - 10 <= dropped <= 1000 - 50
    store.release.set()
    assert writer.flush(10)
    assert len(store.ids) + writer.stats.dropped == 1000
    writer.close()


def test_strict_mode_raises_when_the_queue_is_full() -> None:
    store = BlockingStore()
    writer = fast(store, None, queue_size=1, batch_size=1000, flush_interval=60.0, strict=True)
    writer.submit(rec(1))
    with pytest.raises(RecordDropped):
        writer.submit(rec(2))
    store.release.set()
    writer.close()


# -- a real database that goes away and comes back ----------------------------------------------------------------

class Outage(Protocol):
    url: str

    def down(self) -> None: ...
    def up(self) -> None: ...


class SqliteLock:
    """SQLite made unavailable by another connection's ``BEGIN EXCLUSIVE``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False)

    def down(self) -> None:
        self.conn.execute("BEGIN EXCLUSIVE")

    def up(self) -> None:
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class PgProxy:
    """A TCP proxy in front of PostgreSQL: ``down`` closes its port and cuts every connection, ``up`` reopens it."""

    def __init__(self, url: str) -> None:
        target = make_url(url)
        self.target = (target.host or "127.0.0.1", target.port or 5432)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = target.set(host="127.0.0.1", port=self.port).render_as_string(hide_password=False)
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.up()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self.down()


@pytest.fixture
def outage(db_url: str) -> Iterator[Outage]:
    """The database behind a switch: SQLite behind a lock, PostgreSQL behind a proxy that can close its port."""
    migrate.upgrade(db_url)
    switch: SqliteLock | PgProxy = SqliteLock(db_url) if db_url.startswith("sqlite") else PgProxy(db_url)
    try:
        yield switch
    finally:
        switch.close()


def sql_writer(url: str, spool_dir: Path, **kw: Any) -> Writer:
    store = SqlStore(url, lock_timeout=0.05)
    return fast(store, Spool(spool_dir / "shadow.spool", max_bytes=10**8, tag=store.display_url), **kw)


def test_the_database_goes_away_mid_run_and_back_and_every_record_lands_once(
    outage: Outage, db_url: str, tmp_path: Path
) -> None:
    writer = sql_writer(outage.url, tmp_path, batch_size=20)
    submitted: list[str] = []

    def burst(n: int) -> None:
        for i in range(n):
            r = rec(i)
            submitted.append(r.id)
            writer.submit(r)
            if i % 25 == 0:
                time.sleep(0.005)

    burst(100)
    assert writer.flush(10)
    outage.down()
    try:
        burst(150)
        assert writer.flush(10)
        assert writer.stats.spooled > 0
    finally:
        outage.up()
    burst(100)
    assert writer.flush(10)
    assert wait_for(lambda: writer.stats.replayed == writer.stats.spooled, timeout=20)
    writer.close()
    ids = stored_ids(db_url)
    assert len(ids) == len(submitted) == 350
    assert set(ids) == set(submitted)
    assert writer.stats.written + writer.stats.replayed == 350
    assert writer.stats.dropped == 0
    assert not spool_files(tmp_path)


_PROC = r'''
import datetime as dt, json, os, signal, sys, time
import structlog
structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # stdout carries the report
from shadow._ids import new_id
from shadow.calllog._records import CallRecord
from shadow.calllog._spool import Spool
from shadow.calllog._store import SqlStore
from shadow.calllog._writer import Writer

def record(i):
    return CallRecord(id=new_id(), session_id=f"p{os.getpid()}", seq=i, ts=dt.datetime.now(dt.UTC), tool="t",
        mode="shadow", variant="legacy", fingerprint="f" * 32, arg_hashes=None, args={"i": i}, outcome="ok",
        legacy_payload=None, new_payload=None, code=None, retryable=None, next_action=None, retry_after_ms=None,
        error_field=None, rule=None, unmapped=False, schema_valid=True, latency_us=1, process=str(os.getpid()),
        host="h")

class DieAfter:
    def __init__(self, inner, writes):
        self.inner, self.left = inner, writes
    def write(self, records):
        self.inner.write(records)
        self.left -= 1
        if self.left == 0:
            os.kill(os.getpid(), signal.SIGKILL)

mode, url, spool_path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if mode == "exit-without-flush":
    from shadow import _config as config
    from shadow.calllog._writer import get_writer
    config.configure(db_url=url, spool_path=spool_path, flush_interval=60.0, batch_size=10_000)
    ids = []
    for i in range(n):
        r = record(i)
        ids.append(r.id)
        get_writer().submit(r)
    print(json.dumps(ids), flush=True)
    sys.exit(0)
store = SqlStore(url, lock_timeout=0.05)
spool = Spool(spool_path, max_bytes=10**8, tag=store.display_url)
if mode == "spool-and-wait":
    w = Writer(store, queue_size=10_000, batch_size=1000, flush_interval=60.0, spool=spool, retry_initial=60.0,
               retry_max=60.0)
    spooled = [record(i) for i in range(n)]
    for r in spooled:
        w.submit(r)
    assert w.flush(30) and w.stats.spooled == n, w.stats
    queued = [record(i) for i in range(10)]
    for r in queued:
        w.submit(r)  # stay in the queue: no flush, the batch is not full, the interval is long
    print(json.dumps({"spooled": [r.id for r in spooled], "queued": [r.id for r in queued]}), flush=True)
    time.sleep(120)
elif mode == "replay-and-die":
    w = Writer(DieAfter(store, 3), queue_size=100, batch_size=10, flush_interval=0.01, spool=spool)
    print("started", flush=True)
    time.sleep(120)
elif mode == "produce":
    w = Writer(SqlStore(url), queue_size=10_000, batch_size=50, flush_interval=0.02, spool=spool)
    ids = []
    for i in range(n):
        r = record(i)
        ids.append(r.id)
        w.submit(r)
        if i % 50 == 0:
            time.sleep(0.001)
    ok = w.flush(60)
    w.close()
    print(json.dumps({"ids": ids, "ok": ok, "dropped": w.stats.dropped}), flush=True)
'''


def run_proc(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "proc.py"
    if not script.exists():
        script.write_text(_PROC)
    return subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def dead_spool(outage: Outage, tmp_path: Path, n: int) -> dict[str, Any]:
    """A process that spooled ``n`` records while the store was down, then was killed (SIGKILL: its queue lost, its
    spool an orphan): what it reported (``spooled`` and ``queued`` ids)."""
    outage.down()
    try:
        proc = run_proc(tmp_path, "spool-and-wait", outage.url, str(tmp_path / "shadow.spool"), str(n))
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=30)[1]
        report: dict[str, Any] = json.loads(line)
        proc.kill()  # SIGKILL: no atexit, no flush, the queue is lost
        proc.wait(timeout=30)
    finally:
        outage.up()
    return report


def test_what_a_killed_writer_spooled_is_replayed_once_after_restart(
    outage: Outage, db_url: str, tmp_path: Path
) -> None:
    spool_path = str(tmp_path / "shadow.spool")
    report = dead_spool(outage, tmp_path, 200)
    assert len(spool_files(tmp_path)) == 1

    # A writer that claims the orphan and dies (SIGKILL) after three batches of its replay.
    dying = run_proc(tmp_path, "replay-and-die", outage.url, spool_path, "0")
    dying.wait(timeout=60)
    assert dying.returncode == -9, dying.communicate()[1]
    stored_before = len(stored_ids(db_url))
    assert 0 < stored_before < 200
    assert len(spool_files(tmp_path)) == 1  # the replay did not finish: the file stays, with its progress
    assert len(list(tmp_path.glob("*.spool.at"))) == 1

    writer = sql_writer(outage.url, tmp_path)
    assert wait_for(lambda: not spool_files(tmp_path), timeout=20)
    writer.close()
    ids = stored_ids(db_url)
    assert len(ids) == 200
    assert set(ids) == set(report["spooled"])
    assert not set(ids) & set(report["queued"])
    # the next writer went on from the last batch the dying one stored (at most a batch again: no duplicates)
    assert 200 - stored_before <= writer.stats.replayed < 200
    assert not list(tmp_path.glob("*.spool.at"))


def test_records_not_flushed_by_the_program_are_written_at_exit(sqlite_url: str, tmp_path: Path) -> None:
    proc = run_proc(tmp_path, "exit-without-flush", sqlite_url, str(tmp_path / "shadow.spool"), "120")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert set(stored_ids(sqlite_url)) == set(json.loads(out))


def test_eight_threads_and_three_processes_writing_at_once_store_every_record_once(
    db_url: str, tmp_path: Path
) -> None:
    procs = [run_proc(tmp_path, "produce", db_url, str(tmp_path / "shadow.spool"), "300") for _ in range(3)]
    store = SqlStore(db_url)
    writer = fast(store, Spool(tmp_path / "shadow.spool", max_bytes=10**8, tag=store.display_url), batch_size=50)
    mine: list[list[str]] = [[] for _ in range(8)]

    def produce(k: int) -> None:
        for i in range(300):
            r = rec(i, session=f"thread-{k}")
            mine[k].append(r.id)
            writer.submit(r)

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert writer.flush(60)
    writer.close()
    theirs: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        report = json.loads(out)
        assert report["ok"] and report["dropped"] == 0
        theirs += report["ids"]
    expected = [i for ids in mine for i in ids] + theirs
    ids = stored_ids(db_url)
    assert len(ids) == len(expected) == 8 * 300 + 3 * 300
    assert set(ids) == set(expected)
    assert writer.stats.dropped == 0


# -- the process-wide writer --------------------------------------------------------------------------------------

@pytest.fixture
def configured(sqlite_url: str, tmp_path: Path) -> Iterator[str]:
    config.configure(db_url=sqlite_url, spool_path=str(tmp_path / "shadow.spool"), flush_interval=0.02)
    try:
        yield sqlite_url
    finally:
        set_writer(None)


def test_get_writer_is_built_once_from_the_settings(configured: str) -> None:
    writer = get_writer()
    assert get_writer() is writer
    assert isinstance(writer.store, SqlStore) and writer.store.url == configured
    assert writer.spool is not None and writer.spool.path.name == f"shadow.{os.getpid()}.spool"
    r = rec(1)
    writer.submit(r)
    assert flush(5)
    assert stored_ids(configured) == [r.id]


def test_changed_settings_give_a_new_writer_and_the_old_one_finishes(configured: str, tmp_path: Path) -> None:
    old = get_writer()
    r = rec(1)
    old.submit(r)
    other = f"sqlite:///{tmp_path}/other.db"
    config.configure(db_url=other)
    new = get_writer()
    assert new is not old
    assert isinstance(new.store, SqlStore) and new.store.url == other
    assert wait_for(lambda: stored_ids(configured) == [r.id])


def test_set_writer_installs_a_custom_store_until_replaced(configured: str) -> None:
    store = InMemoryStore()
    writer = fast(store)
    set_writer(writer)
    config.configure(batch_size=7)  # settings changes do not replace an installed writer
    assert get_writer() is writer
    r = rec(1)
    get_writer().submit(r)
    assert flush(5)
    assert store.ids == {r.id}
    set_writer(None)
    assert writer.stats.written == 1
    assert get_writer() is not writer


def test_flush_without_a_writer_is_true() -> None:
    set_writer(None)
    assert flush(0.1) is True


def test_a_forked_child_gets_a_fresh_writer(configured: str) -> None:
    parent = get_writer()
    first, from_child, after = rec(1), rec(2), rec(3)
    parent.submit(first)
    assert parent.flush(5)
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            child = get_writer()
            child.submit(from_child)
            if child is not parent and child.flush(10):
                code = 0
            child.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    parent.submit(after)
    assert parent.flush(5)
    assert set(stored_ids(configured)) == {first.id, from_child.id, after.id}


def test_marks_go_through_the_writer_too(configured: str) -> None:
    m = MarkRecord(id=new_id(), session_id="s", seq=2, ts=TS, kind="end", process="p", host="h")
    get_writer().submit(m)
    assert flush(5)
    engine = create_engine(configured)
    with engine.connect() as conn:
        kinds = conn.exec_driver_sql("SELECT kind FROM marks").scalars().all()
    engine.dispose()
    assert kinds == ["end"]


def test_a_short_process_stores_its_own_records_and_leaves_a_dead_ones_spool_where_its_replay_stopped(
    outage: Outage, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short scripts each started a 130 MB spool's replay from its start, spent their exit on it (11 s each) and
    stored nothing more after a few runs (an outside check): progress is kept, and exit is for a process's own
    (past ``EXIT_ORPHAN_REPLAY``, here none)."""
    from shadow.calllog import _writer_thread

    monkeypatch.setattr(_writer_thread, "EXIT_ORPHAN_REPLAY", 0.0)
    report = dead_spool(outage, tmp_path, 3000)
    first = sql_writer(outage.url, tmp_path, batch_size=5)
    own = [rec(i, session="own") for i in range(5)]
    for r in own:
        first.submit(r)
    assert wait_for(lambda: first.stats.replayed > 0)
    assert first.flush(30)  # this process's records: not the dead one's whole spool
    first.close()
    stored = set(stored_ids(db_url))
    assert {r.id for r in own} <= stored
    assert first.stats.replayed < 3000 and len(spool_files(tmp_path)) == 1  # the dead one's spool, given back
    assert len(list(tmp_path.glob("*.spool.at"))) == 1

    second = sql_writer(outage.url, tmp_path, batch_size=500)
    assert wait_for(lambda: not spool_files(tmp_path), timeout=30)
    second.close()
    assert set(stored_ids(db_url)) == set(report["spooled"]) | {r.id for r in own}
    assert second.stats.replayed <= 3000 - first.stats.replayed + 5  # went on from there (a batch again at most)


def test_a_failing_spool_past_a_full_queue_is_tried_and_logged_once_not_per_call(tmp_path: Path) -> None:
    """Database and spool (and its fallback) unwritable: every call past the queue built a record, tried the spool
    and logged an error (730 lines in 10 s, callers three times slower, in an outside check)."""
    blocked = tmp_path / "blocked"
    blocked.write_text("not a directory")
    store = BlockingStore()  # the writer thread is stuck: the queue stays full
    spool = Spool(blocked / "shadow.spool", max_bytes=10**8, tag="t")
    writer = fast(store, spool, queue_size=5, burst_size=0, batch_size=1000, flush_interval=5.0)
    built: list[int] = []

    class Counted:
        provisional = None

        def build(self) -> CallRecord:
            built.append(1)
            return rec(len(built))

    try:
        with capture_logs() as logs:
            for _ in range(300):
                writer.submit(Counted())  # type: ignore[arg-type]
        failures = [e for e in logs if e["event"] == "writer.spool_failed"]
        assert len(failures) == 1 and "tried again" in failures[0]["hint"]
        assert len(built) <= 1  # the first call past the queue tried the spool; the rest were dropped, counted
        assert writer.stats.dropped >= 290
    finally:
        store.release.set()
        writer.close(5)


def test_a_store_call_cut_short_by_the_exit_is_no_outage_warning() -> None:
    """At exit with a healthy database: "writer.store_unavailable ... did not answer within 0.03 s" (a warning)."""
    from shadow.calllog._bounded import BoundedStore
    from shadow.calllog._outage import ExitDeadline, Outage

    release = threading.Event()
    bounded = BoundedStore(5.0)
    with pytest.raises(ExitDeadline, match="exit deadline came before the store answered"):
        bounded.run(lambda: release.wait(5), timeout=0.02)  # the exit's time left
    release.set()
    with capture_logs() as logs:
        Outage(0.1, 1.0).failed(ExitDeadline("the exit deadline came before the store answered"), None)
    assert [(e["event"], e["log_level"]) for e in logs] == [("writer.exit_deadline", "info")]


def test_a_writer_closed_at_once_still_gives_a_dead_processs_spool_its_second(
    outage: Outage, db_url: str, tmp_path: Path
) -> None:
    """Five-call scripts exited in a second each and never replayed a dead process's spool: a writer claimed
    orphans only while running, and a short script's writer first steps at its exit (an outside check)."""
    report = dead_spool(outage, tmp_path, 200)
    short = sql_writer(outage.url, tmp_path, flush_interval=60.0)
    own = [rec(i, session="own") for i in range(5)]
    for r in own:
        short.submit(r)
    short.close()
    assert set(stored_ids(db_url)) == set(report["spooled"]) | {r.id for r in own}
    assert not spool_files(tmp_path)
