"""``-f/--format``: one name for the format a person reads, on every command; the other name still works."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer.main
from typer.testing import CliRunner

from shadow.cli import app

runner = CliRunner()


def _format_commands() -> list[tuple[list[str], Any]]:
    def walk(cmd: Any, path: list[str]) -> list[tuple[list[str], Any]]:
        if hasattr(cmd, "commands"):
            return [item for name, sub in cmd.commands.items() for item in walk(sub, [*path, name])]
        return [(path, cmd)] if any("--format" in p.opts for p in cmd.params) else []

    return walk(typer.main.get_command(app), [])


def test_every_command_names_the_format_for_a_person_table_and_defaults_to_it() -> None:
    commands = _format_commands()
    assert len(commands) >= 18
    for path, cmd in commands:
        option = next(p for p in cmd.params if "--format" in p.opts)
        shown = " ".join(runner.invoke(app, [*path, "-h"], env={"COLUMNS": "200"}).output.split())
        assert option.metavar.startswith("<table|"), (path, option.metavar)
        assert "default: text" not in shown and "[default: table]" in shown, (path, shown)
        assert "Output: table for a person (text works too)" in shown, (path, shown)


def test_text_the_other_name_still_gives_the_same_output(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/log.db"
    assert runner.invoke(app, ["db", "upgrade", "--db-url", url]).exit_code == 0
    for argv in (["db", "current", "--db-url", url], ["describe"], ["flags", "show", "--db-url", url]):
        table, text = (runner.invoke(app, [*argv, "-f", name]) for name in ("table", "text"))
        assert table.exit_code == text.exit_code == 0, (argv, table.output, text.output)
        assert table.stdout == text.stdout and table.stdout.strip(), argv
