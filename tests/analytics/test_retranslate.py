"""Logged errors judged again by today's rules: a result ``shadow proxy`` logged is read as the proxy read it."""

from __future__ import annotations

import shadow
from shadow.analytics._retranslate import retranslate, retranslate_by_tool

ZOD = ("MCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected "
       "number, received string at a")


def _logged(text: str, *, is_error: bool, structured: object = None) -> dict[str, object]:
    """A tool result as the proxy logs it (the mcp SDK's ``CallToolResult`` dumped by alias)."""
    dump: dict[str, object] = {"content": [{"type": "text", "text": text}], "isError": is_error,
                               "resultType": "complete"}
    if structured is not None:
        dump["structuredContent"] = structured
    return dump


def test_a_result_the_proxy_logged_is_judged_as_the_proxy_read_it() -> None:
    """server-everything through the proxy: `shadow ready --rules` read all 25 logged errors as successes."""
    rows = [(_logged(ZOD, is_error=True), 25), (_logged("3", is_error=False, structured={"result": 3}), 175),
            (_logged("Error: slot 9am is already booked", is_error=False,
                     structured={"result": "Error: slot 9am is already booked"}), 2)]
    found = retranslate(rows, shadow.Rules.default())
    assert (found.errors, found.unmapped, found.no_longer_errors) == (27, 0, 175)
    assert found.codes == {"validation_error": 25, "conflict": 2}


def test_a_users_rule_sees_the_text_without_the_sdks_prefix_as_the_proxy_does() -> None:
    rules = shadow.Rules.default().on_result(r"^Input validation error", "unsupported_input")
    assert retranslate([(_logged(ZOD, is_error=True), 4)], rules).codes == {"unsupported_input": 4}


def test_the_reports_judgement_reads_each_distinct_logged_payload_once_across_tools() -> None:
    """`report loop-rate --rules` counted and listed unmapped shapes in two passes, translating every payload twice."""
    seen: list[object] = []

    def counted(value: object) -> bool:
        seen.append(value)
        return False

    rules = shadow.Rules.default().on_result(counted, "conflict")
    rows = [{"tool": "book", "legacy_payload": '{"error": "room 12 is not free on <date>"}', "errors": 3},
            {"tool": "move", "legacy_payload": '{"error":  "room 12 is not free on <date>"}', "errors": 2},
            {"tool": "book", "legacy_payload": '{"error": "voucher balance too low"}', "errors": 1}]
    again, unmapped = retranslate_by_tool(rows, rules, shapes=True)
    assert len(seen) == 2
    assert (again["book"].errors, again["book"].distinct, again["move"].errors) == (4, 2, 2)
    assert unmapped is not None and sorted(unmapped) == sorted(
        tool for tool, r in again.items() if r.unmapped)
