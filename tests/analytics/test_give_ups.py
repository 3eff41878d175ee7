"""A guard on giving up: a structured arm that loops less because its sessions end after errors is no win."""

from __future__ import annotations

import datetime as dt
import random
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


def _traffic(url: str, *, structured_quit: float, sessions: int = 400, seed: int = 3) -> None:
    """Shadow traffic, then a 50% cutover; after an error the legacy arm loops half the time, the structured arm
    rarely loops but ends the session with probability ``structured_quit``."""
    rng = random.Random(seed)
    records: list[CallRecord | MarkRecord] = []
    for s in range(sessions):
        sid = f"task-{s}"
        start = T0 + dt.timedelta(hours=s * 96 / sessions)
        variant = "structured" if start >= CUTOVER and bucket(sid) <= 50 else "legacy"
        seq, ts = 0, start
        for e in range(3):
            seq += 1
            ts += dt.timedelta(seconds=2)
            records.append(_call(sid, seq, ts, "book", f"bad{e}", "error", variant))
            quit_p, loop_p = (structured_quit, 0.05) if variant == "structured" else (0.05, 0.5)
            if rng.random() < quit_p:
                break  # the session ends right after the error
            seq += 1
            ts += dt.timedelta(seconds=2)
            again = rng.random() < loop_p
            records.append(_call(sid, seq, ts, "book", f"bad{e}" if again else f"good{e}", "ok", variant))
        records.append(MarkRecord(new_id(), sid, seq + 1, ts + dt.timedelta(seconds=2), "end", "p", "h"))
    SqlStore(url).write(records)
    with db.engine(url).begin() as conn:
        conn.execute(insert(tables.flag_audit), [
            _audit("book", T0 - dt.timedelta(hours=1), None, ("shadow", 100)),
            _audit("book", CUTOVER, ("shadow", 100), ("cutover", 50)),
        ])


def _report(tmp_path: Path, structured_quit: float):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/calls.db"
    _traffic(url, structured_quit=structured_quit)
    wh = Warehouse.open(tmp_path / "calls.duckdb")
    wh.sync(url)
    [tool] = loop_rate_report(wh).by_tool
    return tool


def test_a_structured_arm_that_loops_less_because_it_quits_more_is_not_raised(tmp_path: Path) -> None:
    tool = _report(tmp_path, structured_quit=0.6)
    assert tool.comparison.test.verdict == "structured_lower"  # the loop rate alone says: a win
    assert tool.give_ups is not None and tool.give_ups.test.verdict == "structured_higher"
    assert tool.give_ups.test.rate_b > tool.give_ups.test.rate_a
    assert tool.recommendation is not None and tool.recommendation.action == "hold"
    assert "not a win" in " ".join(tool.recommendation.reasons)


def test_a_structured_arm_that_loops_less_without_quitting_more_is_raised(tmp_path: Path) -> None:
    tool = _report(tmp_path, structured_quit=0.05)
    assert tool.comparison.test.verdict == "structured_lower"
    assert tool.give_ups is not None and tool.give_ups.test.verdict != "structured_higher"
    assert tool.recommendation is not None and tool.recommendation.action == "raise"
