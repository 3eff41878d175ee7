"""Framework knowledge without importing a framework: injected parameters by qualified name, and conversation ids."""

from __future__ import annotations

import contextvars
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Final

from shadow._ids import random_hex
from shadow.contract._author import SHOWN_EXCEPTIONS as _SHOWN

#: A framework's model-facing exceptions by qualified name (the contract's list): their text is the author's.
SHOWN_EXCEPTIONS: Final = _SHOWN

# Classes a framework injects into a tool (a context, a run wrapper, a callback manager): never data. Matched by the
# fully qualified names along the MRO, so subclasses (the Agents SDK's ToolContext, LangGraph's InjectedState) match.
INJECTED_CLASSES: Final = frozenset({
    "fastmcp.server.context.Context",  # FastMCP: `from fastmcp import Context`
    "fastmcp.server.sessions.UserSession",
    "mcp.server.mcpserver.context.Context",  # mcp 2.x MCPServer
    "mcp.server.context.ServerRequestContext",
    "mcp.server.context.Context",
    "mcp.server.fastmcp.server.Context",  # mcp 1.x
    "pydantic_ai._run_context.RunContext",  # PydanticAI: `from pydantic_ai import RunContext`
    "agents.run_context.RunContextWrapper",  # Agents SDK; ToolContext subclasses it
    "langchain_core.tools.base.InjectedToolArg",
    "langchain_core.tools.base._DirectlyInjectedToolArg",  # LangGraph's ToolRuntime
    "langchain_core.runnables.config.RunnableConfig",  # a TypedDict: matched by its own name
    "langchain_core.callbacks.manager.CallbackManagerForToolRun",
    "langchain_core.callbacks.manager.AsyncCallbackManagerForToolRun",
    "langchain_core.callbacks.base.BaseCallbackManager",
})
# ``Annotated[...]`` metadata marking an injected parameter (LangChain's InjectedToolCallId, MCPServer's Resolve).
INJECTED_MARKERS: Final = frozenset({
    "langchain_core.tools.base.InjectedToolArg",
    "mcp.server.mcpserver.resolve.Resolve",
})
# Default values that make FastMCP fill a parameter: CurrentContext(), CurrentHeaders(), Progress(), Depends(...).
INJECTED_DEFAULTS: Final = frozenset({"uncalled_for.base.Dependency"})
# Framework tool objects: ``@shadow.tool`` must sit below the framework's decorator, not above its result.
TOOL_OBJECTS: Final = {
    "langchain_core.tools.base.BaseTool": "LangChain's @tool",
    "agents.tool.FunctionTool": "the Agents SDK's @function_tool",
    "pydantic_ai.tools.Tool": "PydanticAI's Tool(...)",
    "fastmcp.tools.base.Tool": "FastMCP's Tool",
    "fastmcp.tools.tool.Tool": "FastMCP's Tool",
    "mcp.server.mcpserver.tools.base.Tool": "MCPServer's Tool",
}
_HANDSHAKE_ERA_BEFORE: Final = "2026-07-28"  # from this protocol version on, every MCP request is its own connection
_META_KEY: Final = "shadow/session"  # a client may name its conversation in a request's _meta

_NAMES_CACHE: dict[type, frozenset[str]] = {}
_mcp_request: contextvars.ContextVar[Any] = contextvars.ContextVar("shadow_mcp_request", default=None)


def class_names(cls: type) -> frozenset[str]:
    """The qualified names of ``cls`` and its bases."""
    found = _NAMES_CACHE.get(cls)
    if found is None:
        mro = getattr(cls, "__mro__", (cls,))
        found = _NAMES_CACHE[cls] = frozenset(f"{c.__module__}.{c.__qualname__}" for c in mro)
    return found


def tool_object_kind(obj: object) -> str | None:
    """Which framework's tool object ``obj`` is (a description), or ``None`` for anything else."""
    names = class_names(type(obj))
    return next((what for name, what in TOOL_OBJECTS.items() if name in names), None)


def is_injected_value(value: object) -> bool:
    """Whether ``value`` is a framework context or callback manager (matched by class name, nothing imported)."""
    return bool(class_names(type(value)) & INJECTED_CLASSES)


def _injected_type(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *meta = typing.get_args(tp)
        if any(class_names(m if isinstance(m, type) else type(m)) & INJECTED_MARKERS for m in meta):
            return True
        return _injected_type(base)
    if origin in (typing.Union, types.UnionType):
        return any(_injected_type(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is not None:  # RunContext[Deps], RunContextWrapper[T]
        return _injected_type(origin)
    if isinstance(tp, type):
        return bool(class_names(tp) & INJECTED_CLASSES)
    return f"{getattr(tp, '__module__', '')}.{getattr(tp, '__qualname__', '')}" in INJECTED_CLASSES


def injected_parameters(fn: Callable[..., Any], signature: inspect.Signature | None) -> frozenset[str]:
    """The parameters of ``fn`` a framework fills in: by annotation (contexts, markers) or by default (FastMCP DI)."""
    if signature is None:
        return frozenset()
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # an unresolved forward reference: fall back to the raw annotations
        hints = {}
    found = set()
    for name, param in signature.parameters.items():
        annotation = hints.get(name, param.annotation)
        by_type = annotation is not inspect.Parameter.empty and not isinstance(annotation, str)
        by_default = param.default is not inspect.Parameter.empty
        if (by_type and _injected_type(annotation)) or (
                by_default and class_names(type(param.default)) & INJECTED_DEFAULTS):
            found.add(name)
    return frozenset(found)


def check_ignore(ignore: Iterable[str], signature: inspect.Signature | None, tool: str) -> frozenset[str]:
    """``ignore=`` names checked against the tool's parameters."""
    if isinstance(ignore, str):
        raise TypeError(f'shadow.tool: ignore takes a tuple of parameter names, for example ignore=("{ignore}",)')
    names = frozenset(ignore)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"shadow.tool: ignore takes parameter names (str), not {bad[0]!r}")
    if signature is not None and not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        unknown = sorted(names - set(signature.parameters))
        if unknown:
            raise TypeError(f"shadow.tool: ignore names {', '.join(map(repr, unknown))}, which {tool} does not take; "
                            f"its parameters are {', '.join(signature.parameters) or 'none'}")
    return names


# --- the framework's conversation, read from its context variables while a tool runs --------------------------


def bind_mcp_request(request_context: Any) -> contextvars.Token[Any]:
    """Publish an MCP request context for the tool bodies below it (set by the MCPServer middleware)."""
    return _mcp_request.set(request_context)


def unbind_mcp_request(token: contextvars.Token[Any]) -> None:
    """Undo ``bind_mcp_request``."""
    _mcp_request.reset(token)


def current_mcp_request() -> Any:
    """The MCP request context ``bind_mcp_request`` published for this call, or ``None``."""
    return _mcp_request.get()


def _mcp_session(session: Any, protocol_version: str | None, meta: Any) -> str | None:
    if isinstance(meta, dict) and isinstance(meta.get(_META_KEY), str) and meta[_META_KEY].strip():
        return str(meta[_META_KEY])[:200]
    connection = getattr(session, "_connection", None)
    if connection is None:
        return None
    if getattr(connection, "session_id", None):  # streamable HTTP: the Mcp-Session-Id
        return f"mcp-{connection.session_id}"[:200]
    if protocol_version is None or protocol_version >= _HANDSHAKE_ERA_BEFORE:
        return None  # one connection per request: binding would make every call its own session
    state = getattr(connection, "state", None)
    if not isinstance(state, dict):
        return None
    return str(state.setdefault("shadow.session", f"mcp-{random_hex()}"))


def _fastmcp() -> str | None:
    module = sys.modules.get("fastmcp.server.dependencies")
    if module is None:
        return None
    request = module.fastmcp_request_ctx.get(None)
    if request is None:
        return None
    return _mcp_session(request.session, request.protocol_version, request.meta)


def _mcp() -> str | None:
    request = _mcp_request.get()
    if request is None:
        return None
    return _mcp_session(request.session, getattr(request, "protocol_version", None), getattr(request, "meta", None))


def _pydantic_ai() -> str | None:
    module = sys.modules.get("pydantic_ai._run_context")
    if module is None:
        return None
    run = module.get_current_run_context()
    if run is None:
        return None
    found = getattr(run, "conversation_id", None) or getattr(run, "run_id", None)
    return str(found) if found else None


def _agents() -> str | None:
    module = sys.modules.get("agents.tracing.scope")
    if module is None:
        return None
    trace = module.Scope.get_current_trace()
    if trace is None:
        return None
    group = getattr(trace, "group_id", None)
    if group:
        return str(group)
    trace_id = getattr(trace, "trace_id", None)
    return str(trace_id) if trace_id and trace_id != "no-op" else None  # tracing off: one id for every run


def _langchain() -> str | None:
    module = sys.modules.get("langchain_core.runnables.config")
    if module is None:
        return None
    config = module.var_child_runnable_config.get()
    if not config:
        return None
    configurable, metadata = config.get("configurable") or {}, config.get("metadata") or {}
    # a LangGraph thread; RunnableWithMessageHistory's session_id; a conversation_id of the application's own
    found = (configurable.get("thread_id") or metadata.get("thread_id") or configurable.get("session_id")
             or configurable.get("conversation_id"))
    return str(found) if found else None


_SOURCES: Final = (_fastmcp, _mcp, _pydantic_ai, _agents, _langchain)


def framework_session() -> str | None:
    """The conversation of the framework running this call (MCP session, LangGraph thread, agent run), if any."""
    for source in _SOURCES:
        try:
            found = source()
        except Exception:  # a framework changed its internals: fall back to shadow's own session
            continue
        if found:
            return found[:200]
    return None
