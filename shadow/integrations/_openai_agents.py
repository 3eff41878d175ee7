"""The OpenAI Agents SDK: ``@openai_agents_tool`` in place of ``@function_tool``, the payload as JSON text."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from shadow.contract._rules import Rules
from shadow.integrations._serve import ShadowOptions, check_function, payload_json
from shadow.typing import FlagSource


def openai_agents_tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, rules: Rules | None = None,
    idempotent: bool = True, flags: FlagSource | None = None, ignore: Iterable[str] = (), **options: Any,
) -> Any:
    """An Agents SDK ``FunctionTool`` behind its shadow flag: ``@openai_agents_tool`` or ``(name=...)``.

    The schema is the one ``@function_tool`` generates; ``options`` (``description_override=``,
    ``failure_error_function=``, ``strict_mode=``, ...) go to ``agents.function_tool``. A first parameter of type
    ``RunContextWrapper``/``ToolContext`` is not logged. In cutover the model gets the payload as JSON text (the
    SDK would show a Python ``repr`` of a dict). Calls of one ``Runner.run`` share a session: the run's
    ``RunConfig(group_id=...)`` (a conversation), else its trace. Put the ``shadow describe --tool`` paragraph in
    ``description_override=``.
    """

    def make(function: Callable[..., Any]) -> Any:
        check_function(function, "openai_agents_tool")
        from agents import function_tool

        shadow = ShadowOptions(name=name, rules=rules, idempotent=idempotent, flags=flags, ignore=ignore)
        wrapper = shadow.wrap(function, payload_json)
        return function_tool(wrapper, name_override=name, **options)

    return make if fn is None else make(fn)
