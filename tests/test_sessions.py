"""Session sequence counters: least recently used eviction, and a restart that never reads as earlier events."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import shadow
from shadow import _sessions as sessions
from shadow.calllog._records import CallRecord
from shadow.testing import InMemoryFlags, InMemoryStore, recording

ROOT = Path(__file__).resolve().parents[1]


def test_a_session_in_use_keeps_its_counter_however_many_others_come_and_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "_MAX_COUNTERS", 100)

    @shadow.tool(flags=InMemoryFlags({"step": "shadow"}))
    def step() -> str:
        return "ok"

    with recording(InMemoryStore()) as store:
        assert isinstance(store, InMemoryStore)
        for burst in range(12):
            with shadow.session("long-lived"):
                step()
            for i in range(30):
                with shadow.session(f"short-{burst}-{i}"):
                    step()
        assert shadow.flush(10)
        seqs = sorted(r.seq for r in store.records.values()
                      if isinstance(r, CallRecord) and r.session_id == "long-lived")
    assert seqs == list(range(1, 13))
    assert len(sessions._counters) <= 100


def test_a_new_counter_for_a_session_gets_a_later_epoch() -> None:
    first = sessions.next_position("epoch-test")
    sessions._counters.clear()  # as after an eviction or a restart
    second = sessions.next_position("epoch-test")
    assert second[1] == 1 and second[0] > first[0]
    assert sorted([second, first]) == [first, second]


_PROCESS = textwrap.dedent('''
    import sys, shadow

    @shadow.tool
    def search(q: str) -> dict:
        return {"error": "Service unavailable, try later"} if q == "fail" else {"hits": 1}

    with shadow.session("task-42"):
        for q in sys.argv[1:]:
            search(q=q)
    assert shadow.flush(10)
''')


def test_a_restarted_process_continues_a_session_after_its_earlier_calls_in_the_analytics(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"},
           "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}",
           "SHADOW_FLAGS": "*=shadow"}
    for queries in (["a", "b", "fail"], ["fail"]):  # the second process repeats the failed call: a loop
        done = subprocess.run([sys.executable, "-c", _PROCESS, *queries], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    import duckdb

    sync = subprocess.run([sys.executable, "-m", "shadow", "sync"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert sync.returncode == 0, sync.stderr
    with duckdb.connect(str(tmp_path / "shadow.duckdb"), read_only=True) as con:
        follow = con.execute("SELECT follow_up, looped FROM error_followups ORDER BY ts").fetchall()
    assert follow[0] == ("repeat", True)


_ARMS = textwrap.dedent('''
    import sys, threading, time, shadow

    @shadow.tool
    def book(n: int) -> dict:
        return {"booked": n}

    def agent(i: int) -> None:
        with shadow.session(f"s-{i}"):
            end = time.monotonic() + 0.3
            n = 0
            while time.monotonic() < end:  # from the process's very first moment, while the flags load
                book(n)
                n += 1
                time.sleep(0.005)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(int(sys.argv[1]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
''')


def test_every_session_keeps_one_arm_while_the_flags_load(db_url: str, tmp_path: Path) -> None:
    from sqlalchemy import create_engine, text

    from shadow.calllog import _db as db
    from shadow.flags._db import DbFlags

    DbFlags(db_url, last_known="off").set("book", "cutover", 50)
    db.dispose_all()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"},
           "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": db_url, "SHADOW_FLAGS_LAST_KNOWN": "off",
           "SHADOW_SPOOL": str(tmp_path / "spool")}
    done = subprocess.run([sys.executable, "-c", _ARMS, "40"], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT session_id, variant, count(*) FROM calls GROUP BY session_id, variant"))
        arms: dict[str, list[str]] = {}
        for sid, variant, _n in rows:
            arms.setdefault(sid, []).append(variant)
    engine.dispose()
    assert len(arms) == 40
    assert [sid for sid, variants in arms.items() if len(variants) > 1] == []  # one arm per session
    assert {v[0] for v in arms.values()} == {"legacy", "structured"}  # 50%: both arms are used


class _SlowFlags:
    """A flag source whose first load takes ``delay`` seconds (what a slow flag database looks like)."""

    def __init__(self, delay: float) -> None:
        from shadow.flags._model import FlagState, Mode

        self.state_now = FlagState(Mode.CUTOVER, 100)
        self.ready = threading.Event()
        threading.Timer(delay, self.ready.set).start()

    def state(self, tool: str) -> object:
        from shadow.flags._model import LEGACY

        return self.state_now if self.ready.is_set() else LEGACY

    def pending(self, tool: str) -> bool:
        return not self.ready.is_set()

    def wait(self, timeout: float | None = 5.0) -> bool:
        return self.ready.wait(timeout)


def test_sessions_served_before_a_late_load_keep_the_legacy_arm_until_the_flag_changes() -> None:
    from shadow._config import configure
    from shadow.flags._model import FlagState, Mode

    configure(flag_start_wait=0.05)
    flags = _SlowFlags(0.4)
    book = shadow.tool(name="book_late", flags=flags)(lambda n: {"booked": n})  # type: ignore[arg-type]
    with recording(InMemoryStore()) as store:
        assert isinstance(store, InMemoryStore)

        def agent(i: int, calls: int) -> None:
            with shadow.session(f"late-{i}"):
                for n in range(calls):
                    book(n)
                    time.sleep(0.02)

        early = [threading.Thread(target=agent, args=(i, 40)) for i in range(10)]  # 0.8 s: across the load
        for t in early:
            t.start()
        flags.ready.wait(5)
        late = [threading.Thread(target=agent, args=(i, 5)) for i in range(10, 20)]  # start after the load
        for t in late:
            t.start()
        for t in early + late:
            t.join()
        flags.state_now = FlagState(Mode.CUTOVER, 99)  # a new percentage: the held sessions follow it
        with shadow.session("late-0"):
            book(99)
        assert shadow.flush(10)
    by_session: dict[str, list[tuple[int, str, str | None]]] = {}
    for r in store.records.values():
        if isinstance(r, CallRecord):
            by_session.setdefault(r.session_id, []).append((r.seq, r.variant, r.flag_source))
    first = sorted(by_session.pop("late-0"))
    assert {v for _s, v, _f in first[:-1]} == {"legacy"} and first[-1][1] == "structured"
    for sid, calls in by_session.items():
        variants = {v for _s, v, _f in calls}
        assert variants == ({"legacy"} if int(sid.split("-")[1]) < 10 else {"structured"}), sid
    assert {f for _s, _v, f in first[:-1]} == {"late"}
