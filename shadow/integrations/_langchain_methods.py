"""LangChain tools that run their own ``_run``/``_arun`` (the community toolkits' ``BaseTool`` subclasses), shadowed."""

from __future__ import annotations

import contextvars
import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from shadow.contract._callables import callable_kind
from shadow.integrations._langchain import _Handler, served_function
from shadow.integrations._serve import ShadowOptions

# The tools (by id) whose shadowed method is running in this context: an ``_arun`` calling its own ``_run`` (or
# ``self.run``), as many community tools do, is one call, logged and served once by the outer method.
_running: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar("shadow_langchain_running",
                                                                          default=frozenset())


def runs_itself(made: Any) -> bool:
    """Whether the LangChain tool ``made`` runs its own ``_run``/``_arun`` rather than a ``func``/``coroutine``."""
    from langchain_core.tools import BaseTool, StructuredTool, Tool

    cls = type(made)
    stock_runs = (BaseTool._run, StructuredTool._run, Tool._run)
    stock_aruns = (BaseTool._arun, StructuredTool._arun, Tool._arun)
    return getattr(cls, "_run", None) not in stock_runs or getattr(cls, "_arun", None) not in stock_aruns


def shadow_methods(made: Any, options: dict[str, Any]) -> Any:
    """A copy of ``made`` whose ``_run`` (and its own ``_arun``) run behind the tool's flag, as ``langchain_tool``
    serves a function: the copy's class is a subclass of the tool's made for it, so every field, validator,
    schema and method of the tool stays as it was, and LangChain calls the methods exactly as before (the
    validated input, ``run_manager``, ``config``). ``options``: ``shadow_tools``' ``rules``, ``idempotent``,
    ``flags`` and ``shows_errors``."""
    from langchain_core.tools import BaseTool

    cls = type(made)
    shadow = ShadowOptions(name=made.name, rules=options.get("rules"), idempotent=bool(options.get("idempotent", True)),
                           flags=options.get("flags"), awaits=False, shows=bool(options.get("shows_errors")))
    artifact = made.response_format == "content_and_artifact"
    namespace: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                 "__doc__": cls.__doc__, "__shadow_tool__": made.name}
    for method in ("_run", "_arun"):
        original = inspect.getattr_static(cls, method, None)
        if method == "_arun" and original is BaseTool._arun:
            continue  # LangChain runs the shadowed _run in an executor, as it ran the tool's own
        if not isinstance(original, types.FunctionType):
            raise TypeError(f"shadow_tools: the tool {made.name!r} ({cls.__name__}) has a {method} that is not a "
                            f"plain method ({type(original).__name__}), which shadow cannot wrap: define {method} "
                            f"with def in the class, or leave the tool out with ignore=[{made.name!r}]")
        namespace[method] = _method(original, served_function(original, shadow, artifact=artifact))
    try:
        shadowed = type(cls.__name__, (cls,), namespace)
        copy = made.model_copy(update={"handle_tool_error": _Handler(made.handle_tool_error)})
        object.__setattr__(copy, "__class__", shadowed)
    except TypeError as error:
        raise TypeError(f"shadow_tools: the tool {made.name!r} ({cls.__name__}) cannot be subclassed or copied to "
                        f"shadow its _run ({error}): wrap what it does in a function with langchain_tool, or leave "
                        f"it out with ignore=[{made.name!r}]") from error
    return copy


def _method(original: Callable[..., Any], served: Callable[..., Any]) -> Callable[..., Any]:
    """The copy's ``_run``/``_arun``: ``served`` with ``original``'s signature, annotations and docstring (LangChain
    reads them for the schema, ``run_manager`` and ``config``); a call made inside the tool's own shadowed call
    (its ``_arun`` calling ``self._run``) runs ``original`` itself."""
    if callable_kind(original) == "async":
        @functools.wraps(original)
        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            running = _running.get()
            if id(self) in running:
                return await original(self, *args, **kwargs)
            token = _running.set(running | {id(self)})
            try:
                return await served(self, *args, **kwargs)
            finally:
                _running.reset(token)
    else:
        @functools.wraps(original)
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            running = _running.get()
            if id(self) in running:
                return original(self, *args, **kwargs)
            token = _running.set(running | {id(self)})
            try:
                return served(self, *args, **kwargs)
            finally:
                _running.reset(token)
    return method
