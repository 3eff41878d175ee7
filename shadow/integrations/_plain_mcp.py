"""The plain ``@shadow.tool`` under a framework: an MCP error result with ``isError``, LangChain's content pairs."""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from shadow.contract._author import shown_name
from shadow.contract._payloads import Payload
from shadow.integrations._channels import MCP_TOOL_ERRORS, carried, carrier, payload_text
from shadow.integrations._context import current_mcp_request
from shadow.integrations._plain_langchain import content_and_artifact
from shadow.integrations._returns import ContractError, ContractOk, JsonPayload


def _called_tool(request: Any) -> str | None:
    """The tool an MCP request calls (``tools/call``), read from the SDK's request context, or ``None``."""
    params = getattr(request, "params", None)
    if getattr(request, "method", None) != "tools/call" or not isinstance(params, Mapping):
        return None
    name = params.get("name")
    return name if isinstance(name, str) else None


def _mcp_call() -> tuple[str, str] | None:
    """(framework, tool name) of the MCP tool call this code runs in: FastMCP's request, else an ``MCPServer``
    request published by ``instrument_mcp``; ``None`` outside one (nothing is imported)."""
    module = sys.modules.get("fastmcp.server.dependencies")
    request = module.fastmcp_request_ctx.get(None) if module is not None else None
    if request is not None:
        name = _called_tool(getattr(request, "_srctx", None))
        return ("fastmcp", name) if name else None
    name = _called_tool(current_mcp_request())
    return ("mcp", name) if name else None


def _arms(advertised: inspect.Signature | None) -> tuple[Any, ...] | None:
    """The legacy arms of a return annotation widened as a union (``T | ContractOk | ContractError``), else None."""
    annotation = advertised.return_annotation if advertised is not None else None
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return None
    args = typing.get_args(annotation)
    return tuple(a for a in args if a not in (ContractOk, ContractError)) if ContractOk in args else None


class PlainDelivery:
    """How the plain decorator serves a cutover payload: a ``dict`` whose ``str()`` is JSON, except for an error
    payload while an MCP server calls this very tool, which becomes a ``CallToolResult`` with ``isError`` (FastMCP
    and ``MCPServer`` pass one through as is; clients do not validate an error result against the output schema).

    Its ``structuredContent`` still has the advertised shape: ``{"result": ...}`` where the framework wraps.
    """

    __slots__ = ("advertised", "wrapper")

    def __init__(self, advertised: inspect.Signature | None) -> None:
        self.advertised = advertised
        self.wrapper: Callable[..., Any] | None = None  # set once the wrapper exists

    def __call__(self, payload: Payload) -> Any:
        if payload["ok"] or self.wrapper is None:
            return JsonPayload(payload)
        try:
            if not self._called():
                return JsonPayload(payload)
            from mcp.types import CallToolResult, TextContent

            structured: dict[str, Any] = {"result": payload} if self._wraps() else dict(payload)
            return CallToolResult(content=[TextContent(type="text", text=str(JsonPayload(payload)))],
                                  structured_content=structured, is_error=True)
        except Exception:  # an SDK that moved things: the payload as the framework would serve any dict
            return JsonPayload(payload)

    def raised(self, exc: BaseException, payload: Payload) -> BaseException | None:
        """An MCP ``ToolError`` this very tool call raised is served as the ``isError`` result; one raised
        elsewhere (a direct call, another tool's, an ``MCPServer`` without ``instrument_mcp``) is raised again
        carrying the payload, which the server still turns into an ``isError`` result. Others: ``carried``."""
        name = shown_name(exc)
        if name is None or name not in MCP_TOOL_ERRORS:
            return carried(exc, payload)
        if self._called():
            return None
        return carrier(exc, name, payload_text(payload))

    def pairs(self) -> bool:
        """Whether a LangChain tool with ``response_format="content_and_artifact"`` is calling this wrapper."""
        return self.wrapper is not None and content_and_artifact(self.wrapper)

    def _called(self) -> bool:
        """Whether an MCP client's call of this very tool is running."""
        call = _mcp_call()
        return call is not None and call[1] in self._names()

    def _names(self) -> set[str]:
        """The names this tool may be registered under: FastMCP's ``@mcp.tool(name=...)``, else the function's."""
        registered = getattr(getattr(self.wrapper, "__fastmcp__", None), "name", None)
        names = {str(getattr(self.wrapper, "__name__", ""))}
        if isinstance(registered, str):
            names.add(registered)
        return names

    def _wraps(self) -> bool:
        """Whether the framework wraps this tool's structured content in ``{"result": ...}``: FastMCP and MCPServer
        both wrap a scalar and any union (what ``widened_signature`` widens as a union), neither an object."""
        return _arms(self.advertised) is not None
