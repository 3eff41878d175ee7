"""LangChain: ``@langchain_tool`` in place of ``@tool``; sessions from the LangGraph thread in the run config."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from shadow.contract._payloads import Payload
from shadow.contract._rules import Rules
from shadow.integrations._serve import ShadowOptions, check_function, payload_json
from shadow.typing import FlagSource

_BY_NAME = ("callbacks", "run_manager")  # langchain_core.tools.base.FILTERED_ARGS: filled in by name


def langchain_tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, rules: Rules | None = None,
    idempotent: bool = True, flags: FlagSource | None = None, ignore: Iterable[str] = (), **options: Any,
) -> Any:
    """A LangChain ``StructuredTool`` behind its shadow flag: ``@langchain_tool`` or ``@langchain_tool(name=...)``.

    The schema is the one ``@tool`` generates; ``options`` (``description=``, ``parse_docstring=``,
    ``response_format=``, ``args_schema=``, ...) go to ``langchain_core.tools.tool``. Injected arguments
    (``InjectedToolArg``, ``InjectedToolCallId``, ``RunnableConfig``, ``callbacks``, ``run_manager``) are not logged.
    A call made with ``config={"configurable": {"thread_id": ...}}`` (a LangGraph thread) is logged in that session.
    In cutover the ``ToolMessage`` content is the payload's JSON (``(json, payload)`` with
    ``response_format="content_and_artifact"``). Put the ``shadow describe --tool`` paragraph in ``description=``
    or at the end of the docstring.
    """
    shadow_name = name

    def make(function: Callable[..., Any]) -> Any:
        check_function(function, "langchain_tool")
        from langchain_core.tools import tool

        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            parameters = {}  # type: ignore[assignment]
        by_name = tuple(n for n in _BY_NAME if n in parameters)
        shadow = ShadowOptions(name=shadow_name, rules=rules, idempotent=idempotent, flags=flags,
                               ignore=(*ignore, *by_name))
        artifact = options.get("response_format") == "content_and_artifact"
        wrapper = shadow.wrap(function, _content_and_artifact if artifact else None)
        if shadow_name is not None:
            return tool(shadow_name, **options)(wrapper)
        return tool(wrapper, **options)

    return make if fn is None else make(fn)


def _content_and_artifact(payload: Payload) -> tuple[str, Payload]:
    return payload_json(payload), payload
