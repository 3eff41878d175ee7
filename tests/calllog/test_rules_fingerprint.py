"""Which rules translated a call: ``Rules.fingerprint``, computed once per Rules object, stored with every call in
``calls.rules_fingerprint`` (NULL for the rows logged before it)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, insert, select

import shadow
from shadow._ids import new_id
from shadow.calllog import _migrate as migrate
from shadow.calllog._records import CallRecord
from shadow.calllog._store import SqlStore
from shadow.calllog._tables import calls
from shadow.contract import _rules

REPO = Path(__file__).resolve().parents[2]


class OrderRejected(Exception):
    pass


def test_equal_rules_share_a_fingerprint_and_any_rule_changes_it() -> None:
    base = shadow.Rules.default()
    assert base.fingerprint == shadow.Rules.default().fingerprint
    assert len(base.fingerprint) == 12 and int(base.fingerprint, 16) >= 0
    fixed = base.on(KeyError, "not_found", name="missing")
    assert fixed.fingerprint == base.on(KeyError, "not_found", name="missing").fingerprint
    others = [
        fixed,
        base.on(KeyError, "conflict", name="missing"),  # the code
        base.on(KeyError, "not_found", name="missing", pattern="order"),  # the pattern
        base.on(KeyError, "not_found", name="gone"),  # the name
        base.on(OrderRejected, "not_found", name="missing"),  # what it matches
        base.on_result("runs on Sundays", "failed_precondition"),
        base.on_result("runs on Mondays", "failed_precondition"),
        base.shown(OrderRejected),
        shadow.Rules.empty(),
    ]
    assert len({r.fingerprint for r in others} | {base.fingerprint}) == len(others) + 1


def test_the_fingerprint_is_computed_once_per_rules_object(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    real = _rules.fingerprint

    def counting(*parts: Any, text_is_data: bool = False) -> str:
        made.append(parts)
        return real(*parts, text_is_data=text_is_data)

    monkeypatch.setattr(_rules, "fingerprint", counting)
    rules = shadow.Rules.default().on(KeyError, "not_found")
    parts = (rules.exception_rules, rules.result_rules, rules.shown_types)
    assert {rules.fingerprint for _ in range(1000)} == {real(*parts)}
    assert made == [parts]


LOG = """
import json, shadow

FIX = shadow.Rules.default().on(KeyError, "not_found", "No such order.")

@shadow.tool
def plain(i: int):
    raise KeyError(i)

@shadow.tool(rules=FIX)
def fixed(i: int):
    if i % 2:
        raise KeyError(i)
    return {"ok": i}

for i in range(6):
    for tool in (plain, fixed):
        try:
            tool(i)
        except KeyError:
            pass
shadow.flush()
print(json.dumps({"plain": shadow.Rules.default().fingerprint, "fixed": FIX.fingerprint}))
"""


def test_each_call_stores_the_fingerprint_of_the_rules_that_translated_it(db_url: str, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(textwrap.dedent(LOG))
    env = {**os.environ, "SHADOW_DB_URL": db_url, "SHADOW_FLAGS": "*=shadow", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=env, check=True, timeout=120,
                          capture_output=True, text=True)
    expected = json.loads(done.stdout.splitlines()[-1])
    assert expected["plain"] != expected["fixed"]
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(calls.c.tool, calls.c.outcome, calls.c.rules_fingerprint)).all()
    finally:
        engine.dispose()
    assert len(rows) == 12
    assert {(tool, fp) for tool, _, fp in rows} == {("plain", expected["plain"]), ("fixed", expected["fixed"])}
    assert {outcome for tool, outcome, _ in rows if tool == "fixed"} == {"ok", "error"}  # successes too


def _record(**extra: object) -> CallRecord:
    fields: dict[str, object] = {
        "id": new_id(), "session_id": "s", "seq": 1, "ts": dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
        "tool": "book", "mode": "shadow", "variant": "legacy", "fingerprint": "f", "arg_hashes": None, "args": None,
        "outcome": "error", "legacy_payload": "Error: no", "new_payload": None, "code": "internal_error",
        "retryable": False, "next_action": "stop", "retry_after_ms": None, "error_field": None, "rule": None,
        "unmapped": True, "schema_valid": True, "latency_us": 1, "process": "p", "host": "h", **extra}
    return CallRecord(**fields)  # type: ignore[arg-type]


def test_rows_logged_before_the_migration_read_null_and_new_ones_their_fingerprint(db_url: str) -> None:
    migrate.upgrade(db_url, "0004")
    old = _record().to_row()
    del old["rules_fingerprint"]
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(insert(calls).values(old))
        migrate.upgrade(db_url)
        SqlStore(db_url).write([_record(seq=2, rules_fingerprint="0123456789ab")])
        with engine.connect() as conn:
            found = dict(conn.execute(select(calls.c.seq, calls.c.rules_fingerprint)).all())
    finally:
        engine.dispose()
    assert found == {1: None, 2: "0123456789ab"}
