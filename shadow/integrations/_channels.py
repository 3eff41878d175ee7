"""A framework's own error channel in cutover: the exception the tool raised, re-raised carrying the payload's JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from shadow.contract._author import shown_name
from shadow.contract._payloads import Payload

#: Exceptions a framework turns into the model's error message itself, with its own handling around it (LangChain's
#: ``handle_tool_error``, PydanticAI's retry count): in cutover they are re-raised carrying the payload, so that
#: handling still applies. The MCP ``ToolError``s travel as an ``isError`` result instead (``MCP_TOOL_ERRORS``).
RERAISED: Final = frozenset({
    "langchain_core.tools.base.ToolException",
    "pydantic_ai.exceptions.ModelRetry",
    "pydantic_ai.exceptions.ToolFailed",
})
MCP_TOOL_ERRORS: Final = frozenset({
    "fastmcp.exceptions.ToolError",
    "mcp.server.mcpserver.exceptions.ToolError",
    "mcp.server.fastmcp.exceptions.ToolError",
})

#: A framework's control flow, not a tool's outcome: exceptions that suspend or redirect the run (LangGraph's
#: ``interrupt()`` and ``Command(graph=PARENT)``, PydanticAI's deferred calls and approvals, an MCP protocol error
#: such as a URL elicitation) and values the framework acts on (a LangGraph ``Command``, a ``ToolMessage``, a PydanticAI
#: ``ToolReturn``). In every mode they pass through unchanged; an exception is logged as ``cancelled``.
PASSED_THROUGH: Final = frozenset({
    "langgraph.errors.GraphBubbleUp",
    "pydantic_ai.exceptions.CallDeferred",
    "pydantic_ai.exceptions.ApprovalRequired",
    "mcp.shared.exceptions.MCPError",
    "langchain_core.messages.tool.ToolOutputMixin",
    "pydantic_ai.messages.ToolReturn",
})
_passes: dict[type, bool] = {}
_MAX_CACHED: Final = 1024


def passes_through(value: object) -> bool:
    """Whether ``value`` (an exception or a result) is a framework's control flow (``PASSED_THROUGH``)."""
    cls = type(value)
    found = _passes.get(cls)
    if found is None:
        found = any(f"{k.__module__}.{k.__qualname__}" in PASSED_THROUGH for k in cls.__mro__)
        if len(_passes) < _MAX_CACHED:
            _passes[cls] = found
    return found


def payload_text(payload: Payload) -> str:
    """The payload as compact JSON text, as a model reads it."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)


def carrier(exc: BaseException, name: str, text: str) -> BaseException:
    """``exc`` again, its message now ``text``: a copy of the same class with the same attributes (so a user's
    handler sees their own exception), else the framework's class ``name`` itself when the copy does not read
    ``text`` (a subclass with its own ``__str__`` or ``__new__``)."""
    cls = type(exc)
    try:
        copy = cls.__new__(cls)
        copy.__dict__.update(exc.__dict__)
        copy.args = (text,)
        if isinstance(getattr(copy, "message", None), str):  # ModelRetry, ToolFailed: what PydanticAI reads
            copy.message = text  # type: ignore[attr-defined]
        if isinstance(getattr(copy, "tool_content", None), list):  # langchain-mcp-adapters' isError content,
            # which its handle_tool_error returns in place of the message
            copy.tool_content = [{"type": "text", "text": text}]  # type: ignore[attr-defined]
        if str(copy) == text:
            return copy
    except Exception:
        pass
    base = next(k for k in cls.__mro__ if f"{k.__module__}.{k.__qualname__}" == name)
    return base(text)  # type: ignore[no-any-return]


def carried(exc: BaseException, payload: Payload) -> BaseException | None:
    """The exception a framework's own channel needs in place of the payload: ``exc`` re-raised carrying it for a
    ``RERAISED`` one, else ``None`` (the payload is served as the tool's result)."""
    name = shown_name(exc)
    if name is None or name not in RERAISED:
        return None
    return carrier(exc, name, payload_text(payload))


def raised(exc: BaseException, payload: Payload, deliver: Callable[[Payload], Any] | None) -> BaseException | None:
    """What a cutover call that raised ``exc`` raises in turn, or ``None`` to serve ``payload``: the delivery's own
    ``raised(exc, payload)`` when it has one (an MCP tool, a tool the framework lets abort its run), else
    ``carried``."""
    own = getattr(deliver, "raised", None)
    if callable(own):
        chosen: BaseException | None = own(exc, payload)
        return chosen
    return carried(exc, payload)


class Served:
    """A delivery for a framework with no error channel of its own for a tool's exception (the Agents SDK: its
    failure function would replace the payload with a generic line): every exception is served as its payload, a
    ``RERAISED`` one of another framework (PydanticAI's ``ModelRetry`` in an Agents SDK tool) too."""

    __slots__ = ("serve",)

    def __init__(self, serve: Callable[[Payload], Any]) -> None:
        self.serve = serve

    def __call__(self, payload: Payload) -> Any:
        return self.serve(payload)

    def raised(self, exc: BaseException, payload: Payload) -> BaseException | None:
        return None


class Fatal(Served):
    """A delivery for a tool whose framework was told to let its exceptions end the run (the Agents SDK's
    ``failure_error_function=None``): an exception is raised again, unchanged, after its record is made."""

    __slots__ = ()

    def raised(self, exc: BaseException, payload: Payload) -> BaseException:
        return exc
