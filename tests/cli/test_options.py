"""One command line: the same option names, help flags, format enum and exit codes on every command."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

import shadow
from shadow.cli import ExitCode, app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _commands() -> list[tuple[list[str], Any]]:
    def walk(cmd: Any, path: list[str]) -> list[tuple[list[str], Any]]:
        if hasattr(cmd, "commands"):
            return [item for name, sub in cmd.commands.items() for item in walk(sub, [*path, name])]
        return [(path, cmd)]

    return walk(typer.main.get_command(app), [])


COMMANDS = _commands()
#: Commands that read or write the call log, so name it with --db-url.
STORE_COMMANDS = {
    "db upgrade", "db current", "sync", "export parquet", "report loop-rate", "dashboard", "flags set", "flags show",
    "flags history", "flags kill", "flags unkill", "describe", "ready", "eval", "import", "proxy", "rules suggest",
    "doctor",
}


def _options(cmd: Any) -> dict[str, Any]:
    return {opt: param for param in cmd.params for opt in (*param.opts, *param.secondary_opts)}


def test_every_command_and_group_answers_dash_h_like_dash_dash_help() -> None:
    groups = {tuple(path[:i]) for path, _ in COMMANDS for i in range(len(path))}
    for path in [*map(list, groups), *(p for p, _ in COMMANDS)]:
        short, long = runner.invoke(app, [*path, "-h"]), runner.invoke(app, [*path, "--help"])
        assert short.exit_code == 0 and long.exit_code == 0, (path, short.output)
        assert short.output == long.output and "Usage:" in short.output, path


def test_shadow_version_prints_the_package_version_in_a_fresh_process() -> None:
    for flag in ("--version", "-V"):
        done = subprocess.run([sys.executable, "-m", "shadow", flag], capture_output=True, text=True, timeout=120,
                              cwd=ROOT, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"shadow {shadow.__version__}"


def test_every_command_that_names_the_store_calls_it_db_url_with_one_help_text() -> None:
    helps = set()
    named = {" ".join(path) for path, cmd in COMMANDS if "--db-url" in _options(cmd)}
    assert named == STORE_COMMANDS
    for path, cmd in COMMANDS:
        if " ".join(path) not in STORE_COMMANDS:
            continue
        options = _options(cmd)
        helps.add(options["--db-url"].help)
        assert options["--db"].hidden and options["--url"].hidden, path  # 0.1 spellings: accepted, not shown
        shown = runner.invoke(app, [*path, "-h"]).output
        assert "--db-url" in shown and "--url " not in shown and "--db " not in shown, path
    assert len(helps) == 1


def test_the_old_spellings_of_db_url_still_work(tmp_path: Path) -> None:
    for flag in ("--db", "--url", "--db-url"):
        target = tmp_path / f"{flag.strip('-')}.db"
        done = runner.invoke(app, ["db", "upgrade", flag, f"sqlite:///{target}"])
        assert done.exit_code == 0, done.output
        assert target.exists()


def test_dash_f_is_always_the_output_format_and_takes_the_same_names_everywhere() -> None:
    for path, cmd in COMMANDS:
        options = _options(cmd)
        if "-f" not in options:
            continue
        assert options["-f"] is options["--format"], path
        shown = runner.invoke(app, [*path, "-h"]).output
        for name in ("table", "text", "json"):
            assert name in shown, (path, name)
    with_format = {" ".join(p) for p, cmd in COMMANDS if "--format" in _options(cmd)}
    assert {"flags show", "db current", "sync", "report loop-rate", "describe", "import", "ready"} <= with_format


def test_table_and_text_are_the_same_output_for_a_person(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/log.db"
    assert runner.invoke(app, ["flags", "set", "search", "shadow", "--db-url", url]).exit_code == 0
    outputs = {fmt: runner.invoke(app, ["flags", "show", "-f", fmt, "--db-url", url]) for fmt in ("table", "text")}
    assert outputs["table"].exit_code == outputs["text"].exit_code == 0
    assert outputs["table"].stdout == outputs["text"].stdout
    db_current = {fmt: runner.invoke(app, ["db", "current", "-f", fmt, "--db-url", url]) for fmt in ("table", "text")}
    assert db_current["table"].stdout == db_current["text"].stdout and "(head)" in db_current["text"].stdout


def test_exit_codes_are_decided_in_one_place() -> None:
    for path in (ROOT / "shadow" / "cli").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("Exit", "exit"):
                literal = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, int)]
                assert not literal, f"{path.name}:{node.lineno} exits with a literal; use ExitCode"
    assert {c.value for c in ExitCode} == {0, 1, 2, 3, 130}
    shown = runner.invoke(app, ["-h"]).output
    assert "Exit codes" in shown and "130" in shown


@pytest.mark.parametrize("argv", [
    ["report", "loop-rate"], ["flags", "show"], ["ready", "t"], ["describe", "--tool", "t"], ["db", "current"],
    ["sync"], ["import", "x.json", "--input-format", "openai"],
])
def test_an_unsupported_database_url_is_one_line_naming_the_supported_ones(argv: list[str]) -> None:
    done = runner.invoke(app, [*argv, "--db-url", "mysql://agent@db:3306/shadow"])
    assert done.exit_code == ExitCode.USAGE, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.output
    assert "SQLite and PostgreSQL" in lines[0] and "'mysql'" in lines[0] and "sqlite:///" in lines[0]


def test_an_unsupported_database_url_is_a_clear_value_error_in_the_api() -> None:
    from shadow.calllog import SqlStore
    from shadow.calllog._db import engine, normalise_url
    from shadow.flags import DbFlags

    for make in (normalise_url, engine, SqlStore, DbFlags, lambda url: shadow.configure(db_url=url)):
        with pytest.raises(ValueError, match=r"supports SQLite and PostgreSQL, not 'mysql'; use for example sqlite"):
            make("mysql+pymysql://agent@db:3306/shadow")
    with pytest.raises(ValueError, match="is not a database URL"):
        normalise_url("shadow.db")


def test_the_same_sqlite_file_by_a_relative_or_an_absolute_url_is_one_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from shadow.calllog._db import normalise_url

    monkeypatch.chdir(tmp_path)
    absolute = f"sqlite:///{tmp_path}/log.db"
    for spelling in ("sqlite:///log.db", "sqlite:///./log.db", f"sqlite:///{tmp_path}/sub/../log.db", absolute):
        assert normalise_url(spelling) == absolute
    assert normalise_url("sqlite://") == "sqlite://" and normalise_url("sqlite:///:memory:") == "sqlite:///:memory:"
    assert normalise_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"
