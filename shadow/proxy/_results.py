"""MCP tool results in the proxy: what one means to the rules, as the client got it, and as cutover serves it."""

from __future__ import annotations

import json
from collections.abc import Mapping

from mcp import types

from shadow._redact import JSONValue
from shadow.contract._payloads import Payload
from shadow.contract._rules import looks_like_error
from shadow.normalize import _http as normalize
from shadow.normalize._mcp import wraps_text

__all__ = ["block_value", "result_dump", "result_value", "structured_result"]


def result_value(result: types.CallToolResult) -> object:
    """What a tool result means to the result rules (see ``normalize.tool_text_value``)."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    text = "\n".join(texts)
    structured = result.structured_content
    if result.is_error:
        if isinstance(structured, Mapping) and looks_like_error(structured):
            return dict(structured)
        return normalize.tool_text_value(text, is_error=True)
    if structured is not None and not wraps_text(structured, text):
        return structured
    if len(texts) == len(result.content):
        return normalize.tool_text_value(text) if texts else None
    return [block_value(block) for block in result.content]


def _decoded_size(base64: str) -> int:
    """The number of bytes a base64 text holds (counted, not decoded)."""
    return len(base64.rstrip("=")) * 3 // 4


def block_value(block: types.ContentBlock) -> JSONValue:
    """A content block as result data: a text block as it is; a non-text block (image, audio, embedded resource,
    resource link) with its bytes replaced by their ``size``, since cutover serves the block itself beside the
    JSON text (``structured_result``), and the payload names it without repeating it."""
    dumped: dict[str, JSONValue] = block.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(block, types.ImageContent | types.AudioContent):
        dumped.pop("data", None)
        dumped["size"] = _decoded_size(block.data)
    elif isinstance(block, types.EmbeddedResource):
        contents = block.resource
        inner = contents.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"text", "blob"})
        inner["size"] = (_decoded_size(contents.blob) if isinstance(contents, types.BlobResourceContents)
                         else len(contents.text.encode("utf-8", "surrogatepass")))
        dumped["resource"] = inner
    return dumped


def result_dump(result: types.CallToolResult) -> JSONValue:
    """A tool result as the client received it (content, isError, structuredContent), as JSON data."""
    dumped: JSONValue = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def structured_result(payload: Payload, result: types.CallToolResult | None = None) -> types.CallToolResult:
    """The structured payload as an MCP result: JSON text for clients that read only content, structured
    content for those that read it, and ``isError`` on errors. A success keeps the non-text blocks of the
    child's ``result`` (images, audio, resources, resource links) after the JSON text, in their order."""
    kept = [block for block in result.content if not isinstance(block, types.TextContent)] if (
        result is not None and payload["ok"]) else []
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False)), *kept],
        structured_content=dict(payload),
        is_error=not payload["ok"],
    )
