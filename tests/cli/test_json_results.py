"""``--format json`` on the commands that change something: the flag commands and ``shadow export parquet``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from shadow.calllog import head
from shadow.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _json(argv: list[str]) -> object:
    done = runner.invoke(app, [*argv, "--format", "json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_flags_set_kill_and_unkill_print_the_new_state_and_the_audit_entry_as_json(tmp_path: Path) -> None:
    db = ["--db-url", f"sqlite:///{tmp_path}/log.db"]
    first = _json(["flags", "set", "search", "shadow", "--reason", "start", *db])
    assert first == {"tool": "search", "mode": "shadow", "percent": 100, "change": {
        "tool": "search", "old_mode": None, "old_percent": None, "new_mode": "shadow", "new_percent": 100,
        "actor": first["change"]["actor"], "reason": "start", "ts": first["change"]["ts"]}}  # type: ignore[index]
    second = _json(["flags", "set", "search", "cutover", "-p", "25", "--force", "--reason", "test", *db])
    assert isinstance(second, dict) and (second["mode"], second["percent"]) == ("cutover", 25)
    assert (second["change"]["old_mode"], second["change"]["old_percent"]) == ("shadow", 100)
    history = _json(["flags", "history", *db])
    assert isinstance(history, list) and history[-1] == second["change"]  # one shape for an audit entry
    killed = _json(["flags", "kill", "--reason", "loop rate up", *db])
    assert isinstance(killed, dict) and killed["killed"] is True and killed["change"]["new_mode"] == "killed"
    assert _json(["flags", "show", *db]) == {"killed": True, "tools": {"search": {"mode": "cutover", "percent": 25}}}
    lifted = _json(["flags", "unkill", *db])
    assert isinstance(lifted, dict) and lifted["killed"] is False and lifted["change"]["old_mode"] == "killed"
    assert _json(["flags", "show", *db])["killed"] is False  # type: ignore[index]


def test_export_parquet_prints_what_it_wrote_as_json(tmp_path: Path) -> None:
    script = """
import shadow

@shadow.tool("create_task", rules=shadow.Rules.default())
def create_task(title: str) -> dict:
    return {"error": "Bad request"} if title == "bad" else {"id": 1}

with shadow.session("task-1"):
    for title in ("bad", "bad", "ok"):
        create_task(title)
    shadow.mark("end")
shadow.flush()
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SHADOW_FLAGS": "create_task=shadow",
           "SHADOW_DB_URL": f"sqlite:///{tmp_path}/log.db", "SHADOW_FINGERPRINT_KEY": "k" * 32}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "lake"
    argv = ["export", "parquet", str(out), "--db-url", f"sqlite:///{tmp_path}/log.db",
            "--warehouse", str(tmp_path / "wh.duckdb")]
    wrote = _json(argv)
    files = len(list(out.rglob("*.parquet")))
    assert wrote == {"directory": str(out), "calls": 3, "marks": 1, "files": files, "appended": False}
    again = _json(argv)  # into an earlier export: only what is new, nothing here; files: what the directory holds
    assert again == {"directory": str(out), "calls": 0, "marks": 0, "files": files, "appended": True}


def test_doctor_takes_format_json_and_db_url_like_every_command_and_json_still_works(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/log.db"
    fresh = _json(["doctor", "--db-url", url])
    assert isinstance(fresh, list) and [c["name"] for c in fresh] == ["settings", "fingerprint key", "database"]
    assert fresh[-1]["ok"] and "no schema yet" in fresh[-1]["detail"] and str(tmp_path) in fresh[-1]["detail"]
    assert not (tmp_path / "log.db").exists()  # checking creates nothing
    assert runner.invoke(app, ["db", "upgrade", "--db-url", url]).exit_code == 0
    lines = runner.invoke(app, ["doctor", "--db-url", url, "--json"])
    assert lines.exit_code == 0, lines.output
    checks = [json.loads(line) for line in lines.stdout.splitlines()]  # --json: one check per line, as before
    assert checks[-1]["ok"] and f"({head()})" in checks[-1]["detail"]
    assert runner.invoke(app, ["doctor", "--db-url", "mysql://x@h/d"]).exit_code == 2
