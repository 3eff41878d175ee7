"""The MCP SDK's ``MCPServer``: ``@mcp_tool(server)`` in place of ``@server.tool()``, sessions from its connections."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from shadow.contract._payloads import Payload
from shadow.contract._rules import Rules
from shadow.integrations._context import bind_mcp_request, unbind_mcp_request
from shadow.integrations._returns import is_primitive, mcp_object_union, object_return, widened_signature
from shadow.integrations._serve import ShadowOptions, check_function, payload_json
from shadow.typing import FlagSource


async def _publish_request(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """MCPServer middleware: make the request's connection known to the tool bodies (mcp 2.x has no such variable)."""
    token = bind_mcp_request(ctx)
    try:
        return await call_next(ctx)
    finally:
        unbind_mcp_request(token)


def instrument_mcp(server: Any) -> None:
    """Let shadow read the MCP session of every request of ``server``: ``mcp_tool`` does it; call it yourself for
    plain ``@server.tool()`` / ``@shadow.tool`` functions. Idempotent."""
    middleware = getattr(server, "middleware", None)
    if not isinstance(middleware, list):
        raise TypeError(f"mcp_tool(server) takes an mcp.server.MCPServer first, not {type(server).__name__}")
    if _publish_request not in middleware:
        middleware.append(_publish_request)


def mcp_tool(
    server: Any, fn: Callable[..., Any] | None = None, /, *, name: str | None = None, rules: Rules | None = None,
    idempotent: bool = True, flags: FlagSource | None = None, ignore: Iterable[str] = (), **options: Any,
) -> Any:
    """Register ``fn`` on the ``MCPServer`` ``server`` behind its shadow flag: ``@mcp_tool(server)``.

    The schema is the one ``@server.tool()`` generates (a primitive output schema widened to admit the payload);
    ``options`` (``description=``, ``title=``, ``annotations=``, ``structured_output=``, ...) go to MCPServer. In
    cutover the structured arm gets a ``CallToolResult`` whose text is the payload's JSON, whose
    ``structuredContent`` matches the output schema, with ``isError`` on errors. The server gets a middleware that
    ties shadow sessions to MCP sessions (handshake-era connections and streamable HTTP sessions only: from protocol
    2026-07-28 on every request is its own connection). Put the ``shadow describe --tool`` paragraph in
    ``description=``.
    """
    instrument_mcp(server)
    shadow = ShadowOptions(name=name, rules=rules, idempotent=idempotent, flags=flags, ignore=ignore, awaits=False,
                           shows=False)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        check_function(function, "mcp_tool(server)")
        shape: dict[str, bool] = {}
        wrapper = shadow.wrap(function, lambda payload: _result(payload, shape))
        tool_name = name or function.__name__
        typed = object_return(function)
        if typed is not None:  # one object schema admitting both
            wrapper.__signature__ = typed[0].replace(  # type: ignore[attr-defined]
                return_annotation=mcp_object_union(typed[1], tool_name))
        server.add_tool(wrapper, name=tool_name, **options)
        try:
            metadata = server._tool_manager.get_tool(tool_name).fn_metadata
            shape["wrap"], shape["schema"] = bool(metadata.wrap_output), metadata.output_schema is not None
        except AttributeError:  # a later SDK moved its tool manager: a widened primitive is what it wraps
            try:
                signature = inspect.signature(function, eval_str=True)
                widened = widened_signature(function, signature) is not None
                wrapped = widened and is_primitive(signature.return_annotation)
            except Exception:
                widened = wrapped = False
            shape["wrap"], shape["schema"] = wrapped, widened
        return wrapper

    return register if fn is None else register(fn)


def _result(payload: Payload, shape: dict[str, bool]) -> Any:
    from mcp.types import CallToolResult, TextContent

    structured: dict[str, Any] = {"result": payload} if shape.get("wrap") else dict(payload)
    return CallToolResult(content=[TextContent(type="text", text=payload_json(payload))],
                          structured_content=structured, is_error=not payload["ok"])
