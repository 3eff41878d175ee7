"""Session sequence counters: least recently used eviction, and a restart that never reads as earlier events."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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
                    shadow.mark("end")
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
