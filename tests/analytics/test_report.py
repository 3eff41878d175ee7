"""The loop-rate report: arms, before vs after cutover, the randomised comparison, savings, JSON, and the CLI."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert
from typer.testing import CliRunner

from shadow._ids import new_id
from shadow.analytics._render import render_csv, render_table
from shadow.analytics._report import UnknownToolError, loop_rate_report, parse_time
from shadow.analytics._warehouse import Warehouse
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.calllog._store import SqlStore
from shadow.cli import app
from shadow.flags._db import bucket

T0 = dt.datetime(2025, 3, 10, 8, 0, tzinfo=dt.UTC)
CUTOVER = T0 + dt.timedelta(days=2)


def _call(sid: str, seq: int, ts: dt.datetime, tool: str, fp: str, outcome: str, variant: str,
          **extra: Any) -> CallRecord:
    fields: dict[str, Any] = {
        "id": new_id(), "session_id": sid, "seq": seq, "ts": ts, "tool": tool,
        "mode": "cutover" if ts >= CUTOVER else "shadow", "variant": variant, "fingerprint": fp,
        "arg_hashes": {"due": fp}, "args": None, "outcome": outcome, "legacy_payload": None, "new_payload": None,
        "code": "validation_error" if outcome == "error" else None, "retryable": False if outcome == "error" else None,
        "next_action": None, "retry_after_ms": None, "error_field": None, "rule": None, "unmapped": False,
        "schema_valid": True, "latency_us": 2000, "process": "p", "host": "h",
    }
    fields.update(extra)
    return CallRecord(**fields)


def _audit(tool: str, ts: dt.datetime, old: tuple[str, int] | None, new: tuple[str, int]) -> dict[str, Any]:
    return {"id": new_id(), "tool": tool, "old_mode": old[0] if old else None, "old_percent": old[1] if old else None,
            "new_mode": new[0], "new_percent": new[1], "actor": "ana", "reason": "rollout",
            "ts": ts.replace(tzinfo=None)}


def experiment(url: str, *, sessions: int = 240, legacy_loop: float = 0.5, structured_loop: float = 0.1,
               seed: int = 1) -> None:
    """Two days of shadow traffic, then a 50% cutover of ``create_task``: a randomised split by session hash."""
    rng = random.Random(seed)
    records: list[CallRecord | MarkRecord] = []
    for s in range(sessions):
        sid = f"task-{s}"
        start = T0 + dt.timedelta(hours=s * 96 / sessions)
        variant = "structured" if start >= CUTOVER and bucket(sid) <= 50 else "legacy"
        p_loop = structured_loop if variant == "structured" else legacy_loop
        seq, ts = 0, start
        for e in range(3):
            seq += 1
            ts += dt.timedelta(seconds=2)
            records.append(_call(sid, seq, ts, "create_task", f"bad{e}", "error", variant))
            seq += 1
            ts += dt.timedelta(seconds=2)
            again = rng.random() < p_loop
            records.append(_call(sid, seq, ts, "create_task", f"bad{e}" if again else f"good{e}", "ok", variant))
        seq += 1
        records.append(_call(sid, seq, ts + dt.timedelta(seconds=1), "search", "q", "ok", variant))
        records.append(MarkRecord(new_id(), sid, seq + 1, ts + dt.timedelta(seconds=2), "end", "p", "h"))
    SqlStore(url).write(records)
    with db.engine(url).begin() as conn:
        conn.execute(insert(tables.flag_audit), [
            _audit("create_task", T0 - dt.timedelta(hours=1), None, ("shadow", 100)),
            _audit("create_task", CUTOVER, ("shadow", 100), ("cutover", 50)),
        ])


@pytest.fixture
def synced(tmp_path: Path) -> Warehouse:
    url = f"sqlite:///{tmp_path}/calls.db"
    experiment(url)
    wh = Warehouse.open(tmp_path / "calls.duckdb")
    wh.sync(url)
    return wh


def test_a_randomised_cutover_with_fewer_loops_is_detected_with_a_clustered_test(synced: Warehouse) -> None:
    report = loop_rate_report(synced)
    comparison = report.comparison.test
    assert report.comparison.design == "randomised"
    assert comparison.verdict == "structured_lower"
    assert comparison.difference is not None and comparison.ci_high is not None and comparison.ci_high < 0
    assert comparison.p_value is not None and comparison.p_value < 0.01
    tool = next(t for t in report.by_tool if t.tool == "create_task")
    assert tool.cutover_at == CUTOVER.replace(tzinfo=None)
    assert tool.comparison.design == "randomised"
    assert {(p.period, p.variant) for p in tool.periods} == {("before", "legacy"), ("after", "legacy"),
                                                             ("after", "structured")}
    before = next(p for p in tool.periods if p.period == "before")
    assert before.loop_rate is not None and 0.35 < before.loop_rate < 0.65
    search = next(t for t in report.by_tool if t.tool == "search")
    assert search.errors == 0 and search.comparison.design == "none"


def test_the_randomised_comparison_only_counts_errors_made_during_the_split(synced: Warehouse) -> None:
    report = loop_rate_report(synced)
    legacy = next(v for v in report.variants if v.variant == "legacy")
    test = report.comparison.test
    # legacy errors of the shadow days are in the arm totals but not in the randomised comparison
    assert test.errors_a < legacy.errors
    after = next(p for p in report.by_tool[0].periods if (p.period, p.variant) == ("after", "legacy"))
    assert test.errors_a == after.errors


def test_equal_arms_give_no_significant_difference(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    experiment(url, legacy_loop=0.3, structured_loop=0.3, seed=4)
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        verdict = loop_rate_report(wh).comparison.test.verdict
    assert verdict == "no_significant_difference"


def test_too_few_errors_says_so_instead_of_a_verdict(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    experiment(url, sessions=30)
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        test = loop_rate_report(wh).comparison.test
    assert test.verdict == "too_few_errors"
    assert test.p_value is None and "too few errors" in test.message


def test_savings_reproduce_the_worked_example(tmp_path: Path) -> None:
    """40 calls and 6 errors per task, a third of them repaired instead of repeated: 2 round trips per task."""
    url = f"sqlite:///{tmp_path}/calls.db"
    records: list[CallRecord | MarkRecord] = []
    for s in range(20):
        variant = "legacy" if s % 2 else "structured"
        sid, ts = f"t{s}", T0 + dt.timedelta(minutes=s)
        seq = 0
        for e in range(6):
            seq += 1
            records.append(_call(sid, seq, ts, "create_task", f"e{e}", "error", variant))
            seq += 1
            repeat = variant == "legacy" and e < 2
            records.append(_call(sid, seq, ts, "create_task", f"e{e}" if repeat else f"fix{e}", "ok", variant))
        while seq < 40:
            seq += 1
            records.append(_call(sid, seq, ts, "search", f"q{seq}", "ok", variant))
    SqlStore(url).write(records)
    with db.engine(url).begin() as conn:  # a 50% split from the start: the comparison is randomised
        conn.execute(insert(tables.flag_audit), [_audit("create_task", T0 - dt.timedelta(hours=1), None,
                                                        ("cutover", 50))])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        savings = loop_rate_report(wh).savings
        doubled = loop_rate_report(wh, bytes_per_token=8).savings
    assert savings.design == "randomised"
    assert savings.calls_per_task == 40 and savings.errors_per_task == 6
    assert savings.round_trips_saved_per_task == pytest.approx(2.0)
    assert savings.round_trips_saved_per_1000_tasks == pytest.approx(2000.0)
    low, high = savings.round_trips_saved_ci_low, savings.round_trips_saved_ci_high
    assert low is not None and high is not None and low <= 2000 <= high  # every session alike: a zero-width interval
    assert savings.median_latency_us == 2000
    assert savings.seconds_saved_per_1000_tasks == pytest.approx(4.0)
    assert savings.tokens_per_round_trip is not None and savings.tokens_per_round_trip > 0
    assert savings.tokens_saved_per_1000_tasks == pytest.approx(2000 * savings.tokens_per_round_trip)
    assert doubled.tokens_per_round_trip == pytest.approx(savings.tokens_per_round_trip / 2)
    assert savings.leaves_out and "2,000 round trips saved per 1,000 tasks" in savings.message


def test_savings_use_the_randomised_arms_not_whole_range_rates(synced: Warehouse) -> None:
    """Pre-cutover legacy traffic loops at the same 50% as the legacy arm; the savings come from the split only."""
    report = loop_rate_report(synced)
    s, test = report.savings, report.comparison.test
    assert s.design == "randomised"
    assert (s.wasted_per_error_legacy, s.wasted_per_error_structured) == (test.rate_a, test.rate_b)
    whole = {v.variant: v.loop_rate for v in report.variants}
    assert s.wasted_per_error_legacy != whole["legacy"]  # the whole-range legacy rate mixes in the shadow days
    assert test.difference is not None and s.errors_per_task is not None
    assert s.round_trips_saved_per_task == pytest.approx(-test.difference * s.errors_per_task)


def test_savings_claim_nothing_without_a_randomised_split(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    SqlStore(url).write([_call(f"s{i}", 1, T0, "create_task", "x", "error", "legacy" if i % 2 else "structured")
                         for i in range(80)])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        s = loop_rate_report(wh).savings
    assert s.round_trips_saved_per_1000_tasks is None and s.design != "randomised"
    assert "randomised" in s.message


def test_justified_retries_are_reported_apart_with_their_wait(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    limited = {"code": "rate_limited", "retryable": True, "retry_after_ms": 1500}
    SqlStore(url).write([
        _call("a", 1, T0, "search", "q", "error", "legacy", **limited),
        _call("a", 2, T0 + dt.timedelta(seconds=2), "search", "q", "ok", "legacy"),
        _call("b", 1, T0, "search", "q", "error", "legacy", **limited),
        _call("b", 2, T0 + dt.timedelta(milliseconds=300), "search", "q", "ok", "legacy"),
        _call("c", 1, T0, "search", "q", "error", "legacy"),
        _call("c", 2, T0 + dt.timedelta(seconds=1), "search", "q", "ok", "legacy"),
    ])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        arm = loop_rate_report(wh).variants[0]
    assert (arm.loops, arm.justified_retries, arm.justified_retries_with_hint, arm.justified_retries_waited,
            arm.unjustified_loops) == (3, 2, 2, 1, 1)


def test_json_has_the_documented_stable_shape(synced: Warehouse) -> None:
    data = json.loads(loop_rate_report(synced).to_json())
    assert set(data) == {"schema_version", "generated_at", "filters", "data_range", "variants", "by_tool",
                         "by_code", "by_day", "comparison", "savings", "flag_changes", "methods",
                         "follow_up_shifts", "health", "rules", "by_rules"}
    assert data["schema_version"] == 2
    arm = data["variants"][0]
    assert {"variant", "calls", "errors", "loops", "loop_rate", "ci_low", "ci_high", "bootstrap_ci_low",
            "bootstrap_ci_high", "cluster_ci_low", "cluster_ci_high", "mean_loop_length", "justified_retries",
            "follow_ups", "codes", "back_to_back_loops"} <= set(arm)
    assert [v["variant"] for v in data["variants"]] == ["legacy", "structured"]
    assert {"tool", "unmapped_share", "schema_invalid_share", "cutover_at", "variants", "periods",
            "comparison", "flag", "power", "recommendation", "leaks", "evidence"} <= set(data["by_tool"][0])
    assert {"action", "reasons"} == set(data["by_tool"][0]["recommendation"])
    assert {"difference", "ci_low", "ci_high", "p_value", "verdict", "design"} <= set(data["comparison"])
    assert {"round_trips_saved_per_task", "round_trips_saved_per_1000_tasks", "median_latency_us"} <= set(
        data["savings"])
    days = {(r["day"], r["variant"]) for r in data["by_day"]}
    assert ("2025-03-10", "legacy") in days and ("2025-03-13", "structured") in days
    assert [c["is_cutover"] for c in data["flag_changes"]] == [False, True]
    assert data["data_range"]["sessions"] == 240


def test_the_bootstrap_interval_is_reproducible_for_a_seed(synced: Warehouse) -> None:
    a = loop_rate_report(synced, seed=7).variants[0]
    b = loop_rate_report(synced, seed=7).variants[0]
    assert (a.bootstrap_ci_low, a.bootstrap_ci_high) == (b.bootstrap_ci_low, b.bootstrap_ci_high)
    assert a.bootstrap_ci_low is not None and a.loop_rate is not None
    assert a.bootstrap_ci_low < a.loop_rate < (a.bootstrap_ci_high or 0)


def test_filters_pick_errors_by_tool_and_time(synced: Warehouse) -> None:
    everything = loop_rate_report(synced)
    search = loop_rate_report(synced, tool="search")
    first_day = loop_rate_report(synced, since=parse_time("2025-03-10"), until=parse_time("2025-03-10", until=True))
    assert search.data_range.calls == 240 and search.data_range.errors == 0
    assert first_day.data_range.last_call is not None
    assert first_day.data_range.last_call < dt.datetime(2025, 3, 11)
    assert 0 < first_day.data_range.calls < everything.data_range.calls
    with pytest.raises(UnknownToolError, match="known tools: create_task, search"):
        loop_rate_report(synced, tool="nope")
    with pytest.raises(ValueError, match="must be before"):
        loop_rate_report(synced, since=parse_time("2025-03-12"), until=parse_time("2025-03-11"))


def test_parse_time_reads_dates_and_iso_times_as_utc() -> None:
    assert parse_time("2025-03-14") == dt.datetime(2025, 3, 14)
    assert parse_time("2025-03-14", until=True) == dt.datetime(2025, 3, 15)
    assert parse_time("2025-03-14T10:00:00+02:00") == dt.datetime(2025, 3, 14, 8)
    assert parse_time("2025-03-14T10:00:00Z") == dt.datetime(2025, 3, 14, 10)
    with pytest.raises(ValueError, match="for example 2025-03-14"):
        parse_time("last tuesday")


def test_table_and_csv_render_the_chosen_breakdown(synced: Warehouse) -> None:
    report = loop_rate_report(synced)
    table = render_table(report, "code")
    assert "By code, whole range:" in table and "validation_error" in table and "Savings (randomised):" in table
    assert max(len(line) for line in table.splitlines()) <= 100
    assert "Two-arm comparison, randomised" in table and "Per arm, whole range" in table
    assert sum(line.startswith("Loop: ") for line in table.splitlines()) == 1  # the definition, once
    wide = render_table(report, "tool", wide=True)
    assert "95% CI (Wilson)" in wide and "95% CI (Wilson)" not in render_table(report, "tool")
    rows = list(csv.reader(io.StringIO(render_csv(report, "day"))))
    assert rows[0][:4] == ["dimension", "key", "variant", "calls"]
    assert {r[0] for r in rows[1:]} == {"all", "day"}
    assert sum(int(r[3]) for r in rows[1:] if r[0] == "day") == sum(int(r[3]) for r in rows[1:] if r[0] == "all")


# --- the command line -------------------------------------------------------------------------------------------


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from shadow import _config as config

    url = f"sqlite:///{tmp_path}/calls.db"
    experiment(url, sessions=60)
    monkeypatch.setenv("SHADOW_DB_URL", url)
    config.reset()
    return tmp_path


def test_cli_report_syncs_first_and_prints_json(cli_env: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", "loop-rate", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["data_range"]["calls"] == 60 * 7
    assert (cli_env / "calls.duckdb").exists()


def test_cli_table_fits_100_columns_and_leads_with_a_recommendation_per_tool(cli_env: Path) -> None:
    result = CliRunner().invoke(app, ["report", "loop-rate", "--detect", "0.5", "--bytes-per-token", "3"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    start = lines.index("Recommendation per tool (raise / hold / fix_rules / rollback / done):")
    assert lines[start + 1].split()[0] == "create_task" and lines[start + 1].split()[1] in (
        "raise", "hold", "fix_rules", "rollback", "done")
    assert "detect a 50% drop" in result.stdout and "3 bytes per token" in result.stdout
    wide = CliRunner().invoke(app, ["report", "loop-rate", "--no-sync", "--wide"])
    assert wide.exit_code == 0 and "What the model saw, create_task" in wide.stdout
    assert "95% CI (Wilson)" in wide.stdout


def test_cli_no_sync_reports_the_warehouse_as_it_is(cli_env: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["report", "loop-rate", "--no-sync"])
    assert missing.exit_code == 2 and "run `shadow sync` first" in missing.output
    assert runner.invoke(app, ["sync"]).exit_code == 0
    SqlStore(f"sqlite:///{cli_env}/calls.db").write(
        [_call("late", 1, T0, "search", "q", "error", "legacy")])
    stale = json.loads(runner.invoke(app, ["report", "loop-rate", "--no-sync", "-f", "json"]).stdout)
    fresh = json.loads(runner.invoke(app, ["report", "loop-rate", "-f", "json"]).stdout)
    assert fresh["data_range"]["calls"] == stale["data_range"]["calls"] + 1


def test_cli_bad_input_gets_a_clear_error(cli_env: Path) -> None:
    runner = CliRunner()
    cases = [
        (["report", "loop-rate", "--tool", "nope"], "known tools: create_task, search"),
        (["report", "loop-rate", "--since", "2025-02-30"], "--since: '2025-02-30' is not a date"),
        (["report", "loop-rate", "--since", "2025-03-12", "--until", "2025-03-11"], "is not before --until"),
        (["sync", "--warehouse", str(cli_env / "no" / "w.duckdb")], "does not exist"),
        (["sync", "--db", f"sqlite:///{cli_env}/empty.db", "--warehouse", str(cli_env / "e.duckdb")],
         "shadow db upgrade"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code != 0, args
        assert message in result.output, (args, result.output)


def test_cli_sync_rebuild_and_export(cli_env: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["sync", "--format", "json"])
    assert json.loads(first.stdout)["calls_added"] == 420
    again = json.loads(runner.invoke(app, ["sync", "-f", "json"]).stdout)
    assert again["calls_added"] == 0 and not again["rebuilt"]
    rebuilt = json.loads(runner.invoke(app, ["sync", "--rebuild", "-f", "json"]).stdout)
    assert rebuilt["rebuilt"] and rebuilt["calls_added"] == 420
    out = cli_env / "pq"
    exported = runner.invoke(app, ["export", "parquet", str(out)])
    assert exported.exit_code == 0 and "wrote 420 calls" in exported.output
    again = runner.invoke(app, ["export", "parquet", str(out)])  # an earlier export: only what is new
    assert again.exit_code == 0 and "appended 0 new calls" in again.output
    (cli_env / "other").mkdir()
    (cli_env / "other" / "notes.txt").write_text("x")
    refused = runner.invoke(app, ["export", "parquet", str(cli_env / "other")])
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    (cli_env / "file.txt").write_text("x")
    assert "is a file" in runner.invoke(app, ["export", "parquet", str(cli_env / "file.txt")]).output


def test_piped_progress_follows_rows_that_arrive_during_the_sync_and_ends_at_100_percent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow.analytics import _sync

    url = f"sqlite:///{tmp_path}/calls.db"
    store = SqlStore(url)
    store.write([_call(f"s{i // 10}", i % 10 + 1, T0, "search", "q", "ok", "legacy") for i in range(25_000)])
    planned = _sync.plan

    def plan_then_more_rows(*args: Any, **kwargs: Any) -> _sync.Plan:
        found = planned(*args, **kwargs)  # 25,000 rows counted, 30,000 read
        store.write([_call(f"late{i // 10}", i % 10 + 1, T0, "search", "q", "ok", "legacy") for i in range(5_000)])
        return found

    monkeypatch.setattr(_sync, "plan", plan_then_more_rows)
    result = CliRunner().invoke(app, ["sync", "--db-url", url, "--warehouse", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 0, result.output
    shares = [int(m) for m in re.findall(r"\((\d+)%\)", result.stderr)]
    assert shares and max(shares) == 100, result.stderr
    assert "30,000/30,000 (100%)" in result.stderr


def test_every_command_help_has_an_example() -> None:
    runner = CliRunner()
    for args in (["sync"], ["export", "parquet"], ["report", "loop-rate"]):
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0 and "Example: shadow" in result.output, args


def test_a_piped_sync_of_a_big_load_prints_progress_lines(tmp_path: Path) -> None:
    """Not on a terminal, a load past the bar's threshold shows plain lines (a bar would print nothing)."""
    url = f"sqlite:///{tmp_path}/calls.db"
    SqlStore(url).write([_call(f"s{i // 10}", i % 10 + 1, T0, "search", "q", "ok", "legacy") for i in range(25_000)])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "shadow", "sync", "--db-url", url, "--warehouse",
                           str(tmp_path / "w.duckdb")], capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "Syncing the call log: 0/" in done.stderr and "(100%)" in done.stderr
