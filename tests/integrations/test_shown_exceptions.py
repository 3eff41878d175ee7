"""A plain exception whose text the framework showed the model in legacy keeps the author's words in cutover:
FastMCP shows any exception (``Error calling tool 'x': <text>``) unless its server masks error details; MCPServer
keeps a crash's text on the server, so there the code's own message stays."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import calls

import shadow
from shadow.analytics._retranslate import retranslate
from shadow.testing import InMemoryFlags, InMemoryStore

fastmcp = pytest.importorskip("fastmcp")
from shadow.integrations import ShadowTransform, fastmcp_tool  # noqa: E402

PRINCIPAL = "Principal must be greater than 0"
POW = "Function 'pow()' requires two parameters: pow(base, exponent). Example: pow(2, 3)"


def _tools() -> tuple[Any, Any]:
    """The two tools, as new functions (FastMCP marks a function it registers)."""

    def interest(principal: float) -> float:
        if principal <= 0:
            raise ValueError(PRINCIPAL)
        return principal * 0.05

    def calculate(expression: str) -> float:
        if expression == "pow(2)":
            raise ValueError(POW)
        if expression == "bug":
            return len(None)  # type: ignore[arg-type]  # a bug: Python's own TypeError
        return 4.0

    return interest, calculate


def _servers(flags: InMemoryFlags, masks: bool = False) -> list[tuple[Any, str]]:
    """The same tools through the three FastMCP paths: ``fastmcp_tool``, ``ShadowTransform``, ``@shadow.tool``."""
    decorated = fastmcp.FastMCP("decorated", mask_error_details=masks)
    interest, calculate = _tools()
    fastmcp_tool(decorated, name="interest", flags=flags)(interest)
    fastmcp_tool(decorated, name="calculate", flags=flags)(calculate)
    transformed = fastmcp.FastMCP("transformed", mask_error_details=masks, transforms=[ShadowTransform(flags=flags)])
    interest, calculate = _tools()
    transformed.tool(name="interest")(interest)
    transformed.tool(name="calculate")(calculate)
    plain = fastmcp.FastMCP("plain", mask_error_details=masks)
    interest, calculate = _tools()
    plain.tool(name="interest")(shadow.tool(name="interest", flags=flags)(interest))
    plain.tool(name="calculate")(shadow.tool(name="calculate", flags=flags)(calculate))
    return [(decorated, "decorated"), (transformed, "transformed"), (plain, "plain")]


async def _run(server: Any) -> list[Any]:
    async with fastmcp.Client(server) as client:
        return [await client.call_tool(tool, args, raise_on_error=False) for tool, args in (
            ("interest", {"principal": -5}), ("calculate", {"expression": "pow(2)"}),
            ("calculate", {"expression": "bug"}), ("interest", {"principal": 100}))]


def _texts(results: list[Any]) -> list[str]:
    return [r.content[0].text for r in results]


@pytest.mark.parametrize("masks", [False, True])
def test_legacy_fastmcp_shows_the_exception_text_unless_the_server_masks_it(masks: bool, flags: InMemoryFlags) -> None:
    for server, _ in _servers(flags, masks):
        texts = _texts(asyncio.run(_run(server)))
        assert (PRINCIPAL in texts[0]) is not masks
        assert (POW in texts[1]) is not masks


def test_cutover_serves_the_shown_exception_in_its_authors_words(flags: InMemoryFlags) -> None:
    flags.set("interest", "cutover")
    flags.set("calculate", "cutover")
    for server, path in _servers(flags):
        results = asyncio.run(_run(server))
        payloads = [json.loads(t) for t in _texts(results)]
        principal, pow_, bug, ok = payloads
        assert principal["error"]["message"] == PRINCIPAL, path
        assert principal["error"]["code"] == "validation_error", path
        assert pow_["error"]["message"] == POW, path  # unplaced: rejected, never a "failed unexpectedly" stop
        assert (pow_["error"]["code"], pow_["error"]["next_action"]) == ("rejected", "ask_user"), path
        # a bug stays internal_error, in the words the model read in legacy (not the code's generic ones)
        assert bug["error"]["code"] == "internal_error", path
        assert bug["error"]["message"] == "object of type 'NoneType' has no len()", path
        assert ok == {"ok": True, "data": 5.0}, path
        assert [r.is_error for r in results] == [True, True, True, False], path


def test_a_server_that_masks_error_details_gets_the_codes_own_message(flags: InMemoryFlags) -> None:
    flags.set("interest", "cutover")
    flags.set("calculate", "cutover")
    for server, path in _servers(flags, masks=True):
        principal, pow_, _, _ = (json.loads(t) for t in _texts(asyncio.run(_run(server))))
        assert PRINCIPAL not in principal["error"]["message"], path
        assert POW not in pow_["error"]["message"], path
        assert pow_["error"]["code"] == "internal_error", path


def test_shadow_mode_logs_the_shown_exception_and_reads_it_as_cutover_would(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    flags.set("interest", "shadow")
    flags.set("calculate", "shadow")
    decorated, _ = _servers(flags)[0]
    texts = _texts(asyncio.run(_run(decorated)))
    assert PRINCIPAL in texts[0] and POW in texts[1]  # legacy, unchanged
    shadow.flush(10)
    records = calls(log, "interest") + calls(log, "calculate")
    legacy = {r.legacy_payload["message"]: r for r in records if r.outcome == "error"}  # type: ignore[index]
    assert legacy[PRINCIPAL].legacy_payload == {"exception": "ValueError", "message": PRINCIPAL, "shown": True}
    assert legacy[PRINCIPAL].new_payload["error"]["message"] == PRINCIPAL  # type: ignore[index]
    assert legacy[POW].code == "rejected" and legacy[POW].unmapped
    bug = next(r for r in records if isinstance(r.legacy_payload, dict) and r.legacy_payload["exception"] == "TypeError")
    assert bug.legacy_payload["shown"] is True  # the model read it: a bug, served in those words
    assert bug.code == "internal_error"


def test_the_gate_judges_a_logged_shown_exception_as_the_model_read_it() -> None:
    rules = shadow.Rules.default()
    shown = retranslate([({"exception": "ValueError", "message": PRINCIPAL, "shown": True}, 3)], rules)
    unshown = retranslate([({"exception": "ValueError", "message": PRINCIPAL}, 3)], rules)
    assert (shown.codes, shown.unmapped) == ({"validation_error": 3}, 0)
    assert unshown.unmapped == 3  # the table's reading of a text the model never saw still gates cutover
    # a logged bug is judged by its exact type, as the live call was: its shown words read, else internal_error
    bug = retranslate([({"exception": "ZeroDivisionError", "message": "division by zero", "shown": True},
                        2), ({"exception": "TypeError", "message": "object of type 'NoneType' has no len()",
                              "shown": True}, 1)], rules)
    assert bug.codes == {"validation_error": 2, "internal_error": 1}


def test_mcpserver_keeps_a_crash_text_on_the_server_so_cutover_does_too(flags: InMemoryFlags) -> None:
    mcp_server = pytest.importorskip("mcp.server")
    from mcp import Client

    from shadow.integrations import mcp_tool

    server = mcp_server.MCPServer("sdk")
    mcp_tool(server, name="interest", flags=flags)(_tools()[0])

    async def run() -> Any:
        async with Client(server) as client:
            return await client.call_tool("interest", {"principal": -5})

    legacy = asyncio.run(run())
    assert PRINCIPAL not in legacy.content[0].text
    flags.set("interest", "cutover")
    served = json.loads(asyncio.run(run()).content[0].text)
    assert PRINCIPAL not in served["error"]["message"]  # the table's reading, in the code's own words


@pytest.mark.parametrize(("exc", "code"), [
    (PermissionError("You may not delete invoices of another tenant"), "permission_denied"),
    (NotImplementedError("Export to XLSX is not supported yet"), "not_implemented"),
    (FileNotFoundError("No PDF at reports/q3.pdf"), "not_found"),
])
def test_a_shown_exception_a_built_in_rule_places_keeps_its_words_over_the_rules_generic_message(
        exc: Exception, code: str) -> None:
    shown = shadow.Rules.default().translate_exception(exc, shown=True)
    assert (shown.error.code.value, shown.error.message) == (code, str(exc))
    unshown = shadow.Rules.default().translate_exception(exc)
    assert unshown.error.code.value == code and unshown.error.message != str(exc)  # never read: the generic one
    reviewed = shadow.Rules.default().on(type(exc), code, "Ask the user which tenant to use.")
    assert reviewed.translate_exception(exc, shown=True).error.message == "Ask the user which tenant to use."


def test_a_fastmcp_tool_annotated_not_idempotent_is_never_told_to_retry(flags: InMemoryFlags) -> None:
    from mcp.types import ToolAnnotations

    def charge(amount: int) -> str:
        raise TimeoutError("payment gateway did not answer")

    def lookup(amount: int) -> str:
        raise TimeoutError("rates service did not answer")

    transformed = fastmcp.FastMCP("payments", transforms=[ShadowTransform(flags=flags)])
    transformed.tool(annotations=ToolAnnotations(idempotentHint=False))(charge)
    transformed.tool(lookup)
    decorated = fastmcp.FastMCP("decorated")
    fastmcp_tool(decorated, name="charge", flags=flags, annotations={"destructiveHint": True})(
        _tools_like(charge))
    fastmcp_tool(decorated, name="lookup", flags=flags, idempotent=True,
                 annotations={"idempotentHint": False})(_tools_like(lookup))  # an explicit idempotent= wins
    flags.set("charge", "cutover")
    flags.set("lookup", "cutover")

    async def run(server: Any) -> dict[str, Any]:
        async with fastmcp.Client(server) as client:
            return {name: json.loads((await client.call_tool(name, {"amount": 5}, raise_on_error=False))
                                     .content[0].text)["error"] for name in ("charge", "lookup")}

    served = asyncio.run(run(transformed))
    assert (served["charge"]["next_action"], served["lookup"]["next_action"]) == ("ask_user", "retry")
    assert "identical call" not in served["charge"]["message"]
    served = asyncio.run(run(decorated))
    assert (served["charge"]["next_action"], served["lookup"]["next_action"]) == ("ask_user", "retry")


def _tools_like(fn: Any) -> Any:
    """A new function of the same code (FastMCP marks a function it registers)."""
    import types

    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def test_a_shown_bug_type_is_read_by_its_words_as_the_proxy_reads_the_same_text() -> None:
    """fastmcp-sample-server's calculate(1/0): the proxy read "division by zero" as validation_error while
    ShadowTransform served internal_error/stop for the same call."""
    rules = shadow.Rules.default()
    found = rules.translate_exception(ZeroDivisionError("division by zero"), shown=True)
    assert (found.error.code.value, found.error.next_action.value, found.error.message) == (
        "validation_error", "ask_user", "division by zero")
    unseen = rules.translate_exception(ZeroDivisionError("division by zero"))
    assert unseen.error.code.value == "internal_error" and "division" not in unseen.error.message
