"""Shadow a tool where agents are built: one decorator per framework, each importing its framework only when used.

``fastmcp_tool(mcp)`` replaces ``@mcp.tool``, ``mcp_tool(server)`` MCPServer's ``@server.tool()``,
``langchain_tool`` LangChain's ``@tool``, ``openai_agents_tool`` the Agents SDK's ``@function_tool`` and
``pydantic_ai_tool(agent)`` PydanticAI's ``@agent.tool``/``@agent.tool_plain``. ``instrument_mcp(server)`` lets
plain ``@shadow.tool`` functions on an ``MCPServer`` see its MCP sessions. A whole tool layer in one line:
``ShadowTransform`` (FastMCP), ``shadow_server(server)`` (MCPServer), ``shadow_tools(tools)`` (LangChain/LangGraph),
``ShadowToolset``/``ShadowTools`` (PydanticAI), ``shadow_agent(agent)`` (the Agents SDK).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow._lazy import lazy_names

if TYPE_CHECKING:
    from shadow.integrations._fastmcp import fastmcp_tool
    from shadow.integrations._fastmcp_layer import ShadowTransform
    from shadow.integrations._langchain import langchain_tool
    from shadow.integrations._langchain_layer import shadow_tools
    from shadow.integrations._mcp import instrument_mcp, mcp_tool
    from shadow.integrations._mcp_layer import shadow_server
    from shadow.integrations._openai_agents import openai_agents_tool
    from shadow.integrations._openai_agents_layer import shadow_agent
    from shadow.integrations._pydantic_ai import pydantic_ai_tool
    from shadow.integrations._pydantic_ai_layer import ShadowTools, ShadowToolset

_HOMES = {
    "ShadowTools": "shadow.integrations._pydantic_ai_layer",
    "ShadowToolset": "shadow.integrations._pydantic_ai_layer",
    "ShadowTransform": "shadow.integrations._fastmcp_layer",
    "fastmcp_tool": "shadow.integrations._fastmcp",
    "instrument_mcp": "shadow.integrations._mcp",
    "langchain_tool": "shadow.integrations._langchain",
    "mcp_tool": "shadow.integrations._mcp",
    "openai_agents_tool": "shadow.integrations._openai_agents",
    "pydantic_ai_tool": "shadow.integrations._pydantic_ai",
    "shadow_agent": "shadow.integrations._openai_agents_layer",
    "shadow_server": "shadow.integrations._mcp_layer",
    "shadow_tools": "shadow.integrations._langchain_layer",
}

__all__ = [
    "ShadowTools",
    "ShadowToolset",
    "ShadowTransform",
    "fastmcp_tool",
    "instrument_mcp",
    "langchain_tool",
    "mcp_tool",
    "openai_agents_tool",
    "pydantic_ai_tool",
    "shadow_agent",
    "shadow_server",
    "shadow_tools",
]


__getattr__ = lazy_names(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)
