"""LangChain/LangGraph: a whole list of tools behind their shadow flags, ``ToolNode(shadow_tools(tools))``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shadow.contract._rules import Rules
from shadow.integrations._langchain import langchain_tool
from shadow.integrations._langchain_methods import runs_itself, shadow_methods
from shadow.typing import FlagSource


def shadow_tools(
    tools: Sequence[Any], *, ignore: Iterable[str] = (), rules: Rules | None = None, idempotent: bool = True,
    flags: FlagSource | None = None, shows_errors: bool = False,
) -> list[Any]:
    """``tools`` (LangChain tools, or plain functions as ``ToolNode`` takes them) behind their shadow flags.

    Hand the list to ``ToolNode``, ``create_react_agent``/``create_agent`` or ``model.bind_tools``. Each tool is
    a copy wrapped by ``langchain_tool`` itself, its flag keyed by the tool's name: the same records and cutover
    ``ToolMessage``s (``status="error"``, ``content_and_artifact``, your ``handle_tool_error``) as decorating each
    one, and the rest of the tool (name, description, schema, tags, metadata, ``return_direct``) as it was. A
    ``BaseTool`` subclass with its own ``_run``/``_arun`` (the community toolkits: SQL, file management, JSON,
    Python REPL, requests) is a copy of its own class whose ``_run`` (and ``_arun``, if it has one) run behind the
    flag the same way: its schema, string input, fields and error handling unchanged, ``run_manager`` and
    ``config`` passed as before, the validated input logged. Tools named in ``ignore`` are returned as they are
    (no record), as are tools already shadowed; a tool that cannot be wrapped (a ``StructuredTool`` with neither
    ``func`` nor ``coroutine``, a ``_run`` that is not a plain method) is a ``TypeError`` saying what to do.
    ``shows_errors=True`` for a ``ToolNode(handle_tool_errors=True)``, which shows the model a raised exception's
    text: cutover keeps those words.
    """
    if isinstance(ignore, str):
        raise TypeError(f"shadow_tools(ignore=...) takes tool names, not one string: ignore=[{ignore!r}]")
    from langchain_core.tools import BaseTool, tool

    skip = frozenset(ignore)
    options: dict[str, Any] = {"rules": rules, "idempotent": idempotent, "flags": flags, "shows_errors": shows_errors}
    out: list[Any] = []
    for item in tools:
        if not isinstance(item, BaseTool):
            if not callable(item) or isinstance(item, type):
                raise TypeError(f"shadow_tools takes LangChain tools or functions, not {type(item).__name__}")
            name = str(getattr(item, "__name__", ""))
            out.append(tool(item) if name in skip else langchain_tool(**options)(item))
        elif item.name in skip or _shadowed(item):
            out.append(item)
        else:
            out.append(_shadow(item, options))
    return out


def _shadowed(made: Any) -> bool:
    if getattr(type(made), "__shadow_tool__", None) is not None:
        return True  # a BaseTool subclass shadowed by shadow_methods
    return any(getattr(getattr(made, f, None), "__shadow_tool__", None) is not None for f in ("func", "coroutine"))


def _shadow(made: Any, options: dict[str, Any]) -> Any:
    """A copy of the LangChain tool ``made`` whose functions are the ones ``langchain_tool`` makes of its own, or
    whose own ``_run``/``_arun`` run behind its flag (``shadow_methods``)."""
    if runs_itself(made):
        return shadow_methods(made, options)
    functions: dict[str, Callable[..., Any]] = {f: fn for f in ("func", "coroutine")
                                                if callable(fn := getattr(made, f, None))}
    if not functions:
        raise TypeError(f"shadow_tools: the tool {made.name!r} ({type(made).__name__}) has neither a func nor a "
                        f"coroutine, so it cannot run: give it one (StructuredTool.from_function(func=...)), or "
                        f"leave it out with ignore=[{made.name!r}]")
    settings: dict[str, Any] = {"description": made.description, "response_format": made.response_format,
                                "handle_tool_error": made.handle_tool_error}
    if made.args_schema is not None:
        settings["args_schema"] = made.args_schema
    update: dict[str, Any] = {}
    for field, fn in functions.items():
        shadowed = langchain_tool(name=made.name, **options, **settings)(fn)
        update[field] = getattr(shadowed, field)
        update["handle_tool_error"] = shadowed.handle_tool_error
    return made.model_copy(update=update)
