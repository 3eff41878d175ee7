"""FastMCP: every tool of a server behind its shadow flag in one line, ``mcp.add_transform(ShadowTransform())``."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from fastmcp.server.transforms import GetToolNext, Transform
from fastmcp.tools import FunctionTool, Tool
from fastmcp.utilities.versions import VersionSpec

from shadow.contract._rules import Rules
from shadow.integrations._fastmcp import fastmcp_tool, idempotent_of
from shadow.typing import FlagSource


class ShadowTransform(Transform):
    """A FastMCP transform that puts every function tool of a server behind its shadow flag.

    ``mcp.add_transform(ShadowTransform(ignore=["ping"]))`` (or ``FastMCP(..., transforms=[...])``) does for
    every tool what ``fastmcp_tool(mcp)`` does for one: each is wrapped by that very decorator, its flag keyed by
    the tool's name, and listed and called with its output schema widened to admit the payload; everything else
    about the tool (description, tags, annotations, timeout, auth) and every middleware stay as they are. A
    transform, not a middleware: a middleware's ``call_next`` runs the tool the server looks up by name, so only
    a transform can hand the server the shadowed tool and keep its error masking and timeouts. Tools named in
    ``ignore`` are left alone (no record); so are tools without a Python function (proxied, transformed) and
    tools already shadowed by ``fastmcp_tool`` or ``@shadow.tool``. ``idempotent`` left out follows each tool's
    annotations: a tool that declares ``idempotentHint: false`` (or ``destructiveHint: true``) is never told to
    retry.
    """

    def __init__(self, *, ignore: Iterable[str] = (), rules: Rules | None = None, idempotent: bool | None = None,
                 flags: FlagSource | None = None) -> None:
        if isinstance(ignore, str):
            raise TypeError(f"ShadowTransform(ignore=...) takes tool names, not one string: ignore=[{ignore!r}]")
        self.ignore = frozenset(ignore)
        self._options: dict[str, Any] = {"rules": rules, "idempotent": idempotent, "flags": flags}
        self._made: dict[tuple[str, Callable[..., Any]], tuple[Callable[..., Any], dict[str, Any] | None]] = {}

    def __repr__(self) -> str:
        return f"ShadowTransform(ignore={sorted(self.ignore)!r})"

    async def list_tools(self, tools: Sequence[Tool]) -> Sequence[Tool]:
        return [self.shadowed(tool) for tool in tools]

    async def get_tool(self, name: str, call_next: GetToolNext, *, version: VersionSpec | None = None) -> Tool | None:
        tool = await call_next(name, version=version)
        return None if tool is None else self.shadowed(tool)

    def shadowed(self, tool: Tool) -> Tool:
        """``tool`` behind its flag (a copy), or ``tool`` itself when it is ignored or cannot be shadowed."""
        if tool.name in self.ignore or not isinstance(tool, FunctionTool):
            return tool
        if getattr(tool.fn, "__shadow_tool__", None) is not None:
            return tool  # fastmcp_tool or @shadow.tool already: one record per call
        key = (tool.name, tool.fn)
        made = self._made.get(key)
        if made is None:
            function = _unregistered(tool.fn)
            if function is None:
                return tool
            made = self._made[key] = _shadow(tool, function, self._options)
        fn, output_schema = made
        return tool.model_copy(update={"fn": fn, "output_schema": output_schema})


class _Collector:
    """What ``fastmcp_tool`` registers on: keeps the tool it made."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def add_tool(self, tool: Tool) -> None:
        self.tools.append(tool)


def _shadow(tool: FunctionTool, function: Callable[..., Any],
            options: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any] | None]:
    """The shadowed function ``fastmcp_tool`` makes of ``tool``'s, and the output schema it advertises."""
    own: dict[str, Any] = {}
    if tool.output_schema != Tool.from_function(function, name=tool.name).output_schema:
        own["output_schema"] = tool.output_schema  # the author's own schema (or None): kept, as with fastmcp_tool
    collector = _Collector()
    if options["idempotent"] is None:
        options = {**options, "idempotent": idempotent_of(tool.annotations)}
    wrapper = fastmcp_tool(collector, name=tool.name, **options, **own)(function)
    (made,) = collector.tools
    return wrapper, made.output_schema


def _unregistered(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` without the mark ``@mcp.tool`` leaves on it (a function of the same code), or None if it is no
    plain function; the mark would make ``@shadow.tool`` refuse it as registered already."""
    if getattr(fn, "__fastmcp__", None) is None:
        return fn
    if not isinstance(fn, types.FunctionType):
        return None
    clone = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__dict__.update({k: v for k, v in fn.__dict__.items() if k != "__fastmcp__"})
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__annotations__ = dict(fn.__annotations__)
    clone.__doc__, clone.__qualname__, clone.__module__ = fn.__doc__, fn.__qualname__, fn.__module__
    return clone
