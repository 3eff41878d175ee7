"""`shadow import` on harness output: ids shared by trials, list-shaped result links, reused call ids, times."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shadow.calllog._records import CallRecord
from shadow.cli import ExitCode, app
from shadow.transcripts._ids import IdCollision
from shadow.transcripts._importer import ImportOptions, Summary, read_file, read_files, records

TRIALS = Path(__file__).parents[1] / "fixtures" / "transcripts" / "swe_agent_trials.jsonl"
runner = CliRunner()


def _calls(options: ImportOptions) -> tuple[list[CallRecord], Summary]:
    summary = Summary()
    found = [r for read in read_files([TRIALS], options) for r in records(read, options, summary)]
    return [r for r in found if isinstance(r, CallRecord)], summary


def test_an_id_key_shared_by_several_trials_is_refused_with_the_fix() -> None:
    with pytest.raises(IdCollision) as refused:
        read_files([TRIALS], ImportOptions("openai", id_key="task_id"))
    message = str(refused.value)
    assert "'django-1234' names 2" in message and "2 ids name several conversations" in message
    assert "--id-key task_id,trial" in message


def test_the_command_refuses_a_colliding_id_key_and_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    result = runner.invoke(app, ["import", str(TRIALS), "--input-format", "openai", "--id-key", "task_id",
                                 "--db-url", url])
    assert result.exit_code == ExitCode.USAGE
    assert "--id-key task_id,trial" in result.stderr
    assert not (tmp_path / "log.db").exists()


def test_a_combined_id_key_names_each_trial_and_list_links_pair_results() -> None:
    calls, summary = _calls(ImportOptions("openai", id_key="task_id,trial"))
    assert sorted({c.session_id for c in calls}) == ["django-1234/1", "django-1234/2", "flask-77/1", "flask-77/2"]
    assert summary.problems == []
    by_session: dict[str, list[tuple[str, str, str | None]]] = {}
    for call in calls:
        by_session.setdefault(call.session_id, []).append((call.tool, call.outcome, call.code))
    expected = [("open_file", "error", "not_found"), ("search_dir", "ok", None), ("open_file", "ok", None)]
    assert all(seen == expected for seen in by_session.values()), by_session  # reused ids pair by position


def test_times_come_from_the_data_and_the_rest_are_counted_as_synthetic() -> None:
    calls, summary = _calls(ImportOptions("openai", id_key="task_id,trial"))
    timed = [c for c in calls if c.session_id.startswith("django")]
    assert timed[0].ts == dt.datetime(2026, 11, 1, 10, 2, tzinfo=dt.UTC)
    assert summary.synthetic_times == 3 + 3  # the two flask trials carry no time
    assert summary.to_json()["synthetic_times"] == 6


def test_the_command_says_when_times_are_synthetic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    result = runner.invoke(app, ["import", str(TRIALS), "--input-format", "openai", "--id-key", "task_id,trial",
                                 "--db-url", url])
    assert result.exit_code == ExitCode.OK, result.output
    assert "4 conversations, 12 calls, 4 errors" in result.stdout
    assert "6 of 12 calls carry no time in the data; their times are synthetic" in result.stderr


def test_a_result_key_names_any_other_link(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "answers": "b", "content": "Error: rate limit exceeded"},
        {"role": "tool", "answers": "a", "content": "ok"},
    ]
    path = tmp_path / "custom.json"
    path.write_text(json.dumps({"messages": messages}))
    options = ImportOptions("openai", result_key="answers")
    summary = Summary()
    found = [r for r in records(read_file(path, options), options, summary) if isinstance(r, CallRecord)]
    assert [(c.tool, c.code) for c in found] == [("lookup", None), ("search", "rate_limited")]


def test_the_report_and_the_dashboard_say_which_times_are_synthetic(tmp_path: Path) -> None:
    from shadow.analytics._warehouse import Warehouse
    from shadow.dashboard._page import build_dashboard

    url = f"sqlite:///{tmp_path / 'log.db'}"
    warehouse = tmp_path / "shadow.duckdb"
    trials = tmp_path / TRIALS.name
    trials.write_bytes(TRIALS.read_bytes())
    later = dt.datetime(2030, 1, 1, tzinfo=dt.UTC).timestamp()
    os.utime(trials, (later, later))  # the synthetic times: the file's modification time
    imported = runner.invoke(app, ["import", str(trials), "--input-format", "openai", "--id-key", "task_id,trial",
                                   "--db-url", url])
    assert imported.exit_code == ExitCode.OK, imported.output
    where = ["--db-url", url, "--warehouse", str(warehouse)]
    text = runner.invoke(app, ["report", "loop-rate", *where])
    assert text.exit_code == ExitCode.OK, text.output
    said = " ".join(text.stdout.split())
    assert "Synthetic times: 6 of 12 calls were imported without a time" in said
    assert "--since, per-day rows and savings do not say when they happened" in said
    as_json = runner.invoke(app, ["report", "loop-rate", *where, "-f", "json"])
    assert json.loads(as_json.stdout)["data_range"]["synthetic_time_calls"] == 6
    with Warehouse.open(warehouse, read_only=True) as wh:
        page = " ".join(build_dashboard(wh).split())
    assert "Synthetic times: 6 of 12 calls were imported without a time" in page
    # a range with only the calls that carry their time: nothing to say
    timed = runner.invoke(app, ["report", "loop-rate", *where, "--no-sync", "-f", "json", "--until", "2029-12-31"])
    assert json.loads(timed.stdout)["data_range"]["calls"] == 6
    assert json.loads(timed.stdout)["data_range"]["synthetic_time_calls"] == 0
