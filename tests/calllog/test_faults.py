"""Faults that used to lose records: a locked or hung database, a read-only one, exit during an outage, user code
that hangs on the writer thread, a damaged spool, a full queue under sustained load."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _relay import Relay
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from test_writer import fast, rec

import shadow
from shadow import _config as config
from shadow.calllog import _db as db
from shadow.calllog import _migrate as migrate
from shadow.calllog._spool import Spool
from shadow.calllog._store import SqlStore
from shadow.calllog._writer import get_writer, set_writer
from shadow.flags._db import FlagState, Mode, StaticFlags

REPO = Path(__file__).resolve().parents[2]
SHADOWED = StaticFlags({"*": FlagState(Mode.SHADOW)})


def count(url: str, table: str = "calls") -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()


@pytest.fixture
def clean_writer() -> Iterator[None]:
    yield
    set_writer(None)
    db.dispose_all()
    migrate.forget()


def _tool() -> Any:
    @shadow.tool(flags=SHADOWED)
    def create_task(title: str, n: int) -> dict[str, Any]:
        return {"id": n, "title": title}

    return create_task


def _paced(fn: Any, calls: int, rate: float) -> None:
    start = time.monotonic()
    with shadow.session("faults"):
        for i in range(calls):
            fn("t", i)
            delay = start + (i + 1) / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def test_a_sqlite_file_held_exclusive_spools_instead_of_dropping(tmp_path: Path, clean_writer: None) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    migrate.upgrade(url)
    shadow.configure(db_url=url, spool_path=str(tmp_path / "shadow.spool"), queue_size=300, store_timeout=2.0)
    tool = _tool()
    holder = sqlite3.connect(tmp_path / "shadow.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        _paced(tool, 3000, 600)  # 5 s while the file is locked; the queue holds half a second of it
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert shadow.flush(60)
    stats = get_writer().stats
    assert stats.dropped == 0
    assert stats.spooled > 0
    assert stats.written + stats.replayed == 3000
    assert count(url) == 3000


@pytest.mark.slow
def test_a_stalled_postgresql_connection_is_bounded_and_its_records_spooled(
    pg_url: str, tmp_path: Path, clean_writer: None
) -> None:
    migrate.upgrade(pg_url)
    server = make_url(pg_url)
    relay = Relay(server.port or 5432)
    via = server.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    shadow.configure(db_url=via, spool_path=str(tmp_path / "shadow.spool"), queue_size=300, store_timeout=1.0)
    tool = _tool()
    try:
        _paced(tool, 300, 300)
        assert shadow.flush(30)
        relay.stall()
        _paced(tool, 2000, 500)  # 4 s with every byte held
        relay.resume()
        assert shadow.flush(60)
        stats = get_writer().stats
        assert stats.dropped == 0 and stats.spooled > 0
        deadline = time.monotonic() + 60
        while count(pg_url) < 2300 and time.monotonic() < deadline:
            time.sleep(0.2)  # the writer probes again after its backoff and replays the spool
        assert count(pg_url) == 2300
    finally:
        set_writer(None)
        relay.close()


def test_a_read_only_postgresql_database_is_an_outage_not_a_refusal(
    pg_url: str, tmp_path: Path, clean_writer: None
) -> None:
    migrate.upgrade(pg_url)
    name = make_url(pg_url).database
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
    shadow.configure(db_url=pg_url, spool_path=str(tmp_path / "shadow.spool"), queue_size=300)
    tool = _tool()
    try:
        _paced(tool, 1000, 1000)
        assert shadow.flush(30)
        stats = get_writer().stats
        assert stats.dropped == 0 and stats.rejected == 0 and stats.spooled == 1000
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off'))
        admin.dispose()
    deadline = time.monotonic() + 60
    while count(pg_url) < 1000 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert count(pg_url) == 1000
    assert get_writer().stats.dropped == 0


EXIT_CHILD = textwrap.dedent(
    """
    import os, sys, time
    import shadow
    from shadow.flags import FlagState, Mode, StaticFlags

    @shadow.tool(flags=StaticFlags({"*": FlagState(Mode.SHADOW)}))
    def work(i: int) -> int:
        return i

    with shadow.session("exit"):
        for i in range(3000):
            work(i)
            time.sleep(0.001)
        os.makedirs(sys.argv[1])  # the database is back; the writer is in its backoff
        for i in range(3000, 3010):
            work(i)
    time.sleep(0.3)
    """
)


def test_a_process_exiting_during_backoff_tries_the_store_once_more(tmp_path: Path) -> None:
    directory = tmp_path / "later"
    url = f"sqlite:///{directory}/shadow.db"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHADOW_DB_URL": url, "SHADOW_SPOOL": str(tmp_path / "s.spool")}
    done = subprocess.run([sys.executable, "-c", EXIT_CHILD, str(directory)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert count(url) == 3010
    assert not list(tmp_path.glob("*.spool"))


class _Hangs(Exception):
    release = threading.Event()

    def __str__(self) -> str:
        self.release.wait()  # user code that never returns on the writer thread
        return "hung"


def test_user_code_that_hangs_on_the_writer_thread_costs_one_record(tmp_path: Path, clean_writer: None) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    shadow.configure(db_url=url, spool_path=str(tmp_path / "shadow.spool"))

    @shadow.tool(flags=SHADOWED)
    def broken() -> None:
        raise _Hangs()

    tool = _tool()
    try:
        with pytest.raises(_Hangs):
            broken()
        _paced(tool, 500, 500)
        assert shadow.flush(30)
        stats = get_writer().stats
        assert stats.failed_builds == 1 and stats.dropped == 0
        assert count(url) == 500
    finally:
        _Hangs.release.set()


def _deep(depth: int) -> bytes:
    return b'{"k":"call","r":' + b"[" * depth + b"]" * depth + b"}\n"


@pytest.mark.parametrize("damage", ["nested", "seq"])
def test_a_damaged_spool_line_is_kept_apart_and_the_rest_replayed(tmp_path: Path, damage: str) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    spool_path = tmp_path / "old.99999999.spool"
    records = [rec(i) for i in range(200)]
    old = Spool(spool_path, max_bytes=10**8, tag=SqlStore(url).display_url)
    old.append(records)
    old.close()
    (written,) = tmp_path.glob("old.*.spool")
    written.rename(spool_path)  # as if left by a dead process
    lines = spool_path.read_bytes().splitlines(keepends=True)
    if damage == "nested":
        lines.insert(100, _deep(100_000))
    else:
        row = json.loads(lines[100])
        row["r"]["seq"] = "abc"
        lines[100] = json.dumps(row).encode() + b"\n"
    spool_path.write_bytes(b"".join(lines))
    writer = fast(SqlStore(url), Spool(tmp_path / "old.spool", max_bytes=10**8, tag=SqlStore(url).display_url))
    deadline = time.monotonic() + 30
    expected = 200 if damage == "nested" else 199
    while writer.stats.replayed < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    writer.close()
    assert count(url) == expected
    bad = list(tmp_path.glob("*.bad"))
    assert len(bad) == 1 and bad[0].read_text().count("\n") == 1
    assert not spool_path.exists()  # fully replayed: every line stored or kept apart


@pytest.mark.parametrize(("threads", "calls", "sleep"), [(16, 20_000, 0.001), (1, 50_000, 0.0)],
                         ids=["16-threads-1ms-io", "1-thread-trivial"])
def test_sustained_load_ends_with_every_record_stored(
    threads: int, calls: int, sleep: float, tmp_path: Path, clean_writer: None, request: pytest.FixtureRequest,
) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    _load(url, tmp_path, threads, calls, sleep)


@pytest.mark.slow
@pytest.mark.parametrize(("threads", "calls", "sleep"), [(16, 20_000, 0.001), (1, 50_000, 0.0)],
                         ids=["16-threads-1ms-io", "1-thread-trivial"])
def test_sustained_load_ends_with_every_record_stored_in_postgresql(
    threads: int, calls: int, sleep: float, pg_url: str, tmp_path: Path, clean_writer: None,
) -> None:
    _load(pg_url, tmp_path, threads, calls, sleep)


def _load(url: str, tmp_path: Path, threads: int, calls: int, sleep: float) -> None:
    shadow.configure(db_url=url, spool_path=str(tmp_path / "shadow.spool"))

    @shadow.tool(flags=SHADOWED)
    def io_tool(i: int) -> dict[str, int]:
        if sleep:
            time.sleep(sleep)
        return {"i": i}

    def run(part: int) -> None:
        with shadow.session(f"load-{part}"):
            for i in range(part, calls, threads):
                io_tool(i)

    workers = [threading.Thread(target=run, args=(p,)) for p in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert shadow.flush(300)
    stats = get_writer().stats
    assert stats.submitted == calls and stats.dropped == 0
    assert stats.written + stats.replayed == calls
    assert count(url) == calls
    config.reset()
