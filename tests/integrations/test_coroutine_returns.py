"""A plain ``def`` tool that hands back a coroutine (``return impl(...)``, as office-word-mcp-server's tools do),
through FastMCP's own client: the tool runs in every mode and its call is logged and served by what it gives."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import calls

from shadow.testing import InMemoryFlags, InMemoryStore

fastmcp = pytest.importorskip("fastmcp")
from shadow.integrations import ShadowTransform, fastmcp_tool  # noqa: E402

RAN: list[str] = []


async def _create(name: str) -> str:
    if name == "missing/x.docx":
        return "Cannot create document: Directory missing does not exist"
    if name == "boom":
        raise ValueError("Document name must end in .docx")
    RAN.append(name)
    return f"Document {name} created successfully"


def _servers(flags: InMemoryFlags) -> list[Any]:
    decorated = fastmcp.FastMCP("decorated")

    @fastmcp_tool(decorated, flags=flags)
    def create_document(name: str) -> Any:
        """Create a document."""
        return _create(name)

    transformed = fastmcp.FastMCP("transformed", transforms=[ShadowTransform(flags=flags)])

    @transformed.tool
    def create_document_too(name: str) -> Any:
        """Create a document."""
        return _create(name)

    return [(decorated, "create_document"), (transformed, "create_document_too")]


async def _calls(server: Any, tool: str) -> list[Any]:
    async with fastmcp.Client(server) as client:
        return [await client.call_tool(tool, {"name": n}, raise_on_error=False)
                for n in ("a.docx", "missing/x.docx", "boom")]


@pytest.mark.parametrize("mode", ["legacy", "shadow", "cutover"])
def test_the_coroutine_a_plain_tool_hands_back_runs_in_every_mode(
        mode: str, flags: InMemoryFlags, log: InMemoryStore) -> None:
    for server, tool in _servers(flags):
        flags.set(tool, mode)
        RAN.clear()
        results = asyncio.run(_calls(server, tool))
        assert RAN == ["a.docx"], (tool, mode)
        texts = [r.content[0].text if r.content else None for r in results]
        if mode == "cutover":
            payloads = [json.loads(t) for t in texts]
            assert payloads[0] == {"ok": True, "data": "Document a.docx created successfully"}
            assert payloads[1]["error"]["code"] == "not_found"
            assert payloads[1]["error"]["message"] == "Cannot create document: Directory missing does not exist"
            # a plain exception, whose text FastMCP shows the model (no masking): the author's words, unplaced
            assert payloads[2]["error"]["code"] == "rejected"
            assert payloads[2]["error"]["message"] == "Document name must end in .docx"
            assert [r.is_error for r in results] == [False, True, True]
        else:
            assert texts[:2] == ["Document a.docx created successfully",
                                 "Cannot create document: Directory missing does not exist"]
            assert results[2].is_error and "must end in .docx" in texts[2]
        if mode != "legacy":
            outcomes = [r.outcome for r in calls(log, tool)]
            assert outcomes == ["ok", "error", "error"], (tool, mode)


def test_the_plain_decorator_under_fastmcp_awaits_it_too(flags: InMemoryFlags, log: InMemoryStore) -> None:
    import shadow

    server = fastmcp.FastMCP("plain")

    @server.tool
    @shadow.tool(flags=flags)
    def create_plain(name: str) -> Any:
        """Create a document."""
        return _create(name)

    flags.set("create_plain", "cutover")
    RAN.clear()
    results = asyncio.run(_calls(server, "create_plain"))
    assert RAN == ["a.docx"]
    assert json.loads(results[0].content[0].text) == {"ok": True, "data": "Document a.docx created successfully"}
    assert [r.outcome for r in calls(log, "create_plain")] == ["ok", "error", "error"]


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
@pytest.mark.parametrize("mode", ["legacy", "shadow", "cutover"])
def test_under_langchain_which_never_awaits_it_the_coroutine_is_the_value_as_in_legacy(
        mode: str, flags: InMemoryFlags, log: InMemoryStore) -> None:
    pytest.importorskip("langchain_core")
    from shadow.integrations import langchain_tool

    @langchain_tool(flags=flags)
    def create_lc(name: str) -> Any:
        """Create a document."""
        return _create(name)

    flags.set("create_lc", mode)
    RAN.clear()
    got = create_lc.invoke({"name": "a.docx"})
    assert RAN == []  # LangChain never awaits what a plain def returns: the tool did not run, in legacy either
    if mode == "shadow":
        assert asyncio.iscoroutine(got) and got.__qualname__ == "_create"  # the tool's own coroutine, as in legacy
        got.close()
    elif mode == "cutover":
        assert json.loads(got)["ok"] is True and "coroutine" in json.loads(got)["data"]
    else:
        got.close()
    if mode != "legacy":
        assert [r.outcome for r in calls(log, "create_lc")] == ["ok"]  # logged, never lost
