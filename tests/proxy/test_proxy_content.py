"""``shadow proxy`` and non-text content: cutover serves images, audio and resources as blocks, not as JSON text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import types as mcp_types

from shadow.testing import assert_valid_payload
from tests.fixtures.mcp_server import PICTURE_AUDIO, PICTURE_BLOB, PICTURE_IMAGE
from tests.proxy.test_proxy import FIXTURE, drive, dump, environment, logged, proxy_command

#: what the payload's data says of ``picture``'s result: its texts, and each other block without its bytes
PICTURE_DATA: list[Any] = [
    {"type": "text", "text": "Here is the picture:"},
    {"type": "image", "mimeType": "image/png", "size": 300},
    {"type": "text", "text": "It shows a logo."},
    {"type": "audio", "mimeType": "audio/wav", "size": 30},
    {"type": "resource", "resource": {"uri": "file:///tmp/logo.gz", "mimeType": "application/gzip", "size": 3000}},
    {"type": "resource_link", "name": "logo.png", "uri": "file:///tmp/logo.png", "mimeType": "image/png"},
]


def _non_text(result: Any) -> list[Any]:
    return [block for block in dump(result)["content"] if block["type"] != "text"]


def test_cutover_serves_non_text_blocks_beside_the_json_text_without_their_bytes_in_it(tmp_path: Path) -> None:
    direct = drive(FIXTURE, environment(tmp_path, ""), [("picture", {})], tmp_path / "direct.log").results[0]
    seen = drive(proxy_command(), environment(tmp_path, "*=cutover"), [("picture", {}), ("boom", {})],
                 tmp_path / "err.log")
    served, failed = seen.results
    assert isinstance(served, mcp_types.CallToolResult) and not served.is_error
    first, *rest = served.content
    assert isinstance(first, mcp_types.TextContent)
    payload = json.loads(first.text)
    assert payload == {"ok": True, "data": PICTURE_DATA}
    assert served.structured_content == payload  # and so valid against the output schema the proxy declares
    assert_valid_payload(payload)
    # the child's image, audio, embedded resource and link, as it sent them, in its order
    assert [b.model_dump(by_alias=True, mode="json", exclude_none=True) for b in rest] == _non_text(direct)
    assert len(rest) == 4
    assert not any(raw in first.text for raw in (PICTURE_IMAGE[:40], PICTURE_AUDIO, PICTURE_BLOB[:40]))
    # an error is served as before: the JSON text alone
    assert isinstance(failed, mcp_types.CallToolResult) and failed.is_error and len(failed.content) == 1
    [call, _] = logged(tmp_path)
    assert call["new_payload"] == payload


def test_shadow_mode_passes_non_text_blocks_through_and_logs_what_cutover_would_serve(tmp_path: Path) -> None:
    direct = drive(FIXTURE, environment(tmp_path, ""), [("picture", {})], tmp_path / "direct.log").results[0]
    seen = drive(proxy_command(), environment(tmp_path, "*=shadow"), [("picture", {})], tmp_path / "err.log")
    assert dump(seen.results[0]) == dump(direct)  # unchanged, bytes and all
    [call] = logged(tmp_path)
    assert (call["outcome"], call["new_payload"]) == ("ok", {"ok": True, "data": PICTURE_DATA})


def test_a_returned_error_text_wrapped_as_structured_result_reads_as_an_error(tmp_path: Path) -> None:
    """A FastMCP tool annotated ``-> str`` sends its text twice: as content and as ``{"result": text}``; an
    ``Error: ...`` text was logged ok in shadow mode and served ``{"ok": true, "data": {"result": ...}}`` in cutover."""
    shadowed = drive(proxy_command(), environment(tmp_path, "*=shadow"), [("book_typed", {"slot": "9am"})],
                     tmp_path / "err.log")
    assert isinstance(shadowed.results[0], mcp_types.CallToolResult) and not shadowed.results[0].is_error
    [call] = logged(tmp_path)
    assert call["outcome"] == "error"
    assert call["new_payload"]["error"]["message"] == "slot 9am is already booked"
    served = drive(proxy_command(), environment(tmp_path, "*=cutover"), [("book_typed", {"slot": "9am"})],
                   tmp_path / "err2.log").results[0]
    assert isinstance(served, mcp_types.CallToolResult) and served.is_error
    assert json.loads(served.content[0].text)["error"]["code"] == "conflict"  # type: ignore[union-attr]
