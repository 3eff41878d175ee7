"""The SQL models on Apache Spark (local mode) agree with DuckDB and with the plain-Python loop definitions."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from test_loop_definitions import FIELDS, RESTART_SESSIONS, build, load, reference_followups, sessions_spec
from typer.testing import CliRunner

from shadow.analytics import _spark
from shadow.analytics._report import loop_rate_report
from shadow.analytics._warehouse import Warehouse
from shadow.cli import app

pytestmark = [pytest.mark.spark, pytest.mark.slow]

if _spark.missing():
    pytest.skip(f"Spark cannot run here: needs {', '.join(_spark.missing())}", allow_module_level=True)

#: Small and quick for tests: 2 local threads, one shuffle partition, interpreted plans, the JIT's first tier.
TEST_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.ui.enabled": "false",
}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = _spark.session("local[2]", TEST_CONF)  # one session for the module (the CLI reuses it)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def demo_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's log (its default size) synced and exported to Parquet."""
    from shadow.demo._run import run_demo

    directory = tmp_path_factory.mktemp("demo")
    run_demo(directory, dashboard=False)
    out = directory / "parquet"
    with Warehouse.open(directory / "shadow.duckdb", read_only=True) as wh:
        wh.export_parquet(out)
    return out


def _without_time(report: dict[str, Any]) -> dict[str, Any]:
    report.pop("generated_at")
    return report


def _differences(have: Any, want: Any, path: str = "") -> list[str]:
    """Where two report JSON trees differ, as paths with both values (readable when a test fails)."""
    if isinstance(want, dict) and isinstance(have, dict):
        keys = sorted(set(want) | set(have))
        return [d for k in keys for d in _differences(have.get(k), want.get(k), f"{path}.{k}")]
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
        return [d for i, (h, w) in enumerate(zip(have, want, strict=True)) for d in _differences(h, w, f"{path}[{i}]")]
    return [] if have == want else [f"{path}: spark {have!r} != duckdb {want!r}"]


def test_the_report_is_identical_on_duckdb_and_spark_with_and_without_filters(spark: Any,
                                                                               demo_export: Path) -> None:
    with Warehouse.from_parquet(demo_export) as duck:
        busiest = duck.con.execute("SELECT tool FROM calls GROUP BY tool ORDER BY count(*) DESC LIMIT 1").fetchall()
        lo, hi = duck.con.execute("SELECT min(ts), max(ts) FROM calls").fetchall()[0]
        third = (hi - lo) / 3
        since = (lo + third).replace(minute=0, second=0, microsecond=0)
        until = (lo + 2 * third).replace(minute=0, second=0, microsecond=0)
        # unfiltered, and every filter at once (each case is a whole report on Spark, about 30 s here)
        cases: list[dict[str, Any]] = [{}, {"tool": busiest[0][0], "since": since, "until": until}]
        expected = [_without_time(loop_rate_report(duck, **kw).to_dict()) for kw in cases]
    with _spark.SparkModels(spark, demo_export) as models:
        got = [_without_time(loop_rate_report(models, **kw).to_dict()) for kw in cases]
    for kw, want, have in zip(cases, expected, got, strict=True):
        assert _differences(have, want) == [], kw
    assert expected[0]["data_range"]["calls"] > 5_000  # the demo's default size, not a toy
    assert expected[0]["by_tool"] and 0 < expected[1]["data_range"]["calls"] < expected[0]["data_range"]["calls"]


def test_the_dashboard_models_return_the_same_rows_on_both_engines(spark: Any, demo_export: Path) -> None:
    with Warehouse.from_parquet(demo_export) as duck:
        (sid,) = duck.con.execute("SELECT session_id FROM error_followups GROUP BY 1 "
                                  "ORDER BY count(*) FILTER (WHERE looped) DESC, 1 LIMIT 1").fetchall()[0]
        window = {"tool": None, "since": None, "until": None}
        cases = [("dashboard_code_mix", window), ("dashboard_loop_rate_over_time", {**window, "unit": "day"}),
                 ("dashboard_looped_sessions", {**window, "limit": 25}),
                 ("dashboard_session_events", {"limit": 200, "session_id": sid})]
        expected = [duck.records(name, params) for name, params in cases]
    with _spark.SparkModels(spark, demo_export) as models:
        got = [models.records(name, params) for name, params in cases]
    for (name, _), want, have in zip(cases, expected, got, strict=True):
        assert want, name
        assert have == want, name


def test_report_loop_rate_on_spark_prints_the_duckdb_json(spark: Any, demo_export: Path) -> None:
    args = ["report", "loop-rate", "--parquet", str(demo_export), "--format", "json", "--until", "2026-12-31"]
    duck = CliRunner().invoke(app, args)
    on_spark = CliRunner().invoke(app, [*args, "--engine", "spark", "--spark-conf", "spark.sql.shuffle.partitions=1"])
    assert duck.exit_code == 0, duck.output
    assert on_spark.exit_code == 0, on_spark.output
    assert _without_time(json.loads(on_spark.stdout)) == _without_time(json.loads(duck.stdout))


def test_the_dashboard_from_spark_has_the_same_data_as_from_duckdb(spark: Any, demo_export: Path) -> None:
    import dataclasses

    from shadow.dashboard._data import collect, looped_sessions, session_events
    from shadow.dashboard._page import render

    with Warehouse.from_parquet(demo_export) as duck:
        since = duck.con.execute("SELECT date_trunc('day', min(ts)) + INTERVAL 1 DAY FROM calls").fetchall()[0][0]
        cases: list[dict[str, Any]] = [{}, {"since": since}]
        expected = [collect(duck, **kw) for kw in cases]
        sessions = looped_sessions(duck, limit=5)
        events = session_events(duck, sessions[0].session_id)
    with _spark.SparkModels(spark, demo_export) as models:
        got = [collect(models, **kw) for kw in cases]
        assert looped_sessions(models, limit=5) == sessions
        assert session_events(models, sessions[0].session_id) == events
    for kw, want, have in zip(cases, expected, got, strict=True):
        same_time = dataclasses.replace(have, generated_at=want.generated_at,
                                        report=dataclasses.replace(have.report, generated_at=want.report.generated_at))
        assert same_time == want, kw
        assert render(same_time) == render(want), kw
    assert expected[0].series.buckets and expected[0].code_mix and expected[0].tools  # every chart has data
    assert expected[1].report.data_range.calls < expected[0].report.data_range.calls


def test_shadow_dashboard_on_spark_writes_the_duckdb_page(spark: Any, demo_export: Path, tmp_path: Path) -> None:
    import re

    pages = []
    for name, extra in (("duckdb", []), ("spark", ["--engine", "spark", "--spark-master", "local[2]",
                                                   "--spark-conf", "spark.sql.shuffle.partitions=1"])):
        out = tmp_path / f"{name}.html"
        result = CliRunner().invoke(app, ["dashboard", "--parquet", str(demo_export), "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        pages.append(re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated (time)", out.read_text()))
    assert "generated (time)" in pages[0]
    assert pages[1] == pages[0]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(sessions=sessions_spec)
@example(sessions=RESTART_SESSIONS)  # counters restarted under a new epoch, records lost in them
def test_spark_followups_match_the_definitions_with_ties_in_seq(spark: Any, tmp_path: Path,
                                                                sessions: list[list[dict[str, Any]]]) -> None:
    calls, marks = build(sessions)
    expected = reference_followups(calls, marks)
    wh = load(calls, marks)
    out = tmp_path / f"export-{len(list(tmp_path.iterdir()))}"
    wh.export_parquet(out)
    with _spark.SparkModels(spark, out) as models:
        got = {r["id"]: r for r in models.table("error_followups")}
    assert set(got) == set(expected)
    for error_id, facts in expected.items():
        for name in FIELDS:
            assert got[error_id][name] == facts[name], (error_id, name)


def test_gaps_and_epoch_restarts_are_counted_the_same_on_both_engines(spark: Any, tmp_path: Path) -> None:
    wh = load(*build(RESTART_SESSIONS))
    want = _without_time(loop_rate_report(wh, resamples=50).to_dict())
    wh.export_parquet(tmp_path / "export")
    with _spark.SparkModels(spark, tmp_path / "export") as models:
        have = _without_time(loop_rate_report(models, resamples=50).to_dict())
    assert _differences(have, want) == []
    assert want["data_range"]["sessions_with_gaps"] == 2 and want["health"]["missing_records"] == 2


def test_the_spark_engine_without_parquet_or_with_bad_conf_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "loop-rate", "--engine", "spark"])
    assert result.exit_code == 2
    assert "--parquet" in result.output
    result = CliRunner().invoke(app, ["report", "loop-rate", "--engine", "spark", "--parquet", str(tmp_path),
                                      "--spark-conf", "no-equals-sign"])
    assert result.exit_code == 2
    assert "KEY=VALUE" in result.output
    result = CliRunner().invoke(app, ["dashboard", "--engine", "spark", "--out", str(tmp_path / "d.html")])
    assert result.exit_code == 2
    assert "--parquet" in result.output


def test_without_java_the_spark_engine_says_what_is_missing(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)  # python, but no java
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-m", "shadow", "report", "loop-rate", "--engine", "spark", "--parquet",
                          str(tmp_path)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 2, out.stderr
    assert "Java 17" in out.stderr
    dashboard = subprocess.run([sys.executable, "-m", "shadow", "dashboard", "--engine", "spark", "--parquet",
                                str(tmp_path), "--out", str(tmp_path / "d.html")], env=env, capture_output=True,
                               text=True, timeout=120, check=False)
    assert dashboard.returncode == 2, dashboard.stderr
    assert "Java 17" in dashboard.stderr
    assert not (tmp_path / "d.html").exists()


def test_a_master_spark_cannot_start_on_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    export = tmp_path / "export"
    for table in ("calls", "marks"):
        (export / table).mkdir(parents=True)
    (export / "calls" / "x.parquet").write_bytes(b"")  # never read: Spark does not start
    out = subprocess.run([sys.executable, "-m", "shadow", "report", "loop-rate", "--engine", "spark", "--parquet",
                          str(export), "--spark-master", "bogus://nowhere"], env=env, capture_output=True, text=True,
                         timeout=180, check=False)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Spark did not start on master 'bogus://nowhere'" in out.stderr
    assert "Traceback" not in out.stderr
