"""`shadow inventory` on tool layers shaped like real MCP servers: nested factories, wrappers, hooks, dispatchers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shadow.cli import ExitCode, app
from shadow.inventory._run import Inventory, Site, inventory

SERVERS = Path(__file__).parents[1] / "fixtures" / "inventory" / "servers"
_MARK = re.compile(r"#\s*expect:\s*(.+)$")


@pytest.fixture(scope="module")
def found() -> Inventory:
    return inventory([SERVERS])


def _marked() -> set[tuple[str, int, str, str | None]]:
    marked = set()
    for path in sorted(SERVERS.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = _MARK.search(line)
            if match is not None:
                for item in match.group(1).split(";"):
                    kind, code = item.split()
                    marked.add((path.relative_to(SERVERS).as_posix(), number, kind,
                                None if code == "UNPLACED" else code))
    return marked


def _key(site: Site) -> tuple[str, int, str, str | None]:
    return Path(site.file).resolve().relative_to(SERVERS.resolve()).as_posix(), site.line, site.kind, site.code


def _sites(found: Inventory, tool: str) -> list[Site]:
    return [s for s in found.sites if s.tool == tool]


def test_every_marked_site_of_the_server_shaped_layers_is_found_with_its_code(found: Inventory) -> None:
    assert {_key(s) for s in found.sites} == _marked()


def test_tools_nested_in_a_factory_are_found_by_their_registered_names(found: Inventory) -> None:
    tools = {t.name: t for t in found.tools}
    assert {"repo_status", "repo_commit", "repo_branch", "fetch"} <= set(tools)
    assert tools["repo_status"].qualname == "create_server.status"  # named by RepoTools.STATUS.value
    assert tools["repo_status"].found_by == "@server.tool(name=RepoTools.STATUS.value)"
    assert tools["fetch"].found_by == "@server.tool" and tools["fetch"].is_async
    assert "serve" not in tools and "create_server" not in tools  # start-up code is not a tool
    assert not [s for s in found.sites if s.message == "no repository given"]


def test_sites_are_attributed_to_the_tool_the_model_calls_through_the_wrapper(found: Inventory) -> None:
    [commit] = _sites(found, "repo_commit")
    assert commit.code == "failed_precondition"  # "No changes staged", not validation_error
    assert commit.exception == "mcp.server.mcpserver.exceptions.ToolError"  # what the wrapper re-raises
    assert commit.message == "No changes staged for commit. Stage files with repo_add first."
    assert commit.via[0].startswith("repo_commit (")
    assert commit.via[-1].startswith("ValueError re-raised as ToolError by @reported -> told_to_model (")
    branch = {s.code: s for s in _sites(found, "repo_branch")}
    assert set(branch) == {"failed_precondition", "not_found"}  # "HEAD is detached"; "did not resolve"
    assert "RefError re-raised as ToolError" in branch["not_found"].via[-1]


def test_a_hook_passed_as_a_value_is_followed_and_named_in_the_chain(found: Inventory) -> None:
    refused = next(s for s in _sites(found, "fetch") if s.message and s.message.startswith("Refused to fetch"))
    assert refused.code == "permission_denied"
    assert refused.via[0].startswith("fetch_page (")
    assert refused.via[1].startswith("_refuse_private passed as a value (")
    closure = next(s for s in _sites(found, "fetch") if s.message == "Failed to fetch … - status code 403")
    assert closure.via[1].startswith("_check_redirect passed as a value (")  # a closure inside fetch_page


def test_methods_of_an_object_the_factory_creates_are_followed(found: Inventory) -> None:
    sites = {s.message: s for s in _sites(found, "convert_time")}
    dst = sites["Invalid time: … does not exist in … (skipped by a clock change)"]
    assert dst.code == "validation_error"  # "does not exist" about a time that cannot be, not not_found
    assert dst.via[0].startswith("clock.convert (")
    assert sites["Invalid timezone: …"].via[:2] == (dst.via[0], sites["Invalid timezone: …"].via[1])
    assert sites["Invalid timezone: …"].via[1].startswith("self.zone (")


def test_a_low_level_dispatcher_serves_one_tool_per_branch(found: Inventory) -> None:
    tools = {t.name: t for t in found.tools}
    assert {"list_tables", "read_query", "explain_query", "describe_table", "write_query",
            "handle_call_tool"} <= set(tools)
    assert tools["read_query"].found_by == "@server.call_tool(): name == 'read_query'"
    assert [s.code for s in _sites(found, "read_query")] == ["unsupported_input"]
    assert [s.code for s in _sites(found, "explain_query")] == ["unsupported_input"]  # case "a" | "b"
    assert [s.code for s in _sites(found, "describe_table")] == ["not_found"]
    assert [s.code for s in _sites(found, "write_query")] == ["upstream_unavailable"]  # if name == ...
    assert _sites(found, "list_tables") == []
    assert [s.message for s in _sites(found, "handle_call_tool")] == ["Unknown tool: …"]  # outside every branch


def test_select_names_functions_nested_in_a_factory(tmp_path: Path) -> None:
    (tmp_path / "srv.py").write_text(
        "def create_server():\n"
        "    def status(path):\n"
        "        raise ValueError('HEAD is detached')\n"
        "    def _helper():\n"
        "        raise KeyError('x')\n"
        "    return status\n"
        "def serve():\n"
        "    raise SystemExit(1)\n"
    )
    nested = inventory([tmp_path], select=["srv.create_server.*"])
    assert sorted(t.qualname for t in nested.tools) == ["create_server.status"]  # a glob takes no private helper
    assert {s.tool: s.code for s in nested.sites} == {"status": "failed_precondition"}
    private = inventory([tmp_path], select=["srv.create_server._*"])  # unless the pattern names it
    assert {s.tool: s.code for s in private.sites} == {"_helper": "not_found"}
    by_module = inventory([tmp_path], select=["srv"])
    assert sorted(t.qualname for t in by_module.tools) == ["create_server", "serve"]  # nested ones by path only


def test_the_command_lists_the_server_shaped_tools(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["inventory", str(SERVERS), "--emit-rules", str(tmp_path / "srv_rules.py")])
    assert result.exit_code == ExitCode.OK, result.output
    assert "no tools found" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith("16 distinct error sites in 13 tools")
    emitted = (tmp_path / "srv_rules.py").read_text()
    compile(emitted, "srv_rules.py", "exec")
    assert "No changes staged" in emitted


def test_a_local_variable_named_like_a_sibling_tool_is_not_taken_for_a_hook(tmp_path: Path) -> None:
    (tmp_path / "srv.py").write_text(
        "def create_server(server):\n"
        "    @server.tool()\n"
        "    def diff_staged(path):\n"
        "        diff = path.upper()\n"
        "        return f'Staged: {diff}'\n"
        "    @server.tool()\n"
        "    def diff(path):\n"
        "        raise ValueError('Ref did not resolve to an object')\n"
        "    return server\n"
    )
    found = inventory([tmp_path])
    assert [(s.tool, s.code) for s in found.sites] == [("diff", "not_found")]


def test_methods_of_a_fastmcp_mixin_are_tools_by_their_given_names(found: Inventory) -> None:
    tools = {t.name: t for t in found.tools}
    assert tools["extract_metadata"].qualname == "DocumentAnalysis.extract_metadata"
    assert tools["page_count"].found_by == "@mcp_tool()"
    [raised] = _sites(found, "page_count")
    assert raised.code == "validation_error"
