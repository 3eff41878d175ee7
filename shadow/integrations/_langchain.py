"""LangChain: ``@langchain_tool`` in place of ``@tool``; sessions from the LangGraph thread in the run config."""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from shadow.contract._callables import callable_kind
from shadow.contract._payloads import Payload
from shadow.contract._rules import Rules
from shadow.integrations._context import class_names
from shadow.integrations._serve import ShadowOptions, check_function, payload_json
from shadow.typing import FlagSource

_BY_NAME = ("callbacks", "run_manager")  # langchain_core.tools.base.FILTERED_ARGS: filled in by name
# The artifact of the content_and_artifact call running in this context: the tool is judged on its content alone.
_artifact: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("shadow_langchain_artifact", default=None)


def langchain_tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, rules: Rules | None = None,
    idempotent: bool = True, flags: FlagSource | None = None, ignore: Iterable[str] = (), shows_errors: bool = False,
    **options: Any,
) -> Any:
    """A LangChain ``StructuredTool`` behind its shadow flag: ``@langchain_tool`` or ``@langchain_tool(name=...)``.

    The schema is the one ``@tool`` generates; ``options`` (``description=``, ``parse_docstring=``,
    ``response_format=``, ``args_schema=``, ...) go to ``langchain_core.tools.tool``. Injected arguments
    (``InjectedToolArg``, ``InjectedToolCallId``, ``RunnableConfig``, ``callbacks``, ``run_manager``) are not
    logged. A call made with ``config={"configurable": {"thread_id": ...}}`` (a LangGraph thread) is logged in that
    session. In cutover the ``ToolMessage`` content is the payload's JSON, with ``status="error"`` when the payload
    is an error (served as a handled ``ToolException``): pass your own ``handle_tool_error=`` here, not by assigning
    it on the tool, and it handles your own ``ToolException``s as before, raised again carrying the payload (its
    ``str()`` the payload's JSON; ``False``, the default, lets it propagate). LangGraph's ``interrupt()`` and a
    returned ``Command`` pass through. With ``response_format="content_and_artifact"``
    the tool is judged, logged and served on its content alone: the artifact passes through unchanged on successes
    and is ``None`` on errors. ``shows_errors=True`` when the model reads a raised exception's text in legacy
    (``ToolNode(handle_tool_errors=True)``): cutover then keeps its words, as for a ``ToolException``. Put the
    ``shadow describe --tool`` paragraph in ``description=`` or at the end of the docstring.
    """
    shadow_name = name

    def make(function: Callable[..., Any]) -> Any:
        if "langchain_core.tools.base.BaseTool" in class_names(type(function)):
            raise TypeError(f"langchain_tool decorates a function, not a LangChain tool ({type(function).__name__}): "
                            "shadow a tool object with shadow_tools([tool]), which keeps it as it is")
        check_function(function, "langchain_tool")
        from langchain_core.tools import tool

        shadow = ShadowOptions(name=shadow_name, rules=rules, idempotent=idempotent, flags=flags,
                               ignore=tuple(ignore), awaits=False, shows=bool(shows_errors))
        served = served_function(function, shadow, artifact=options.get("response_format") == "content_and_artifact")
        settings = {k: v for k, v in options.items() if k != "handle_tool_error"}
        made = tool(shadow_name, **settings)(served) if shadow_name is not None else tool(served, **settings)
        made.handle_tool_error = _Handler(options.get("handle_tool_error", made.handle_tool_error))
        return made

    return make if fn is None else make(fn)


def served_function(function: Callable[..., Any], shadow: ShadowOptions, *, artifact: bool) -> Callable[..., Any]:
    """``function`` behind its flag as a LangChain tool calls it: what ``langchain_tool`` makes its ``func``, and
    ``shadow_tools`` a ``BaseTool`` subclass's own ``_run``/``_arun``. A cutover error payload is raised as a
    ``ToolException`` for ``_Handler`` to serve; ``callbacks``/``run_manager`` are not logged."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    by_name = tuple(n for n in _BY_NAME if n in parameters)
    if by_name:
        shadow = dataclasses.replace(shadow, ignore=(*shadow.ignore, *by_name))
    inner = _content_only(function) if artifact else function
    return _served(shadow.wrap(inner, _Served), artifact)


@dataclass(frozen=True, slots=True)
class _Served:
    """A cutover payload on its way out of the shadow wrapper, to become the ``ToolMessage``."""

    payload: Payload


def _error(content: str) -> Exception:
    """A ``ToolException`` carrying a cutover error payload's JSON: LangChain's way to a ``status="error"``."""
    return _payload_error()(content)


@functools.cache
def _payload_error() -> type[Exception]:
    from langchain_core.tools import ToolException

    class ShadowPayloadError(ToolException):
        """A cutover error payload, served by ``_Handler`` as the ToolMessage content with ``status="error"``."""

    return ShadowPayloadError


class _Handler:
    """``handle_tool_error`` for a shadowed tool: serves shadow's error payloads, and leaves every other
    ``ToolException`` to the user's own setting exactly as before (LangChain tests its truth inside the except
    block, where ``sys.exception()`` is the exception at hand)."""

    __slots__ = ("user",)

    def __init__(self, user: Any) -> None:
        self.user = user

    def __bool__(self) -> bool:
        return isinstance(sys.exception(), _payload_error()) or bool(self.user)

    def __call__(self, exc: Exception) -> Any:
        if isinstance(exc, _payload_error()):
            return exc.args[0]
        if callable(self.user):
            return self.user(exc)
        if isinstance(self.user, str):
            return self.user
        return exc.args[0] if exc.args else "Tool execution error"  # LangChain's own handling of True


def _content_only(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` returning the content of its ``(content, artifact)`` tuple, the artifact kept aside."""

    def keep(result: Any) -> Any:
        box = _artifact.get()
        if box is None or not isinstance(result, tuple) or len(result) != 2:
            return result  # not a pair: LangChain reports the misuse, as it would without shadow
        box.append(result[1])
        return result[0]

    if callable_kind(function) == "async":
        @functools.wraps(function)
        async def content(*args: Any, **kwargs: Any) -> Any:
            return keep(await function(*args, **kwargs))
    else:
        @functools.wraps(function)
        def content(*args: Any, **kwargs: Any) -> Any:
            return keep(function(*args, **kwargs))
    return content


def _served(wrapper: Callable[..., Any], artifact: bool) -> Callable[..., Any]:
    """The function LangChain calls: the shadow wrapper's result as LangChain expects it from the tool."""

    def serve(result: Any, box: list[Any] | None) -> Any:
        if isinstance(result, _Served):
            text = payload_json(result.payload)
            if not result.payload["ok"]:
                raise _error(text)
            return (text, box[0] if box else None) if artifact else text
        if artifact and box:  # the legacy (content, artifact), as the tool returned it
            return result, box[0]
        return result

    if callable_kind(wrapper) == "async":
        @functools.wraps(wrapper)
        async def call(*args: Any, **kwargs: Any) -> Any:
            box: list[Any] | None = [] if artifact else None
            token = _artifact.set(box)
            try:
                result = await wrapper(*args, **kwargs)
            finally:
                _artifact.reset(token)
            return serve(result, box)
    else:
        @functools.wraps(wrapper)
        def call(*args: Any, **kwargs: Any) -> Any:
            box: list[Any] | None = [] if artifact else None
            token = _artifact.set(box)
            try:
                result = wrapper(*args, **kwargs)
            finally:
                _artifact.reset(token)
            return serve(result, box)
    return call
