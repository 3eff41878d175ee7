"""``@shadow.tool``: checks made at decoration time, then the legacy tool wrapped around the adapter's runner."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from shadow._adapter import _Runner
from shadow._names import check_name
from shadow._wrappers import WRAPPERS
from shadow.calllog._pending import _DEFAULT_RULES, ToolSpec
from shadow.contract._callables import callable_kind
from shadow.contract._payloads import Payload
from shadow.contract._rules import Rules
from shadow.integrations import _context as frameworks
from shadow.integrations._plain_mcp import PlainDelivery
from shadow.integrations._returns import widened_signature
from shadow.typing import FlagSource

F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    fn: str | None = None, /, name: str | None = None, *, rules: Rules | None = None, idempotent: bool = True,
    flags: FlagSource | None = None, source: str = "live", ignore: Iterable[str] = (),
) -> Callable[[F], F]: ...


def tool(
    fn: Callable[..., Any] | str | None = None,
    /,
    name: str | None = None,
    *,
    rules: Rules | None = None,
    idempotent: bool = True,
    flags: FlagSource | None = None,
    source: str = "live",
    ignore: Iterable[str] = (),
) -> Any:
    """Wrap a legacy tool (plain or ``async def``) behind its flag.

    ``@shadow.tool``, ``@shadow.tool("name")`` and ``@shadow.tool(name="name")`` all work. ``legacy``: the legacy
    call only. ``shadow``: the legacy result (the same object) or exception (the same one) reaches the caller, and
    the structured payload is logged. ``cutover``: sessions in the structured arm receive the structured payload
    instead. Failures of the adapter itself are logged and swallowed. ``source`` labels the records (``"live"``;
    ``shadow demo`` uses ``"simulated"``). ``ignore=("request_id",)`` leaves per-call values of your own out of the
    logged arguments and the fingerprints; parameters a framework injects (contexts, callbacks) are left out anyway.
    Under an agent framework, put ``@shadow.tool`` below the framework's decorator (``shadow.integrations`` does both).
    """
    if isinstance(fn, str):
        if name is not None:
            raise TypeError(f"shadow.tool: the name is given twice ({fn!r} and name={name!r}); give it once")
        fn, name = None, fn
    _check_options(name, rules, flags)
    if fn is None:
        return functools.partial(_wrap, name=name, rules=rules, idempotent=idempotent, flags=flags, source=source,
                                 ignore=ignore)
    return _wrap(fn, name=name, rules=rules, idempotent=idempotent, flags=flags, source=source, ignore=ignore)


def _check_options(name: object, rules: object, flags: object) -> None:
    """Misuse is a ``TypeError`` at decoration time, before anything is logged."""
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise TypeError(f"shadow.tool: name must be a non-empty string, not {name!r}; "
                        'for example @shadow.tool("create_task")')
    if name is not None:
        check_name(name, "shadow.tool: the tool name", '@shadow.tool("create_task")')
    if rules is not None and not isinstance(rules, Rules):
        raise TypeError(f"shadow.tool: rules must be a shadow.Rules, not {type(rules).__name__}")
    if flags is not None and not callable(getattr(flags, "state", None)):
        raise TypeError(f"shadow.tool: flags must be a flag source (an object with .state(tool)), "
                        f"not {type(flags).__name__}")


def _wrap(
    fn: Callable[..., Any], *, name: str | None, rules: Rules | None, idempotent: bool, flags: FlagSource | None,
    source: str = "live", ignore: Iterable[str] = (), deliver: Callable[[Payload], Any] | None = None,
    awaits: bool | None = None, shows: bool | None = None,
) -> Any:
    framework = frameworks.tool_object_kind(fn)
    if framework is not None:
        raise TypeError(f"shadow.tool got a tool object made by {framework}, not a function: put @shadow.tool below "
                        "the framework's decorator (closest to def), or use shadow.integrations")
    if getattr(fn, "__fastmcp__", None) is not None:
        raise TypeError("shadow.tool got a function FastMCP has registered already (it would serve the unwrapped "
                        "function): put @shadow.tool below @mcp.tool, or use shadow.integrations.fastmcp_tool(mcp)")
    if not callable(fn):
        raise TypeError(f"shadow.tool wraps a function, not {type(fn).__name__}: "
                        '@shadow.tool, @shadow.tool("name") or @shadow.tool(name="name", rules=...)')
    tool_name = name or check_name(str(getattr(fn, "__name__", None) or "tool"), "shadow.tool: the function's name",
                                   '@shadow.tool(name="create_task")')
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    skip = frameworks.check_ignore(ignore, signature, tool_name) | frameworks.injected_parameters(fn, signature)
    advertised = widened_signature(fn, signature)
    # the plain decorator: an error payload becomes an MCP result with isError when an MCP server calls this tool
    plain = PlainDelivery(advertised) if deliver is None else None
    runner = _Runner(ToolSpec(tool_name, rules or _DEFAULT_RULES, idempotent, signature, source, skip), flags,
                     deliver or plain, awaits, shows)
    wrapper = WRAPPERS[callable_kind(fn)](fn, runner)
    functools.update_wrapper(wrapper, fn)
    if plain is not None:
        plain.wrapper = wrapper
    wrapper.__shadow_tool__ = tool_name
    if advertised is not None:
        wrapper.__signature__ = advertised
    return wrapper
