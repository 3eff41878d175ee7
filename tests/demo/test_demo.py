"""``shadow demo`` end to end: report printed, dashboard written, numbers consistent with the report command."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shadow.cli import app
from shadow.cli._progress import LineProgress
from shadow.demo._run import SIMULATED, run_demo


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    directory = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(app, ["demo", "--dir", str(directory), "--sessions", "150", "--seed", "11"])
    assert result.exit_code == 0, result.output
    return directory, result.output


def test_the_demo_says_its_traffic_is_simulated_and_prints_the_report(demo_dir: tuple[Path, str]) -> None:
    _, output = demo_dir
    assert SIMULATED in output
    assert "Loop rate:" in output
    assert "legacy" in output
    assert "structured" in output
    assert "dashboard:" in output


def test_the_demo_writes_a_dashboard_and_a_store(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    html = (directory / "cutover.html").read_text()
    assert "SIMULATED" in html
    assert (directory / "shadow.db").exists()
    assert (directory / "shadow.duckdb").exists()


def test_the_demo_numbers_match_the_report_command_on_the_same_store(demo_dir: tuple[Path, str]) -> None:
    directory, output = demo_dir
    result = CliRunner().invoke(app, ["report", "loop-rate", "--format", "json", "--db-url",
                                      f"sqlite:///{directory / 'shadow.db'}",
                                      "--warehouse", str(directory / "shadow.duckdb")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for arm in report["variants"]:
        line = next(row for row in output.splitlines() if row.startswith("  " + arm["variant"] + " "))
        cells = line.split()
        assert [int(c.replace(",", "")) for c in cells[1:4]] == [arm["calls"], arm["errors"], arm["loops"]]
        assert cells[4] == f"{arm['loop_rate'] * 100:.1f}%"
    legacy, structured = (next(a for a in report["variants"] if a["variant"] == v) for v in ("legacy", "structured"))
    assert structured["loop_rate"] < legacy["loop_rate"], "the simulated agent follows next_action"


def test_the_demo_is_reproducible_for_a_seed(tmp_path: Path) -> None:
    first = run_demo(tmp_path / "a", sessions=40, seed=5, dashboard=False)
    second = run_demo(tmp_path / "b", sessions=40, seed=5, dashboard=False)
    shape = [(a.variant, a.calls, a.errors, a.loops) for a in first.report.variants]
    assert shape == [(a.variant, a.calls, a.errors, a.loops) for a in second.report.variants]
    other = run_demo(tmp_path / "c", sessions=40, seed=6, dashboard=False)
    assert shape != [(a.variant, a.calls, a.errors, a.loops) for a in other.report.variants]


def test_every_demo_output_says_the_traffic_is_simulated(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--dir", str(tmp_path), "--sessions", "20", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["simulated"] is True
    assert data["variants"]
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{tmp_path / 'shadow.db'}")
    with engine.connect() as conn:
        sources = {row[0] for row in conn.execute(text("SELECT source FROM calls UNION SELECT source FROM marks"))}
    engine.dispose()
    assert sources == {"simulated"}


def test_bad_demo_sizes_are_usage_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--dir", str(tmp_path), "--sessions", "0"])
    assert result.exit_code == 2


def test_a_piped_demo_says_simulated_once_shows_progress_lines_and_fits_100_columns(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-m", "shadow", "demo", "--dir", str(tmp_path / "d"), "--sessions", "150"],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert (done.stdout + done.stderr).count(SIMULATED) == 1
    assert "simulating agent tasks: 150/150 (100%)" in done.stderr  # no terminal: plain lines, not a bar
    for step in ("syncing the DuckDB warehouse ...", "building the loop-rate report ...", "writing the dashboard ..."):
        assert step in done.stderr
    report = done.stdout.split("store:")[0]
    assert max(len(line) for line in report.splitlines()) <= 100
    assert "Recommendation per tool" in report and report.count("\nLoop: ") == 1


def test_line_progress_prints_a_line_every_few_seconds_on_a_long_step() -> None:
    out = io.StringIO()
    lines = LineProgress(out, every=0.05)
    lines.count("tasks", 4)
    for _ in range(4):
        lines.update()
    lines.step("syncing")
    time.sleep(0.3)
    lines.close()
    text = out.getvalue().splitlines()
    assert text[0] == "tasks: 0/4" and "tasks: 4/4 (100%)" in text
    assert "syncing ..." in text and sum(line.startswith("  still syncing") for line in text) >= 2
