"""PydanticAI: every tool of a toolset, or of an agent, behind its shadow flag: ``ShadowToolset``, ``ShadowTools``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset
from pydantic_ai.toolsets.function import FunctionToolsetTool

from shadow.contract._rules import Rules
from shadow.integrations._pydantic_ai import pydantic_ai_tool
from shadow.typing import FlagSource


@dataclass
class ShadowToolset(WrapperToolset[AgentDepsT]):
    """A PydanticAI toolset that puts every function tool of the toolset it wraps behind its shadow flag.

    ``Agent(model, toolsets=[ShadowToolset(FunctionToolset([lookup, search]), ignore=["search"])])``. Each call
    runs the function ``pydantic_ai_tool`` makes of the tool's own (its flag keyed by the name the model called),
    through the wrapped toolset's own calling path, so retries, timeouts and the schema stay as they were. Tools
    named in ``ignore`` are left alone (no record); so are tools with no Python function (MCP servers, external
    tools) and functions already shadowed. For every tool of an agent use the ``ShadowTools`` capability.
    """

    ignore: Iterable[str] = ()
    rules: Rules | None = None
    idempotent: bool = True
    flags: FlagSource | None = None
    _made: dict[tuple[str, int], tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.ignore, str):
            raise TypeError(f"ShadowToolset(ignore=...) takes tool names, not one string: ignore=[{self.ignore!r}]")
        self.ignore = frozenset(self.ignore)

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT],
                        tool: ToolsetTool[AgentDepsT]) -> Any:
        return await self.wrapped.call_tool(name, tool_args, ctx, self.shadowed(name, tool))

    def shadowed(self, name: str, tool: ToolsetTool[AgentDepsT]) -> ToolsetTool[AgentDepsT]:
        """``tool`` calling its function behind its flag (a copy), or ``tool`` when it is ignored or has none."""
        if name in self.ignore:
            return tool
        source = getattr(tool, "source_tool", None)  # a combined toolset's tool: the tool of the toolset it holds
        if isinstance(source, ToolsetTool):
            shadowed = self.shadowed(name, source)
            return tool if shadowed is source else dataclasses.replace(tool, source_tool=shadowed)  # type: ignore[call-arg]
        if not isinstance(tool, FunctionToolsetTool):
            return tool
        schema: Any = getattr(tool.call_func, "__self__", None)  # FunctionSchema.call, bound to the tool's schema
        function = getattr(schema, "function", None)
        if not hasattr(schema, "__dataclass_fields__") or not callable(function):
            return tool
        if getattr(function, "__shadow_tool__", None) is not None:
            return tool  # pydantic_ai_tool or @shadow.tool already: one record per call
        key = (name, id(schema))
        made = self._made.get(key)
        if made is None or made[0] is not schema:
            wrapper = pydantic_ai_tool(_Collector(), name=name, rules=self.rules, idempotent=self.idempotent,
                                       flags=self.flags)(function)
            made = self._made[key] = (schema, dataclasses.replace(schema, function=wrapper))
        return dataclasses.replace(tool, call_func=made[1].call)


@dataclass
class ShadowTools(AbstractCapability[AgentDepsT]):
    """A PydanticAI capability that shadows every tool of an agent: ``Agent(model, capabilities=[ShadowTools()])``.

    The agent's whole toolset (``@agent.tool``, ``tools=``, ``toolsets=``) is wrapped in a ``ShadowToolset`` with
    these options on each run.
    """

    ignore: Iterable[str] = ()
    rules: Rules | None = None
    idempotent: bool = True
    flags: FlagSource | None = None
    _made: dict[tuple[str, int], tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # takes a flag source and rules: not spec-serializable

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]) -> AbstractToolset[AgentDepsT] | None:
        return ShadowToolset(toolset, ignore=self.ignore, rules=self.rules, idempotent=self.idempotent,
                             flags=self.flags, _made=self._made)


class _Collector:
    """What ``pydantic_ai_tool`` registers on: nothing (the toolset already holds the tool)."""

    def tool(self, function: Callable[..., Any], **options: Any) -> None:
        """``agent.tool``'s place."""

    def tool_plain(self, function: Callable[..., Any], **options: Any) -> None:
        """``agent.tool_plain``'s place."""
