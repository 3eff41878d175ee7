"""The cutover gate: readiness from the call log, on SQLite and PostgreSQL, and the `shadow ready` command."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert
from typer.testing import CliRunner

import shadow
from shadow._ids import new_id
from shadow.analytics._ready import StoreMissing, codes_for_tool, load_proposed, readiness
from shadow.analytics._thresholds import Thresholds
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables
from shadow.calllog._records import CallRecord
from shadow.calllog._store import SqlStore
from shadow.cli import ExitCode, app
from shadow.contract._codes import Code
from shadow.contract._payloads import ToolError, ok
from shadow.inventory._run import emit_rules, inventory
from shadow.testing import InMemoryFlags, recording

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


def _record(tool: str, n: int, *, code: str | None = None, unmapped: bool = False, valid: bool = True,
            payload: Any = None) -> CallRecord:
    error = ToolError.of(code) if code else None
    new_payload = payload if payload is not None else (error.payload() if error else ok({"n": n}))
    return CallRecord(
        id=new_id(), session_id=f"s{n % 7}", seq=n, ts=T0 + dt.timedelta(seconds=n), tool=tool, mode="shadow",
        variant="legacy", fingerprint=f"{n:032x}", arg_hashes=None, args={"n": n},
        outcome="error" if code else "ok", legacy_payload={"error": "x"} if code else {"n": n},
        new_payload=new_payload, code=code, retryable=error.retryable if error else None,
        next_action=error.next_action.value if error else None, retry_after_ms=None, error_field=None,
        rule=None if unmapped else "r", unmapped=unmapped, schema_valid=valid, latency_us=100, process="p",
        host="h",
    )


def _store(url: str, records: list[CallRecord]) -> str:
    engine = db.engine(url)
    tables.metadata.create_all(engine)
    if records:
        with engine.begin() as conn:
            conn.execute(insert(tables.calls), [r.to_row() for r in records])
    return url


def _traffic(tool: str = "get_user", *, calls: int = 240, errors: dict[str, int] | None = None,
             unmapped: int = 0, invalid: int = 0, leaky: int = 0) -> list[CallRecord]:
    errors = errors if errors is not None else {"not_found": 20, "rate_limited": 5}
    out: list[CallRecord] = []
    n = 0
    for code, count in errors.items():
        for _ in range(count):
            out.append(_record(tool, n, code=code))
            n += 1
    for _ in range(unmapped):
        out.append(_record(tool, n, code="internal_error", unmapped=True))
        n += 1
    for _ in range(invalid):
        out.append(_record(tool, n, code="not_found", valid=False))
        n += 1
    for _ in range(leaky):
        bad = ToolError.of("internal_error").payload()
        bad["error"]["message"] = 'Traceback (most recent call last): File "/srv/app/tools.py", line 3'
        out.append(_record(tool, n, code="internal_error", payload=bad))
        n += 1
    while n < calls:
        out.append(_record(tool, n))
        n += 1
    return out


def test_a_tool_with_enough_clean_traffic_is_ready(db_url: str) -> None:
    url = _store(db_url, _traffic() + _traffic("other_tool", calls=10, errors={}))
    result = readiness(url, "get_user")
    assert result.ready, result.explain()
    assert (result.calls, result.errors, result.unmapped, result.schema_invalid, result.leak_count) == (240, 25, 0, 0, 0)
    assert result.codes_seen == {"not_found": 20, "rate_limited": 5}
    assert result.reasons == ()
    assert result.first_call == T0
    assert result.last_call == T0 + dt.timedelta(seconds=239)


def test_too_few_calls_or_errors_is_not_ready_and_says_how_many_are_needed(db_url: str) -> None:
    url = _store(db_url, _traffic(calls=50, errors={"not_found": 3}))
    result = readiness(url, "get_user")
    assert not result.ready
    failed = {c.name for c in result.checks if not c.passed}
    assert failed == {"calls", "errors"}
    assert any("at least 200" in r for r in result.reasons)
    assert any("at least 20" in r for r in result.reasons)
    assert readiness(url, "get_user", Thresholds(min_calls=50, min_errors=3)).ready


def test_unmapped_share_above_the_limit_blocks_cutover(db_url: str) -> None:
    url = _store(db_url, _traffic(errors={"not_found": 18}, unmapped=2))
    result = readiness(url, "get_user")
    assert result.unmapped == 2
    assert result.unmapped_share == pytest.approx(0.1)
    assert [c.name for c in result.checks if not c.passed] == ["unmapped_share"]
    assert "2 of 20 errors (10.0%)" in result.reasons[0]
    assert readiness(url, "get_user", Thresholds(max_unmapped_share=0.1)).ready


def test_schema_invalid_payloads_and_leaks_block_cutover(db_url: str) -> None:
    url = _store(db_url, _traffic(invalid=1, leaky=2))
    result = readiness(url, "get_user")
    assert result.schema_invalid == 1
    assert result.leak_count == 2
    assert len(result.leaks) == 2
    assert any("Traceback" in text for text in result.leaks[0].found)
    assert {c.name for c in result.checks if not c.passed} == {"schema_invalid", "leaks"}
    assert readiness(url, "get_user", Thresholds(max_schema_invalid=1, max_leaks=2)).ready


def test_paths_in_success_data_are_not_counted_as_leaks(db_url: str) -> None:
    records = _traffic()
    records[-1] = _record("get_user", 239, payload=ok({"file": "/home/alice/report.txt"}))
    assert readiness(_store(db_url, records), "get_user").leak_count == 0


def test_a_path_the_model_already_read_in_legacy_is_no_leak_but_one_from_an_unseen_exception_is(db_url: str) -> None:
    """LangChain's file tools return "Error: Access denied to file_path: /etc/hostname ...": cutover serves those
    words, which the model read in legacy, so they are no new leak; a path from an exception it never saw is."""
    import dataclasses

    said = "Access denied to file_path: /etc/hostname. Permission granted exclusively to the current working directory"
    served = ToolError.of("permission_denied", said).payload()
    records = _traffic()
    records[-1] = dataclasses.replace(_record("get_user", 239, code="permission_denied", payload=served),
                                      legacy_payload="Error: " + said)
    assert readiness(_store(db_url, records), "get_user").leak_count == 0
    other = _traffic("other")
    unseen = dataclasses.replace(records[-1], id=new_id(), tool="other",
                                 legacy_payload={"exception": "PermissionError", "message": said})
    shown = dataclasses.replace(unseen, id=new_id(), legacy_payload={**unseen.legacy_payload, "shown": True})
    result = readiness(_store(db_url, [*other[:-2], shown, unseen]), "other")
    assert result.leak_count == 1
    assert result.leaks[0].call_id == unseen.id
    assert "never read in legacy" in next(c.advice for c in result.checks if c.name == "leaks")


def test_proposed_codes_from_an_inventory_are_checked_against_traffic(db_url: str, tmp_path: Path) -> None:
    url = _store(db_url, _traffic(errors={"not_found": 20, "upstream_timeout": 4}))
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"sites": [
        {"tool": "get_user", "code": "not_found"}, {"tool": "get_user", "code": "permission_denied"},
        {"tool": "get_user", "code": None}, {"tool": "other", "code": "conflict"},
    ]}))
    result = readiness(url, "get_user", inventory=inventory)
    assert result.proposed == ("not_found", "permission_denied")
    assert result.proposed_seen == ("not_found",)
    assert result.proposed_unseen == ("permission_denied",)
    assert result.not_proposed == ("upstream_timeout",)
    assert result.ready  # informational unless required
    strict = readiness(url, "get_user", Thresholds(require_proposed=True), inventory=inventory)
    assert not strict.ready
    assert "permission_denied" in strict.reasons[0]


def test_since_limits_the_calls_counted(db_url: str) -> None:
    url = _store(db_url, _traffic())
    result = readiness(url, "get_user", since=T0 + dt.timedelta(seconds=200))
    assert result.calls == 40
    assert result.errors == 0


def test_an_unknown_tool_names_the_tools_the_log_has(db_url: str) -> None:
    url = _store(db_url, _traffic("search", calls=5, errors={}))
    result = readiness(url, "serach")
    assert not result.ready
    assert result.calls == 0
    assert result.other_tools == ("search",)
    assert "tools in the log: search" in result.reasons[0]


def test_a_missing_store_is_reported_with_the_remedy(tmp_path: Path) -> None:
    with pytest.raises(StoreMissing, match="shadow db upgrade"):
        readiness(f"sqlite:///{tmp_path}/nothing.db", "t")
    assert not (tmp_path / "nothing.db").exists()
    empty = f"sqlite:///{tmp_path}/empty.db"
    db.engine(empty).connect().close()
    with pytest.raises(StoreMissing, match="no call log"):
        readiness(empty, "t")


def test_codes_for_tool_joins_logged_and_proposed_codes_in_table_order(db_url: str) -> None:
    url = _store(db_url, _traffic(errors={"rate_limited": 2, "not_found": 1}))
    assert codes_for_tool(url, "get_user") == [Code.NOT_FOUND, Code.RATE_LIMITED, Code.INTERNAL_ERROR]
    inventory = {"sites": [{"tool": "get_user", "code": "validation_error"}]}
    assert codes_for_tool(url, "get_user", inventory) == [
        Code.VALIDATION_ERROR, Code.NOT_FOUND, Code.RATE_LIMITED, Code.INTERNAL_ERROR]
    assert codes_for_tool(url, "nobody") == [Code.INTERNAL_ERROR]


def test_bad_thresholds_and_bad_inventories_say_how_to_fix_them(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fraction"):
        Thresholds(max_unmapped_share=5)
    with pytest.raises(ValueError, match="min_calls"):
        Thresholds(min_calls=-1)
    with pytest.raises(ValueError, match="does not exist"):
        load_proposed(tmp_path / "none.json", "t")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not readable JSON"):
        load_proposed(tmp_path / "bad.json", "t")
    with pytest.raises(ValueError, match="'sites'"):
        load_proposed({"tools": []}, "t")


runner = CliRunner()


def test_the_ready_command_exits_zero_when_ready_and_prints_json(db_url: str) -> None:
    url = _store(db_url, _traffic())
    result = runner.invoke(app, ["ready", "get_user", "--db-url", url, "--format", "json"])
    assert result.exit_code == ExitCode.OK, result.output
    data = json.loads(result.stdout)
    assert data["ready"] is True
    assert data["calls"] == 240
    assert data["codes_seen"] == {"not_found": 20, "rate_limited": 5}
    assert data["reasons"] == []


def test_the_ready_command_exits_failed_with_reasons_when_not_ready(sqlite_url: str) -> None:
    url = _store(sqlite_url, _traffic(errors={"not_found": 18}, unmapped=2))
    result = runner.invoke(app, ["ready", "get_user", "--db-url", url])
    assert result.exit_code == ExitCode.FAILED
    assert "NOT READY" in result.stdout
    assert "unmapped" in result.stdout
    relaxed = runner.invoke(app, ["ready", "get_user", "--db-url", url, "--max-unmapped-share", "0.2",
                                  "--min-calls", "10", "--min-errors", "5"])
    assert relaxed.exit_code == ExitCode.OK, relaxed.output


def test_the_ready_command_rejects_bad_input_with_usage_errors(tmp_path: Path, sqlite_url: str) -> None:
    missing = runner.invoke(app, ["ready", "t", "--db-url", f"sqlite:///{tmp_path}/none.db"])
    assert missing.exit_code == ExitCode.USAGE
    assert "shadow db upgrade" in missing.stderr
    url = _store(sqlite_url, _traffic())
    bad = runner.invoke(app, ["ready", "get_user", "--db-url", url, "--max-unmapped-share", "3"])
    assert bad.exit_code == ExitCode.USAGE
    assert "fraction" in bad.stderr
    no_inv = runner.invoke(app, ["ready", "get_user", "--db-url", url, "--inventory", str(tmp_path / "x.json")])
    assert no_inv.exit_code == ExitCode.USAGE
    assert "shadow inventory" in no_inv.stderr


# ---------------------------------------------------------------- a store built through the adapter

FIXTURES = Path(__file__).parents[1] / "fixtures" / "inventory"


@pytest.fixture
def logged(db_url: str) -> Iterator[str]:
    with recording(SqlStore(db_url)):
        yield db_url


@pytest.fixture
def fixture_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Path]]:
    """The rules module `shadow inventory` writes for the fixture tool layers, imported, and its JSON file."""
    found = inventory([FIXTURES])
    target = tmp_path / "fixture_rules.py"
    target.write_text(emit_rules(found))
    listing = tmp_path / "inventory.json"
    listing.write_text(json.dumps(found.to_dict()))
    monkeypatch.syspath_prepend(str(FIXTURES))
    spec = importlib.util.spec_from_file_location("fixture_rules", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module.RULES, listing
    for name in [n for n in sys.modules if n.split(".")[0] in {"plainpkg", "classtools", "webtools"}]:
        del sys.modules[name]


def test_readiness_of_a_store_built_through_the_adapter_with_inventory_rules(
    logged: str, fixture_rules: tuple[Any, Path]
) -> None:
    from plainpkg import tools

    rules, listing = fixture_rules
    flags = InMemoryFlags({"get_user": "shadow", "risky": "shadow"})
    get_user = shadow.tool(name="get_user", rules=rules, flags=flags)(tools.get_user)
    risky = shadow.tool(name="risky", rules=rules, flags=flags)(tools.risky)
    for n in range(60):
        with shadow.session(f"task-{n % 6}"):
            if n % 3 == 0:
                with pytest.raises(tools.store.UserNotFound):  # shadow mode: the legacy exception, unchanged
                    get_user(f"nobody-{n}")
            else:
                assert get_user("u1") == {"id": "u1", "name": "Ada"}
            if n % 10 == 0:
                with pytest.raises(tools.Mystery):
                    risky(1)
            else:
                assert risky(3) == 0
    assert shadow.flush(30)

    verdict = readiness(logged, "get_user", Thresholds(min_calls=60, min_errors=20), inventory=listing)
    assert verdict.ready, verdict.explain()
    assert (verdict.calls, verdict.errors, verdict.unmapped, verdict.schema_invalid) == (60, 20, 0, 0)
    assert verdict.codes_seen == {"not_found": 20}
    assert verdict.proposed == ("not_found",)
    assert verdict.proposed_unseen == ()
    assert codes_for_tool(logged, "get_user", listing) == [Code.NOT_FOUND, Code.INTERNAL_ERROR]

    blocked = readiness(logged, "risky", Thresholds(min_calls=60, min_errors=6), inventory=listing)
    assert not blocked.ready
    assert (blocked.errors, blocked.unmapped) == (6, 6)
    assert [c.name for c in blocked.checks if not c.passed] == ["unmapped_share"]
    assert blocked.proposed == ()  # both of risky's sites are unplaced: nothing to propose
    assert blocked.leak_count == 0


def test_an_inventory_file_is_read_within_a_bound_never_a_device_or_a_huge_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow.analytics import _ready

    if Path("/dev/zero").exists():
        with pytest.raises(ValueError, match="inventory file /dev/zero is not readable JSON.*not a regular file"):
            load_proposed("/dev/zero", "lookup")
    monkeypatch.setattr(_ready, "MAX_INVENTORY_BYTES", 1024)
    big = tmp_path / "inventory.json"
    big.write_text(json.dumps({"sites": [{"tool": "lookup", "code": "not_found"}] * 100}), encoding="utf-8")
    with pytest.raises(ValueError, match="over 1024 bytes"):
        load_proposed(big, "lookup")
