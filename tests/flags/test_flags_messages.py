"""What ``shadow flags`` says and writes: a refused change, a change to the flag a tool has, the kill switch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from shadow.cli import app
from shadow.flags._db import DbFlags

REPO = Path(__file__).resolve().parents[2]


def test_a_refused_cutover_does_not_say_the_flag_is_set(sqlite_url: str) -> None:
    result = CliRunner().invoke(app, ["flags", "set", "T", "cutover", "--db-url", sqlite_url])
    assert result.exit_code == 1
    assert "not ready to cut over" in result.output
    assert "set all the same" not in result.output
    assert DbFlags(sqlite_url).states() == ({}, False)


def test_setting_the_mode_a_tool_has_writes_no_audit_row(sqlite_url: str) -> None:
    runner = CliRunner()
    runner.invoke(app, ["flags", "set", "T", "shadow", "--db-url", sqlite_url])
    again = runner.invoke(app, ["flags", "set", "T", "shadow", "--db-url", sqlite_url])
    assert again.exit_code == 0 and "already shadow" in again.stdout
    store = DbFlags(sqlite_url, last_known="off")
    assert store.kill() is not None and store.kill() is None and store.unkill() is not None
    assert store.unkill() is None
    assert [(e.tool, e.new_mode) for e in store.history()] == [("T", "shadow"), ("*", "killed"), ("*", "live")]


def test_the_kill_switch_reads_as_such_in_the_history(sqlite_url: str) -> None:
    runner = CliRunner()
    runner.invoke(app, ["flags", "kill", "--reason", "loop rate up", "--db-url", sqlite_url])
    runner.invoke(app, ["flags", "unkill", "--db-url", sqlite_url])
    lines = runner.invoke(app, ["flags", "history", "--db-url", sqlite_url]).stdout.splitlines()
    assert "*  kill switch ON  by " in lines[0] and lines[0].endswith("(loop rate up)")
    assert "*  kill switch off  by " in lines[1]
    assert "(unset)" not in "\n".join(lines) and "killed/100" not in "\n".join(lines)


SNIPPET = textwrap.dedent(
    """
    import shadow

    @shadow.tool("create_task", rules=shadow.Rules.default(), idempotent=False)
    def create_task(title: str, due_date: str) -> dict:
        return {"error": "Bad request"}

    with shadow.session("task-42"):
        result = create_task("Ship", "next friday")
        shadow.mark("user_turn")
    shadow.flush()
    import shadow.flags
    print(shadow.flags.current().state("create_task").mode.value)
    """
)


def test_the_readme_snippet_with_the_flag_unset_creates_no_file_and_writes_no_mark(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    done = subprocess.run([sys.executable, "-c", SNIPPET], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False, env={**env, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["legacy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no shadow.db, no spool, no last-known file


def test_a_refused_cutover_in_a_new_directory_says_the_flag_is_unchanged_and_creates_no_file(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    done = subprocess.run([sys.executable, "-m", "shadow", "flags", "set", "create_task", "cutover", "--percent", "100"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                          env={**env, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert done.returncode == 1
    assert "not ready to cut over" in done.stderr and "flag is unchanged" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no shadow.db: a refusal writes nothing
