"""The package's public surface and the documents generated from the code table do not drift."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

import shadow
from shadow.cli import app
from shadow.contract._codes import CODE_TABLE
from shadow.contract._describe import describe, markdown_table

ROOT = Path(__file__).resolve().parents[1]


def test_dunder_all_is_sorted_and_names_exactly_what_the_package_imports() -> None:
    assert shadow.__all__ == sorted(shadow.__all__)
    tree = ast.parse((ROOT / "shadow" / "__init__.py").read_text())
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names if node.module != "__future__" and not (alias.asname or alias.name).startswith("_")}
    assert set(shadow.__all__) - {"__version__"} == imported
    for name in shadow.__all__:
        assert hasattr(shadow, name), name


def test_every_module_opens_with_a_one_line_docstring() -> None:
    for path in (ROOT / "shadow").rglob("*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc, f"{path} has no docstring"
        assert "\n" not in doc.split("\n\n")[0].strip(), f"{path}: the first docstring paragraph is one line"


def test_the_readme_code_table_is_generated_from_the_code_table() -> None:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- codes-table:start -->\n") + len("<!-- codes-table:start -->\n")
    assert readme[start:readme.index("<!-- codes-table:end -->")] == markdown_table()


def test_describe_names_every_code_and_every_next_action() -> None:
    for fmt in ("text", "markdown"):
        text = describe(fmt=fmt)  # type: ignore[arg-type]
        for row in CODE_TABLE.values():
            assert row.code.value in text and row.meaning in text
        for action in ("retry", "ask_user", "stop"):
            assert action in text
    data = json.loads(describe(fmt="json"))
    assert [c["code"] for c in data["codes"]] == [c.value for c in CODE_TABLE]
    assert set(data["next_actions"]) == {"retry", "ask_user", "stop"}


def test_shadow_describe_prints_each_format() -> None:
    runner = CliRunner()
    for fmt in ("text", "markdown", "json"):
        result = runner.invoke(app, ["describe", "--format", fmt])
        assert result.exit_code == 0, result.output
        assert "validation_error" in result.stdout
    bad = runner.invoke(app, ["describe", "--format", "yaml"])
    assert bad.exit_code == 2
    assert "yaml" in bad.output



def test_shadow_describe_brief_names_every_code_and_next_action_in_a_third_of_the_words() -> None:
    result = CliRunner().invoke(app, ["describe", "--brief"])
    assert result.exit_code == 0, result.output
    assert result.stdout == describe(fmt="brief")
    for row in CODE_TABLE.values():
        assert row.code.value in result.stdout
    for action in ("retry", "ask_user", "stop"):
        assert f"{action}: " in result.stdout
    assert len(result.stdout) * 2.5 < len(describe())
    refused = CliRunner().invoke(app, ["describe", "--brief", "--format", "json"])
    assert refused.exit_code == 2 and "leave out --format json" in refused.output


def test_every_command_help_carries_an_example() -> None:
    import typer.main

    group = typer.main.get_command(app)

    def walk(cmd: Any, prefix: str) -> list[tuple[str, Any]]:
        if hasattr(cmd, "commands"):
            return [item for name, sub in cmd.commands.items() for item in walk(sub, f"{prefix} {name}")]
        return [(prefix, cmd)]

    commands = walk(group, "shadow")
    assert len(commands) >= 2
    for name, cmd in commands:
        assert "Example" in (cmd.help or ""), f"{name} has no example in its help"


def test_each_example_in_a_commands_help_is_shown_on_its_own_line() -> None:
    import typer.main

    group = typer.main.get_command(app)
    runner = CliRunner()

    def walk(cmd: Any, path: list[str]) -> list[list[str]]:
        if hasattr(cmd, "commands"):
            return [item for name, sub in cmd.commands.items() for item in walk(sub, [*path, name])]
        return [path]

    for path in walk(group, []):
        shown = runner.invoke(app, [*path, "--help"], terminal_width=80).stdout
        for line in shown.splitlines():  # click rewraps a paragraph unless it is marked to keep its lines
            if "Example:" in line:
                assert line.strip().startswith("Example:"), f"shadow {' '.join(path)}: {line}"


def test_the_version_the_rules_fingerprint_reads_is_the_packaged_version() -> None:
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert shadow.__version__ == pyproject["project"]["version"]
