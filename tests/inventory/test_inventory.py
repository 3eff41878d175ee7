"""`shadow inventory`: every error site of fixture tool layers, its line and proposed code, and the emitted rules."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from starlette.exceptions import HTTPException
from typer.testing import CliRunner

from shadow.cli import ExitCode, app
from shadow.contract._rules import Rules
from shadow.inventory._run import Inventory, Site, emit_rules, format_table, inventory

FIXTURES = Path(__file__).parents[1] / "fixtures" / "inventory"
#: The layers this module reads; ``servers/`` (shaped like real MCP servers) has its own tests.
LAYERS = [FIXTURES / name for name in ("classtools", "mcpserver", "plainpkg", "webtools")]
_MARK = re.compile(r"#\s*(expect|select):\s*(.+)$")
runner = CliRunner()


def _marked(tag: str = "expect") -> set[tuple[str, int, str, str | None]]:
    """``(file, line, kind, code)`` from the ``# expect: KIND CODE`` comments in the fixture sources."""
    found = set()
    for path in sorted(p for layer in LAYERS for p in layer.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = _MARK.search(line)
            if match is None or match.group(1) != tag:
                continue
            for item in match.group(2).split(";"):
                kind, code = item.split()
                found.add((path.relative_to(FIXTURES).as_posix(), number, kind, None if code == "UNPLACED" else code))
    return found


def _key(site: Site) -> tuple[str, int, str, str | None]:
    return Path(site.file).resolve().relative_to(FIXTURES.resolve()).as_posix(), site.line, site.kind, site.code


@pytest.fixture(scope="module")
def found() -> Inventory:
    return inventory(LAYERS)


def _site(found: Inventory, tool: str, kind: str, what: str | None = None) -> Site:
    matches = [s for s in found.sites if s.tool == tool and s.kind == kind and (what is None or s.what() == what)]
    assert len(matches) == 1, matches
    return matches[0]


def test_every_marked_site_is_found_at_its_line_with_its_proposed_code(found: Inventory) -> None:
    expected = _marked()
    assert len(expected) == 24
    assert {_key(s) for s in found.sites} == expected


def test_tools_are_found_by_decorator_in_every_style(found: Inventory) -> None:
    tools = {t.name: t for t in found.tools}
    assert set(tools) == {"get_user", "create_event", "read_config", "lookup", "risky", "list_events",
                          "book_room", "fetch_invoice", "read_note", "write_note"}
    assert tools["create_event"].qualname == "create_event_tool"  # @tool(name="create_event")
    assert tools["book_room"].qualname == "Calendar.book"  # a method, @shadow.guard(name="book_room")
    assert tools["book_room"].found_by == "@shadow.guard(name='book_room')"
    assert tools["read_note"].found_by == "@mcp.tool()"
    assert tools["read_note"].is_async and tools["fetch_invoice"].is_async
    assert not tools["get_user"].is_async
    assert tools["list_events"].module == "classtools.service"
    assert tools["read_note"].module == "server"  # a standalone file, not a package


def test_each_site_says_why_its_code_was_proposed(found: Inventory) -> None:
    assert _site(found, "get_user", "escapes-from-call").reason == 'the class name "UserNotFound" reads as "Not Found"'
    assert _site(found, "create_event", "escapes-from-call", "Throttled 429").reason == (
        "the class sets HTTP status 429")
    assert _site(found, "fetch_invoice", "abort", "HTTPException 404").reason == "HTTP status 404"
    assert _site(found, "list_events", "escapes-from-call").reason == 'the message reads as "does not exist"'
    assert _site(found, "book_room", "raise", "TimeoutError").covered_by == "TimeoutError"
    assert _site(found, "book_room", "raise", "Fail").reason == "raises shadow.Fail('conflict'): already structured"
    assert _site(found, "lookup", "error-return", "status 410").covered_by == "status:not_found"
    returned = _site(found, "lookup", "except-return")
    assert returned.message == "no entry for …"
    assert "caught KeyError" in returned.reason


def test_exceptions_escaping_helpers_name_the_chain_they_come_through(found: Inventory) -> None:
    site = _site(found, "create_event", "escapes-from-call", "UserNotFound")
    assert site.exception == "plainpkg.errors.UserNotFound"
    assert site.via[0].startswith("store.find_owner (")
    assert site.via[1].startswith("load_user (")
    assert site.via[2].endswith("plainpkg/store.py:13")
    assert site.message == "no user …"


def test_unplaced_sites_are_listed_as_such_with_the_reason(found: Inventory) -> None:
    unplaced = {(s.tool, s.what()): s.reason for s in found.unplaced}
    assert set(unplaced) == {("risky", "'None'"), ("risky", "Mystery"), ("write_note", "RuntimeError"),
                             ("fetch_invoice", "HTTPException 418")}
    assert "reads as success" in unplaced[("risky", "'None'")]
    assert "418 has no standard code" in unplaced[("fetch_invoice", "HTTPException 418")]
    assert all(s.rule is None for s in found.unplaced)


def test_a_raise_caught_in_the_same_tool_is_not_a_site(found: Inventory) -> None:
    assert not [s for s in found.sites if s.message == "caught right here"]


def test_the_summary_counts_sites_codes_and_unplaced_sites(found: Inventory) -> None:
    assert found.summary() == (
        "24 distinct error sites in 10 tools, 8 proposed codes (validation_error, payload_too_large, not_found, "
        "conflict, permission_denied, rate_limited, quota_exceeded, upstream_timeout), 4 unplaced sites"
    )
    table = format_table(found)
    assert table.splitlines()[-1] == found.summary()
    assert "plainpkg/tools.py:18" in table
    assert "UNPLACED" in table


def test_a_file_that_does_not_parse_is_reported_and_skipped(tmp_path: Path, found: Inventory) -> None:
    copy = tmp_path / "layer"
    for layer in LAYERS:
        shutil.copytree(layer, copy / layer.name)
    (copy / "plainpkg" / "broken.py").write_text("def half(:\n    pass\n")
    result = inventory([copy])
    assert [(Path(s.file).name, s.line) for s in result.skipped] == [("broken.py", 1)]
    assert result.skipped[0].error.startswith("SyntaxError")
    assert len(result.sites) == len(found.sites)
    assert result.summary().endswith("; 1 file skipped")
    assert "skipped " in format_table(result)


def test_select_adds_undecorated_functions_by_name_glob_or_module(found: Inventory) -> None:
    by_name = inventory(LAYERS, select=["plain_*"])
    extra = {_key(s) for s in by_name.sites} - {_key(s) for s in found.sites}
    assert extra == _marked("select")
    tool = next(t for t in by_name.tools if t.name == "plain_function")
    assert tool.found_by == "select:plain_*"
    by_module = inventory(LAYERS, select=["plainpkg.tools"])
    names = {t.name for t in by_module.tools}
    assert "plain_function" in names
    assert "_private" not in names
    named = inventory(LAYERS, select=["plainpkg.tools._private"])
    assert [t.found_by for t in named.tools if t.name == "_private"] == ["select:plainpkg.tools._private"]


def test_a_single_file_can_be_inventoried(found: Inventory) -> None:
    single = inventory([FIXTURES / "mcpserver" / "server.py"])
    assert {s.tool for s in single.sites} == {"read_note", "write_note"}
    assert len(single.sites) == len([s for s in found.sites if s.tool in {"read_note", "write_note"}])


def test_nested_handlers_broad_reraises_and_raise_from(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        "import logging\n"
        "def tool(f):\n    return f\n"
        "@tool\n"
        "def a(x):\n"
        "    try:\n"
        "        raise PermissionError('no')\n"       # line 7: passes through the broad re-raise below
        "    except Exception:\n"
        "        logging.exception('a')\n"
        "        raise\n"                              # broad re-raise: not a site of its own
        "@tool\n"
        "def b(x):\n"
        "    try:\n"
        "        return int(x)\n"
        "    except ValueError as exc:\n"
        "        raise LookupError(f'no item {x}') from exc\n"   # line 16
        "    except (KeyError, IndexError) as exc:\n"
        "        raise exc\n"                          # line 18: both classes
        "    finally:\n"
        "        pass\n"
    )
    result = inventory([tmp_path])
    assert sorted((s.line, s.kind, s.what(), s.code) for s in result.sites) == [
        (7, "raise", "PermissionError", "permission_denied"),
        (16, "raise", "LookupError", "not_found"),
        (18, "except-reraise", "IndexError", "not_found"),
        (18, "except-reraise", "KeyError", "not_found"),
    ]


def test_json_output_has_sites_tools_and_summary(found: Inventory) -> None:
    result = runner.invoke(app, ["inventory", *map(str, LAYERS), "--format", "json"])
    assert result.exit_code == ExitCode.OK, result.output
    data = json.loads(result.stdout)
    assert data["version"] == 1
    assert data["summary"]["sites"] == 24
    assert data["summary"]["unplaced"] == 4
    assert len(data["tools"]) == 10
    site = next(s for s in data["sites"] if s["tool"] == "get_user")
    assert {"file", "line", "tool", "kind", "exception", "status", "message", "code", "reason", "placed",
            "via"} <= set(site)
    assert site["code"] == "not_found"
    assert site["placed"] is True


def test_the_inventory_command_rejects_bad_input(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["inventory", str(tmp_path / "nope")])
    assert missing.exit_code == ExitCode.USAGE
    assert "does not exist" in missing.stderr
    empty = runner.invoke(app, ["inventory", str(tmp_path)])
    assert empty.exit_code == ExitCode.USAGE
    assert "no .py files" in empty.stderr
    bad_target = runner.invoke(app, ["inventory", *map(str, LAYERS), "--emit-rules", str(tmp_path / "rules.txt")])
    assert bad_target.exit_code == ExitCode.USAGE
    assert "tool_rules.py" in bad_target.stderr


# ---------------------------------------------------------------- the emitted rules module


@pytest.fixture
def emitted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    target = tmp_path / "tool_rules.py"
    result = runner.invoke(app, ["inventory", *map(str, LAYERS), "--emit-rules", str(target)])
    assert result.exit_code == ExitCode.OK, result.output
    assert "wrote" in result.stderr
    monkeypatch.syspath_prepend(str(FIXTURES))
    spec = importlib.util.spec_from_file_location("tool_rules", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    for name in [n for n in sys.modules if n.split(".")[0] in {"plainpkg", "classtools", "webtools"}]:
        del sys.modules[name]


def _outcome(trigger: Callable[[], Any]) -> tuple[str, Any]:
    try:
        value = trigger()
        if asyncio.iscoroutine(value):
            value = asyncio.run(value)
    except Exception as exc:
        return "exception", exc
    return "value", value


def _code(rules: Rules, trigger: Callable[[], Any]) -> str | None:
    """The code the rules give what the trigger raises or returns; None when no rule really maps it."""
    how, what = _outcome(trigger)
    translation = rules.translate_exception(what) if how == "exception" else rules.translate_result(what)
    if translation is None or translation.unmapped:
        return None
    return translation.error.code.value


def _triggers() -> list[tuple[str, str, str | None, Callable[[], Any]]]:
    """``(tool, kind, what, call)``: a real call into the fixture code that takes that error path."""
    from classtools.service import Calendar
    from plainpkg import tools
    from webtools.invoices import fetch_invoice

    cal = Calendar()
    return [
        ("get_user", "escapes-from-call", None, lambda: tools.get_user("nobody")),
        ("create_event", "raise", "ValueError", lambda: tools.create_event_tool("", "2025-01-01")),
        ("create_event", "raise", "InvalidDate", lambda: tools.create_event_tool("t", "soon")),
        ("create_event", "escapes-from-call", "Throttled 429", lambda: tools.create_event_tool("x" * 11, "2025-01-01")),
        ("read_config", "except-return", None, lambda: tools.read_config("/nonexistent/config.toml")),
        ("lookup", "error-return", "'Error: key is required'", lambda: tools.lookup("")),
        ("lookup", "error-return", "status 410", lambda: tools.lookup("gone")),
        ("lookup", "except-return", None, lambda: tools.lookup("zz")),
        ("risky", "except-return", None, lambda: tools.risky(0)),
        ("risky", "raise", "Mystery", lambda: tools.risky(1)),
        ("list_events", "escapes-from-call", None, lambda: Calendar.list_events.__wrapped__(cal, 9)),
        ("book_room", "raise", "QuotaExceededError", lambda: Calendar.book.__wrapped__(cal, "a", 101)),
        ("book_room", "raise", "Fail", lambda: Calendar.book.__wrapped__(cal, "x", 2)),
        ("book_room", "raise", "TimeoutError", lambda: Calendar.book.__wrapped__(cal, "slow", 2)),
        ("fetch_invoice", "abort", "HTTPException 404", lambda: fetch_invoice("abc", "ada")),
        ("fetch_invoice", "escapes-from-call", None, lambda: fetch_invoice("slow", "ada")),
        ("fetch_invoice", "abort", "HTTPException 403", lambda: fetch_invoice("1", "bob")),
        ("fetch_invoice", "abort", "HTTPException 418", lambda: _raise(HTTPException(status_code=418))),
        ("read_note", "escapes-from-call", None, lambda: _raise(type("NoteNotFound", (Exception,), {})("n1"))),
        ("write_note", "error-return", "'Error: note too large'", lambda: "Error: note too large"),
        ("write_note", "raise", "RuntimeError", lambda: _raise(RuntimeError("disk trouble"))),
    ]


def _raise(exc: BaseException) -> None:
    raise exc


def test_the_emitted_module_imports_and_maps_real_errors_as_proposed(emitted: ModuleType, found: Inventory) -> None:
    rules = emitted.RULES
    assert isinstance(rules, Rules)
    checked = 0
    for tool, kind, what, trigger in _triggers():
        site = _site(found, tool, kind, what)
        assert _code(rules, trigger) == site.code, (tool, kind, what, site.reason)
        checked += 1
    assert checked == 21


def test_the_emitted_rules_are_narrow_where_the_message_decided_the_code(emitted: ModuleType) -> None:
    rules = emitted.RULES
    assert _code(rules, lambda: _raise(ValueError("title must not be empty, got ''"))) == "validation_error"
    assert _code(rules, lambda: _raise(ValueError("some other internal problem"))) is None
    assert _code(rules, lambda: _raise(LookupError("calendar 3 does not exist"))) == "not_found"
    assert _code(rules, lambda: _raise(LookupError("cache miss"))) is None
    assert _code(rules, lambda: _raise(HTTPException(status_code=404))) == "not_found"
    assert _code(rules, lambda: _raise(HTTPException(status_code=500))) is None


def test_an_emitted_exception_rule_serves_the_authors_fixed_words_not_the_codes_generic_ones(
        emitted: ModuleType) -> None:
    """A fresh-clone walk: the draft rule replaced "booking id must look like BK-1234, got 'BK-1'" with "An argument
    is missing or malformed..." in cutover, and the gate still said READY."""
    found = emitted.RULES.translate_exception(ValueError("title must not be empty, got ''"))
    assert (found.error.code.value, found.error.message) == ("validation_error", "Title must not be empty.")


def test_the_emitted_module_comments_every_site(found: Inventory) -> None:
    text = emit_rules(found, [str(FIXTURES)])
    for site in found.sites:
        assert f"{site.file}:{site.line} {site.tool} ({site.kind}" in text
    assert "# UNPLACED" in text
    assert "# Already mapped (no rule needed):" in text
    assert text.count("RULES = RULES.on") == len({s.rule for s in found.sites if s.rule is not None})
    compile(text, "tool_rules.py", "exec")


def test_aborts_inherited_statuses_runtime_texts_and_unknown_raises(tmp_path: Path) -> None:
    (tmp_path / "api.py").write_text(
        "from flask import abort\n"
        "class ApiError(Exception):\n    status = 409\n"
        "class Clash(ApiError):\n    pass\n"
        "def tool(f):\n    return f\n"
        "@tool\n"
        "def a(x, err):\n"                                   # line 9
        "    if x == 1:\n        abort(404)\n"               # line 11
        "    if x == 2:\n        raise Clash()\n"            # line 13
        "    if x == 3:\n        raise err\n"                # line 15
        "    try:\n        return {'v': int(x)}\n"
        "    except KeyError as e:\n        return {'error': str(e)}\n"   # line 19
        "    except TypeError:\n        return 'Error: bad input {}'.format(x)\n"  # line 21
    )
    result = inventory([tmp_path])
    sites = {s.line: s for s in result.sites}
    assert sorted(sites) == [11, 13, 15, 19, 21]
    assert (sites[11].kind, sites[11].status, sites[11].code) == ("abort", 404, "not_found")
    assert (sites[13].code, sites[13].reason) == ("conflict", "the class sets HTTP status 409")
    assert sites[15].code is None and "class the source does not say" in sites[15].reason
    assert sites[19].code is None and "built at run time" in sites[19].reason
    assert (sites[21].message, sites[21].code) == ("Error: bad input …", "validation_error")


def test_a_select_that_matches_nothing_names_the_modules_it_read(tmp_path: Path) -> None:
    package = tmp_path / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "travel_tools.py").write_text(
        "def lookup(x):\n    if not x:\n        return {'error': 'x missing'}\n    return _helper(x)\n\n"
        "def _helper(x):\n    raise ValueError('bad ' + x)\n")
    missed = inventory([package], select=["travel_tools.*"])
    assert not missed.tools and "the modules read are named proj, proj.travel_tools" in format_table(missed)
    found = inventory([package], select=["proj.travel_tools.*"])
    assert [t.name for t in found.tools] == ["lookup"]  # _helper is no tool of its own: its raise is lookup's
    assert {(s.tool, s.kind) for s in found.sites} == {("lookup", "error-return"), ("lookup", "escapes-from-call")}
