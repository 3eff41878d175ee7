"""Evidence and log health in the report: example pairs never leak a secret, unmapped shapes group, gaps count."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from shadow._ids import new_id
from shadow.analytics._evidence import MAX_EXAMPLE_BYTES, shape
from shadow.analytics._report import loop_rate_report
from shadow.analytics._warehouse import Warehouse
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.calllog._store import SqlStore

T0 = dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)
SECRETS = (
    "sk-ant-api03-Zm9vYmFyYmF6cXV4cXV1eA",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "hunter2-correct-horse",
    "s3cr3t-db-pass",
    "Zx9vQm4tLkJhYmNkZWZn",
)


def _call(sid: str, seq: int, tool: str, outcome: str, **extra: Any) -> CallRecord:
    fields: dict[str, Any] = {
        "id": new_id(), "session_id": sid, "seq": seq, "ts": T0 + dt.timedelta(seconds=seq), "tool": tool,
        "mode": "shadow", "variant": "legacy", "fingerprint": f"f{seq}", "arg_hashes": None, "args": None,
        "outcome": outcome, "legacy_payload": None, "new_payload": None,
        "code": "internal_error" if outcome == "error" else None, "retryable": None, "next_action": None,
        "retry_after_ms": None, "error_field": None, "rule": None, "unmapped": False, "schema_valid": True,
        "latency_us": 1000, "process": "worker-1", "host": "h1",
    }
    fields.update(extra)
    return CallRecord(**fields)


def _secret_payloads(i: int) -> tuple[object, object]:
    legacy = {
        "error": f"auth failed for Bearer {SECRETS[5]}xyzxyz with sk key {SECRETS[0]}",
        "password": SECRETS[4],
        "api_key": SECRETS[2],
        "detail": f"postgresql://app:{SECRETS[5]}@db.internal:5432/prod token={SECRETS[6]} {SECRETS[1]}",
        "jwt": SECRETS[3],
        "n": i,
    }
    structured = {"ok": False, "error": {"code": "unauthenticated", "message": f"bad credentials {SECRETS[1]}",
                                         "retryable": False, "next_action": "ask_user",
                                         "context": {"authorization": f"Bearer {SECRETS[3]}", "seen": SECRETS[0]}}}
    return legacy, structured


def test_evidence_examples_never_leak_a_secret_and_are_capped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    records = []
    for i in range(12):
        legacy, structured = _secret_payloads(i)
        records.append(_call(f"s{i}", 1, "login", "error", code="unauthenticated", legacy_payload=legacy,
                             new_payload=structured, args={"user": "ana", "pwd": SECRETS[4]}))
        records.append(_call(f"s{i}", 2, "login", "error", unmapped=True,
                             legacy_payload={"error": f"weird failure {i} key {SECRETS[0]} " + "x" * 2000}))
    SqlStore(url).write(records)
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        report = loop_rate_report(wh)
    text = report.to_json()
    for secret in SECRETS:
        assert secret not in text, secret
    tool = report.by_tool[0]
    assert tool.evidence is not None
    by_code = {c.code: c for c in tool.evidence.codes}
    assert set(by_code) == {"unauthenticated", "internal_error"}
    assert len(by_code["unauthenticated"].examples) == 3  # capped at three distinct examples
    for example in by_code["internal_error"].examples:
        assert len(json.dumps(example.legacy)) <= MAX_EXAMPLE_BYTES + 100
    assert next(u.errors for u in tool.evidence.unmapped) == 12  # one shape: the numbers masked


def test_shape_masks_what_varies_and_keeps_the_words() -> None:
    a = shape("no such user 'anna' (id 1234) at /srv/app/users.py, see https://x.example/u?id=9")
    b = shape("no such user 'bob' (id 77) at /srv/app/other.py, see https://x.example/u?id=10")
    assert a == b == "no such user '<user>' (id <id>) at <path>, see <url>"
    assert shape("request 0b7c1e7e-8a37-4e1a-9b7e-2b1f1c3d4e5f failed") == "request <id> failed"
    assert shape(f"key {SECRETS[0]}") == "key <secret>"


def test_the_reports_unmapped_shapes_are_the_shapes_rules_suggest_groups_by(tmp_path: Path) -> None:
    from shadow.suggest import shape_of

    texts = [f"Invalid time: {h:02d}:30 does not exist in Europe/Berlin on 2027-03-{d:02d} (a clock change)"
             for h, d in ((2, 28), (2, 29), (3, 30))]
    texts += [f'No item found with id {new_id()}, status code 404 for "{name}"' for name in ("a", "b")]
    raised = [{"exception": "KeyError", "message": f"no room '{room}' on floor {floor}"}  # the adapter's shape
              for room, floor in (("a1", 2), ("b7", 3))]
    url = f"sqlite:///{tmp_path}/calls.db"
    SqlStore(url).write([_call(f"s{i}", 1, "book", "error", unmapped=True, legacy_payload=payload)
                         for i, payload in enumerate([*texts, *raised])])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        evidence = loop_rate_report(wh).by_tool[0].evidence
    assert evidence is not None
    got = {u.shape: u.errors for u in evidence.unmapped}
    assert got == {shape_of(texts[0]).text: 3, shape_of(texts[3]).text: 2,  # dates, times and ids masked alike
                   f"KeyError: {shape_of(raised[0]['message']).text}": 2}  # the text, not the payload's JSON
    assert shape_of(texts[0]).text == "Invalid time: <time> does not exist in <path> on <date> (a clock change)"


def test_health_counts_sequence_gaps_and_when_each_process_last_wrote(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    SqlStore(url).write([
        _call("whole", 1, "t", "ok"), _call("whole", 2, "t", "ok"),
        MarkRecord(new_id(), "whole", 3, T0 + dt.timedelta(seconds=3), "end", "worker-1", "h1"),
        _call("holed", 1, "t", "ok", process="worker-2", host="h2"),
        _call("holed", 4, "t", "error", process="worker-2", host="h2"),  # seq 2 and 3 never arrived
    ])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        health = loop_rate_report(wh).health
        assert health is not None
        assert (health.sessions, health.sessions_with_gaps, health.missing_records) == (2, 1, 2)
        assert not health.writer_counters and health.dropped is None and "not recorded" in health.message
        last = {(p.process, p.host): p.last_write for p in health.processes}
        assert last == {("worker-1", "h1"): (T0 + dt.timedelta(seconds=3)).replace(tzinfo=None),
                        ("worker-2", "h2"): (T0 + dt.timedelta(seconds=4)).replace(tzinfo=None)}
        wh.con.execute("CREATE OR REPLACE TABLE writer_stats (process VARCHAR, host VARCHAR, written BIGINT, "
                       "spooled BIGINT, replayed BIGINT, dropped BIGINT, updated_at TIMESTAMP)")
        wh.con.execute("INSERT INTO writer_stats VALUES ('worker-2', 'h2', 10, 4, 3, 2, TIMESTAMP '2025-03-10 09:00')")
        counted = loop_rate_report(wh).health
    assert counted is not None and counted.writer_counters
    assert (counted.written, counted.spooled, counted.replayed, counted.dropped) == (10, 4, 3, 2)
    worker2 = next(p for p in counted.processes if p.process == "worker-2")
    assert worker2.dropped == 2 and next(p for p in counted.processes if p.process == "worker-1").dropped is None


@pytest.mark.parametrize("text", ["", "plain words only"])
def test_shape_of_text_without_variables_is_the_text(text: str) -> None:
    assert shape(text) == text
