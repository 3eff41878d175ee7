"""FastMCP: ``@fastmcp_tool(mcp)`` in place of ``@mcp.tool``, with the cutover payload as a proper MCP result."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from shadow.contract._payloads import Payload
from shadow.contract._rules import Rules
from shadow.integrations._returns import fastmcp_object_union, object_return, schema_union
from shadow.integrations._serve import ShadowOptions, check_function, payload_json
from shadow.typing import FlagSource


def idempotent_of(annotations: Any) -> bool:
    """Whether a tool with these MCP annotations may be told to retry: not when it declares ``idempotentHint:
    false``, or ``destructiveHint: true`` without ``idempotentHint: true`` (a hint left out promises nothing either
    way, so a tool without annotations keeps the default, ``True``)."""
    if annotations is None:
        return True

    def hint(snake: str, camel: str) -> object:
        if isinstance(annotations, dict):
            return annotations.get(camel, annotations.get(snake))
        if hasattr(annotations, snake):  # MCP SDK 2's names; 1.x's camelCase ones otherwise (2 warns on those)
            return getattr(annotations, snake)
        return getattr(annotations, camel, None)

    idempotent, destructive = hint("idempotent_hint", "idempotentHint"), hint("destructive_hint", "destructiveHint")
    if idempotent is not None:
        return bool(idempotent)
    return destructive is not True or bool(hint("read_only_hint", "readOnlyHint"))


def fastmcp_tool(
    mcp: Any, fn: Callable[..., Any] | None = None, /, *, name: str | None = None, rules: Rules | None = None,
    idempotent: bool | None = None, flags: FlagSource | None = None, ignore: Iterable[str] = (), **options: Any,
) -> Any:
    """Register ``fn`` on the FastMCP server ``mcp`` behind its shadow flag: ``@fastmcp_tool(mcp)``.

    The schema is the one ``@mcp.tool`` generates (a primitive output schema widened to admit the payload), and
    ``options`` (``description=``, ``tags=``, ``annotations=``, ...) go to FastMCP. In cutover the structured arm
    gets a result whose text is the payload's JSON, whose ``structuredContent`` matches the output schema, with
    ``isError`` set on errors (a ``ToolError`` the tool raises too, its text as the message). An
    ``output_schema=`` of your own is widened the same way. Put the ``shadow describe --tool`` paragraph in
    ``description=``. ``idempotent`` left out follows ``annotations=`` (``idempotent_of``). Returns ``fn``
    wrapped, as ``@mcp.tool`` returns the function.
    """
    if not callable(getattr(mcp, "add_tool", None)):
        raise TypeError(f"fastmcp_tool(mcp) takes the fastmcp.FastMCP server first, not {type(mcp).__name__}")
    retries = idempotent_of(options.get("annotations")) if idempotent is None else idempotent
    shadow = ShadowOptions(name=name, rules=rules, idempotent=retries, flags=flags, ignore=ignore, awaits=True)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        check_function(function, "fastmcp_tool(mcp)")
        from fastmcp.tools import Tool

        wraps_result: list[bool] = []
        wrapper = shadow.wrap(function, lambda payload: _result(payload, wraps_result))
        typed = object_return(function)
        if typed is not None and "output_schema" not in options:  # one object schema admitting both
            wrapper.__signature__ = typed[0].replace(  # type: ignore[attr-defined]
                return_annotation=fastmcp_object_union(typed[1]))
        settings = dict(options)
        if isinstance(settings.get("output_schema"), dict):  # the user's own schema, widened the same way
            settings["output_schema"] = schema_union(settings["output_schema"])
        tool = Tool.from_function(wrapper, name=name, **settings)
        wraps_result.append(bool((tool.output_schema or {}).get("x-fastmcp-wrap-result")))
        mcp.add_tool(tool)
        return wrapper

    return register if fn is None else register(fn)


def _result(payload: Payload, wraps_result: list[bool]) -> Any:
    from fastmcp.tools import ToolResult
    from mcp.types import TextContent

    structured: dict[str, Any] = {"result": payload} if wraps_result and wraps_result[0] else dict(payload)
    return ToolResult(content=[TextContent(type="text", text=payload_json(payload))], structured_content=structured,
                      is_error=not payload["ok"])
