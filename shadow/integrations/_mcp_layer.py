"""The MCP SDK's ``MCPServer``: every tool a server has already behind its shadow flag, ``shadow_server(server)``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shadow.contract._rules import Rules
from shadow.integrations._mcp import mcp_tool
from shadow.typing import FlagSource


def shadow_server(
    server: Any, *, ignore: Iterable[str] = (), rules: Rules | None = None, idempotent: bool = True,
    flags: FlagSource | None = None,
) -> Any:
    """Put every tool registered on the ``MCPServer`` ``server`` behind its shadow flag, in place; returns ``server``.

    Each tool is registered again through ``mcp_tool(server)`` under its own name, with its title, description,
    annotations, icons, meta and structured output as they were: the same records and cutover results (an
    ``isError`` result whose text is the payload, an SDK ``ToolError`` included) as decorating each one. The tool
    list keeps its order. Tools named in ``ignore`` stay as they are (no record), as do tools already shadowed.
    Call it after the tools are registered; tools added later are not shadowed.
    """
    if isinstance(ignore, str):
        raise TypeError(f"shadow_server(ignore=...) takes tool names, not one string: ignore=[{ignore!r}]")
    manager = getattr(server, "_tool_manager", None)
    if manager is None or not callable(getattr(manager, "list_tools", None)):
        raise TypeError(f"shadow_server takes an mcp.server.MCPServer, not {type(server).__name__}")
    skip = frozenset(ignore)
    order = [tool.name for tool in manager.list_tools()]
    for tool in manager.list_tools():
        if tool.name in skip or getattr(tool.fn, "__shadow_tool__", None) is not None:
            continue
        server.remove_tool(tool.name)
        mcp_tool(server, name=tool.name, rules=rules, idempotent=idempotent, flags=flags, title=tool.title,
                 description=tool.description, annotations=tool.annotations, icons=tool.icons, meta=tool.meta,
                 structured_output=tool.output_schema is not None)(tool.fn)
    tools = getattr(manager, "_tools", None)
    if isinstance(tools, dict) and set(tools) == set(order):
        manager._tools = {name: tools[name] for name in order}  # the list the model sees keeps its order
    return server
