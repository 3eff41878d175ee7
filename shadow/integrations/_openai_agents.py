"""The OpenAI Agents SDK: ``@openai_agents_tool`` in place of ``@function_tool``, the payload as JSON text."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from shadow.contract._rules import Rules
from shadow.integrations._channels import Fatal, Served
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
    SDK would show a Python ``repr`` of a dict), in place of what ``failure_error_function`` would say of an
    exception; with ``failure_error_function=None`` an exception still ends the run (its record is logged). A
    declared output schema (``output_type=``, ...) is a ``TypeError``: no payload could match it. Calls of one
    ``Runner.run`` share a session: the run's ``RunConfig(group_id=...)`` (a conversation), else its trace. Put the
    ``shadow describe --tool`` paragraph in ``description_override=``.
    """

    def make(function: Callable[..., Any]) -> Any:
        check_function(function, "openai_agents_tool")
        from agents import function_tool

        shadow = ShadowOptions(name=name, rules=rules, idempotent=idempotent, flags=flags, ignore=ignore,
                               awaits=False, shows=False)
        fatal = "failure_error_function" in options and options["failure_error_function"] is None
        wrapper = shadow.wrap(function, Fatal(payload_json) if fatal else Served(payload_json))
        made = function_tool(wrapper, name_override=name, **options)
        if getattr(made, "output_json_schema", None) is not None:
            raise TypeError(
                f"openai_agents_tool: {made.name} declares a strict output schema (output_type=, "
                "output_json_schema=, or an object return with allowed_callers=['programmatic']), which the SDK "
                "checks every result against and the cutover payload cannot match; leave it out (the model reads "
                "the payload as JSON text)")
        return made

    return make if fn is None else make(fn)
