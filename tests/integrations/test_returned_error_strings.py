"""A plain string a tool returns with no ``Error`` opening, through FastMCP's own client: an error read by its words,
a success left alone, in shadow mode and in cutover."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import calls

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

fastmcp = pytest.importorskip("fastmcp")
from shadow.integrations import fastmcp_tool  # noqa: E402

#: What a legacy tool returns for each query: real tools' shapes, errors with no marker and successes alike.
TEXTS = {
    "upstream": "API request failed with status 500: upstream returned an empty body",
    "missing": "Section \"Pricing\" not found in document handbook.md",
    "too_many": "Too many columns selected; choose at most 20",  # no failure opening: left as success data
    "argument": "Please provide a query to search for",
    "empty": "No results found for 'pricing'",
    "created": "Successfully created sheet 'Q3' in workbook budget.xlsx",
    "report": "Invalid rows: 3\nValid rows: 97",
    "json": '{"error": "Document missing.docx does not exist"}',
    "json_data": '{"results": [], "error": null}',
}


def _server(flags: InMemoryFlags) -> Any:
    server = fastmcp.FastMCP("strings")

    @fastmcp_tool(server, flags=flags)
    def lookup(query: str) -> str:
        """Look a thing up."""
        return TEXTS[query]

    return server


async def _call_all(server: Any) -> dict[str, Any]:
    async with fastmcp.Client(server) as client:
        return {q: await client.call_tool("lookup", {"query": q}, raise_on_error=False) for q in TEXTS}


def test_shadow_mode_returns_the_text_unchanged_and_logs_marker_less_errors_as_errors(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    flags.set("lookup", "shadow")
    results = asyncio.run(_call_all(_server(flags)))
    for query, result in results.items():
        assert not result.is_error
        assert result.content[0].text == TEXTS[query]
    outcomes = {r.args["query"]: r.outcome for r in calls(log)}
    assert outcomes == {"upstream": "error", "missing": "error", "too_many": "ok", "argument": "error",
                        "empty": "ok", "created": "ok", "report": "ok", "json": "error", "json_data": "ok"}


def test_cutover_serves_a_marker_less_error_in_the_authors_words_and_leaves_successes_as_data(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    flags.set("lookup", "cutover")
    results = asyncio.run(_call_all(_server(flags)))
    payloads = {query: json.loads(result.content[0].text) for query, result in results.items()}
    for payload in payloads.values():
        shadow.validate(payload)
    served = {q: (p["error"]["code"], p["error"]["next_action"]) for q, p in payloads.items() if not p["ok"]}
    assert served == {"upstream": ("upstream_unavailable", "retry"), "missing": ("not_found", "ask_user"),
                      "argument": ("validation_error", "ask_user"), "json": ("not_found", "ask_user")}
    assert payloads["json"]["error"]["message"] == "Document missing.docx does not exist"
    assert payloads["missing"]["error"]["message"] == TEXTS["missing"]  # the author's words, not a generic text
    assert all(results[q].is_error for q in served)
    for query in ("too_many", "empty", "created", "report", "json_data"):
        assert payloads[query] == {"ok": True, "data": TEXTS[query]}
