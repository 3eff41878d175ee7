"""The give-up guard's other two shares: sessions that end within a few calls of an error, and `stop` served."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from sqlalchemy import insert
from test_report import CUTOVER, T0, _audit, _call

from shadow._ids import new_id
from shadow.analytics._report import loop_rate_report
from shadow.analytics._warehouse import Warehouse
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.calllog._store import SqlStore
from shadow.flags._db import bucket

ROOT = Path(__file__).resolve().parents[2]


def _traffic(url: str, *, obeys_stop: bool, sessions: int = 600, seed: int = 5) -> None:
    """Shadow traffic, then a 50% cutover of ``book``. Half the errors are ``permission_denied`` (next_action
    ``stop``, logged in both arms). The legacy arm loops after half the errors and carries on; the structured arm
    loops as often after the other errors, and when ``obeys_stop`` it answers a ``stop`` by one last call to
    another tool, then ends the session: no loop, and no give-up *right after* the error."""
    rng = random.Random(seed)
    records: list[CallRecord | MarkRecord] = []
    for s in range(sessions):
        sid = f"task-{s}"
        start = T0 + dt.timedelta(hours=s * 96 / sessions)
        variant = "structured" if start >= CUTOVER and bucket(sid) <= 50 else "legacy"
        seq, ts = 0, start

        def add(tool: str, fp: str, outcome: str, sid: str = sid, variant: str = variant, **extra: object) -> None:
            nonlocal seq, ts
            seq += 1
            ts += dt.timedelta(seconds=2)
            records.append(_call(sid, seq, ts, tool, fp, outcome, variant, **extra))

        quit_task = False
        for e in range(3):
            stop = rng.random() < 0.5
            extra = {"code": "permission_denied", "next_action": "stop"} if stop else {"next_action": "retry"}
            add("book", f"bad{e}", "error", **extra)
            if stop and obeys_stop and variant == "structured" and rng.random() < 0.8:
                add("notify", f"sorry{e}", "ok")
                quit_task = True
                break
            again = rng.random() < 0.5
            add("book", f"bad{e}" if again else f"good{e}", "ok")
            for k in range(4):  # the task goes on well past the error
                add("search", f"s{e}{k}", "ok")
        if not quit_task:
            for k in range(4):
                add("search", f"tail{k}", "ok")
        records.append(MarkRecord(new_id(), sid, seq + 1, ts + dt.timedelta(seconds=2), "end", "p", "h"))
    SqlStore(url).write(records)
    with db.engine(url).begin() as conn:
        conn.execute(insert(tables.flag_audit), [
            _audit("book", T0 - dt.timedelta(hours=1), None, ("shadow", 100)),
            _audit("book", CUTOVER, ("shadow", 100), ("cutover", 50)),
        ])


def _book(tmp_path: Path, *, obeys_stop: bool):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/calls.db"
    _traffic(url, obeys_stop=obeys_stop)
    with Warehouse.open(tmp_path / "calls.duckdb") as wh:
        wh.sync(url)
        report = loop_rate_report(wh, tool="book")
    [tool] = [t for t in report.by_tool if t.tool == "book"]
    return url, tool


def test_a_loop_rate_that_falls_because_stop_ends_the_task_is_not_raised(tmp_path: Path) -> None:
    _, tool = _book(tmp_path, obeys_stop=True)
    assert tool.comparison.design == "randomised"
    assert tool.comparison.test.verdict == "structured_lower"  # the loop rate alone says: a win
    # one more call after the error: the give-up share of "ended right after an error" does not see it
    assert tool.give_ups is not None and tool.give_ups.test.verdict != "structured_higher"
    assert tool.ended_soon is not None and tool.ended_soon.test.verdict == "structured_higher"
    assert tool.stop_quits is not None and tool.stop_quits.test.verdict == "structured_higher"
    assert tool.stop_quits.test.rate_a is not None and tool.stop_quits.test.rate_a < 0.02
    assert tool.stop_quits.test.rate_b is not None and tool.stop_quits.test.rate_b > 0.2
    assert tool.recommendation is not None and tool.recommendation.action == "hold"
    reasons = " ".join(tool.recommendation.reasons)
    assert "next_action stop" in reasons and "within 3 calls" in reasons and "not a win" in reasons


def test_a_structured_arm_that_carries_on_after_stop_is_raised(tmp_path: Path) -> None:
    _, tool = _book(tmp_path, obeys_stop=False)
    assert tool.comparison.test.verdict != "structured_higher"
    for quits in (tool.give_ups, tool.ended_soon, tool.stop_quits):
        assert quits is not None and quits.test.verdict != "structured_higher"
    assert tool.stop_quits is not None and tool.stop_quits.test.rate_b is not None
    assert tool.stop_quits.test.rate_b < 0.02


def test_the_report_shows_each_give_up_share_per_arm_with_its_interval(tmp_path: Path) -> None:
    url, _ = _book(tmp_path, obeys_stop=True)
    env = {**os.environ, "SHADOW_DB_URL": url, "SHADOW_WAREHOUSE": str(tmp_path / "cli.duckdb"),
           "PYTHONPATH": str(ROOT)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "shadow.cli", "report", "loop-rate", "--tool", "book", *args],
                              cwd=tmp_path, env=env, text=True, capture_output=True, timeout=300, check=False)

    found = cli("--format", "json", "--give-up-within", "2")
    assert found.returncode == 0, found.stderr
    [book] = [t for t in json.loads(found.stdout)["by_tool"] if t["tool"] == "book"]
    assert book["recommendation"]["action"] == "hold"
    for key in ("give_ups", "ended_soon", "stop_quits"):
        assert {"rate_a", "rate_b", "ci_low", "ci_high", "verdict"} <= set(book[key]["test"])
    assert "within 2 calls" in book["stop_quits"]["test"]["message"]
    assert json.loads(found.stdout)["methods"]["recommendation"]["give_up_within"] == 2
    text = cli("--no-sync")
    assert text.returncode == 0, text.stderr
    flat = " ".join(text.stdout.split())
    assert ("give-ups: sessions ended within 3 calls of an error, without a later success of the tool, significantly "
            "more often in the structured arm") in flat
    assert "next_action stop after which the session ended within 3 calls" in flat
    assert flat.count("(95% CI ") >= 6  # each share per arm with its interval


def _efficient(url: str, sessions: int = 600) -> None:
    """After an error of ``cancel``, the legacy arm repeats the call twice, then repairs it, then does a few more
    calls; the structured arm repairs it at once and ends two calls later: sooner after the error, and done."""
    records: list[CallRecord | MarkRecord] = []
    for s in range(sessions):
        sid = f"task-{s}"
        start = T0 + dt.timedelta(hours=s * 96 / sessions)
        variant = "structured" if start >= CUTOVER and bucket(sid) <= 50 else "legacy"
        calls: list[tuple[str, str, str]] = [("search", "s0", "ok"), ("cancel", "bad", "error")]
        if variant == "legacy":
            calls += [("cancel", "bad", "error"), ("cancel", "bad", "error"), ("cancel", "good", "ok"),
                      ("search", "s1", "ok"), ("search", "s2", "ok"), ("notify", "n", "ok")]
        else:
            calls += [("cancel", "good", "ok"), ("notify", "n", "ok")]
        ts = start
        for seq, (tool, fp, outcome) in enumerate(calls, 1):
            ts += dt.timedelta(seconds=2)
            extra = {"code": "validation_error", "next_action": "ask_user"} if outcome == "error" else {}
            records.append(_call(sid, seq, ts, tool, fp, outcome, variant, **extra))
        records.append(MarkRecord(new_id(), sid, len(calls) + 1, ts + dt.timedelta(seconds=2), "end", "p", "h"))
    SqlStore(url).write(records)
    with db.engine(url).begin() as conn:
        conn.execute(insert(tables.flag_audit), [
            _audit("cancel", T0 - dt.timedelta(hours=1), None, ("shadow", 100)),
            _audit("cancel", CUTOVER, ("shadow", 100), ("cutover", 50)),
        ])


def test_an_arm_that_gets_past_its_errors_sooner_is_not_held_for_ending_sooner(tmp_path: Path) -> None:
    """An outside check's layer: every session succeeded after its error and ended, the structured arm two calls
    after it (no loop), the legacy arm further on (after its repeats); "ended within 3 calls" held the tool."""
    url = f"sqlite:///{tmp_path}/calls.db"
    _efficient(url)
    with Warehouse.open(tmp_path / "calls.duckdb") as wh:
        wh.sync(url)
        report = loop_rate_report(wh, tool="cancel")
    [tool] = [t for t in report.by_tool if t.tool == "cancel"]
    assert tool.comparison.test.verdict == "structured_lower"
    assert tool.ended_soon is not None and tool.ended_soon.test.rate_b == 0.0
    assert tool.recommendation is not None and tool.recommendation.action == "raise", tool.recommendation.reasons
