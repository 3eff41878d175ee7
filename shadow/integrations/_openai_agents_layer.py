"""The OpenAI Agents SDK: every function tool of an agent behind its shadow flag, ``shadow_agent(agent)``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from shadow.contract._rules import Rules
from shadow.integrations._openai_agents import openai_agents_tool
from shadow.typing import FlagSource

#: Where ``function_tool`` keeps the function it was given (on the invoker's implementation; agents 0.24).
_WRAPPED = "__agents_function_tool_wrapped_callable__"


def shadow_agent(
    agent: Any, *, ignore: Iterable[str] = (), rules: Rules | None = None, idempotent: bool = True,
    flags: FlagSource | None = None,
) -> Any:
    """A copy of the Agents SDK ``agent`` (``agent.clone``) whose function tools are behind their shadow flags.

    Each ``FunctionTool`` made by ``@function_tool`` is copied with the invoker ``openai_agents_tool`` makes of
    its function (its flag keyed by the tool's name, its ``failure_error_function`` and ``strict_mode`` kept), so
    ``Runner.run`` and ``Runner.run_streamed`` log and serve exactly as with the decorator; the rest of the tool
    (schema, description, guardrails, approval, timeout) is the original's. Tools named in ``ignore`` are left
    alone (no record), as are hosted tools, agents as tools and tools already shadowed; a function tool whose
    function cannot be found (a hand-built ``FunctionTool``) is a ``TypeError`` naming it, to be put in
    ``ignore``. Handoff agents are not changed: shadow them too.
    """
    if isinstance(ignore, str):
        raise TypeError(f"shadow_agent(ignore=...) takes tool names, not one string: ignore=[{ignore!r}]")
    from agents import Agent, FunctionTool

    if not isinstance(agent, Agent):
        raise TypeError(f"shadow_agent takes an agents.Agent, not {type(agent).__name__}")
    skip = frozenset(ignore)
    options: dict[str, Any] = {"rules": rules, "idempotent": idempotent, "flags": flags}
    tools = [_shadow(t, options) if isinstance(t, FunctionTool) and t.name not in skip else t for t in agent.tools]
    return agent.clone(tools=tools)


def _shadow(made: Any, options: dict[str, Any]) -> Any:
    """A copy of the ``FunctionTool`` ``made`` invoking its function behind its flag."""
    from agents import FunctionTool

    if getattr(made, "_is_agent_tool", False):
        return made
    function: Callable[..., Any] | None = getattr(getattr(made.on_invoke_tool, "_invoke_tool_impl", None),
                                                  _WRAPPED, None)
    if not callable(function):
        raise TypeError(f"shadow_agent: the tool {made.name!r} has no Python function to wrap (not made by "
                        f"@function_tool); leave it out with ignore=[{made.name!r}]")
    if getattr(function, "__shadow_tool__", None) is not None:
        return made  # openai_agents_tool or @shadow.tool already: one record per call
    settings: dict[str, Any] = {"strict_mode": made.strict_json_schema}
    if not getattr(made, "_use_default_failure_error_function", True):
        settings["failure_error_function"] = getattr(made, "_failure_error_function", None)
    shadowed = openai_agents_tool(name=made.name, **options, **settings)(function)
    out = copy.copy(made)
    out.on_invoke_tool = shadowed.on_invoke_tool
    FunctionTool.__post_init__(out)  # type: ignore[no-untyped-call]  # binds the invoker's failure handling to the copy, as FunctionTool.__copy__ does
    return out
