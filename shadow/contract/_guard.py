"""The wrapper that guarantees the contract: every call of a guarded tool returns one of the two shapes."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import CoroutineType
from typing import Any, ParamSpec, TypeVar, overload

from shadow._logs import get_logger
from shadow._redact import redact_values, scrub_text, secret_values
from shadow.contract._callables import callable_kind
from shadow.contract._codes import Code
from shadow.contract._payloads import ErrorPayload, Payload, ToolError, ok
from shadow.contract._rules import Rules, Translation

log = get_logger("shadow.guard")

P = ParamSpec("P")
R = TypeVar("R")

_DEFAULT_RULES = Rules.default()
_MAX_LOGGED_TEXT = 300


@dataclass(frozen=True, slots=True)
class Outcome:
    """A payload and how it was reached: which rule, and whether no rule really mapped the error."""

    payload: Payload
    error: ToolError | None = None
    rule: str | None = None
    unmapped: bool = False

    @classmethod
    def of_translation(cls, translation: Translation) -> Outcome:
        """The outcome for a translated error."""
        return cls(translation.error.payload(), translation.error, translation.rule, translation.unmapped)


def outcome_of_exception(
    exc: BaseException, *, rules: Rules | None = None, idempotent: bool = True, tool: str | None = None,
    quiet: bool = False, secrets: tuple[str, ...] = (), shown: bool = False,
) -> Outcome:
    """Translate an exception into the contract (the one place exceptions are translated).

    An exception no rule maps is logged with its traceback (never put in the payload) unless ``quiet``. ``shown``:
    the framework showed the exception's text to the model (``Rules.translate_exception``).
    """
    translation = (rules or _DEFAULT_RULES).translate_exception(exc, idempotent=idempotent, shown=shown)
    if translation.unmapped and not quiet:
        # The type and a scrubbed, bounded message only: exception text and tracebacks may carry credentials.
        log.warning("unmapped_exception", tool=tool, error_type=type(exc).__name__,
                    error=scrub_text(str(redact_values(str(exc), secrets)))[:_MAX_LOGGED_TEXT])
    return Outcome.of_translation(translation)


def outcome_of_value(
    value: object, *, rules: Rules | None = None, idempotent: bool = True, tool: str | None = None
) -> Outcome:
    """The contract payload for a returned value: an error when a result rule says so, else success."""
    translation = (rules or _DEFAULT_RULES).translate_result(value, idempotent=idempotent)
    if translation is None:
        return Outcome(ok(value))
    return Outcome.of_translation(translation)


def argument_error(problem: str, expected: list[str]) -> ErrorPayload:
    """The payload for a call whose arguments do not fit the tool's parameters."""
    shown = ", ".join(expected) if expected else "no arguments"
    return ToolError.of(
        Code.VALIDATION_ERROR,
        f"The arguments do not match the tool's parameters ({problem}). "
        f"Call it with its documented parameters, for example: {shown}."[:400],
        context={"problem": problem, "expected": expected},
    ).payload()


def _bind_problem(signature: inspect.Signature, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        return str(exc)
    return None


def _parameters(signature: inspect.Signature) -> list[str]:
    return [p.name for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@overload
def guard(fn: Callable[P, Awaitable[R]], /) -> Callable[P, Awaitable[Payload]]: ...  # type: ignore[overload-overlap]
@overload
def guard(fn: Callable[P, R], /) -> Callable[P, Payload]: ...
@overload
def guard(
    fn: str | None = None, /, *, rules: Rules | None = None, idempotent: bool = True, name: str | None = None
) -> Callable[[Callable[P, Any]], Callable[P, Any]]: ...


def guard(
    fn: Callable[..., Any] | str | None = None,
    /,
    *,
    rules: Rules | None = None,
    idempotent: bool = True,
    name: str | None = None,
) -> Any:
    """Decorate a tool so that every call returns ``{"ok": true, "data": ...}`` or ``{"ok": false, "error": ...}``.

    ``@shadow.guard``, ``@shadow.guard("name")`` and ``@shadow.guard(name="name", rules=...)`` all work. Works for
    plain and ``async def`` tools. ``KeyboardInterrupt``, ``SystemExit`` and task cancellation propagate; every
    other exception is translated by ``rules`` (``Rules.default()`` when omitted).
    """
    if isinstance(fn, str):
        if name is not None:
            raise TypeError(f"shadow.guard: the name is given twice ({fn!r} and name={name!r}); give it once")
        fn, name = None, fn
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise TypeError(f"shadow.guard: name must be a non-empty string, not {name!r}; "
                        'for example @shadow.guard("create_task")')
    if rules is not None and not isinstance(rules, Rules):
        raise TypeError(f"shadow.guard: rules must be a shadow.Rules, not {type(rules).__name__}")
    if fn is None:
        return functools.partial(_guard, rules=rules, idempotent=idempotent, name=name)
    return _guard(fn, rules=rules, idempotent=idempotent, name=name)


def _guard(fn: Callable[..., Any], *, rules: Rules | None, idempotent: bool, name: str | None) -> Any:
    if not callable(fn):
        raise TypeError(f"shadow.guard wraps a function, not {type(fn).__name__}: "
                        '@shadow.guard, @shadow.guard("name") or @shadow.guard(name="name", rules=...)')
    tool_name = name or getattr(fn, "__name__", "tool")
    signature = inspect.signature(fn)
    expected = _parameters(signature)

    if callable_kind(fn) == "async":  # also an instance with ``async def __call__``, or a partial of one

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Payload:
            problem = _bind_problem(signature, args, kwargs)
            if problem is not None:
                return argument_error(problem, expected)
            try:
                value = await fn(*args, **kwargs)
            except Exception as exc:
                return _error_payload(exc, (signature, args, kwargs), rules, idempotent, tool_name)
            return outcome_of_value(value, rules=rules, idempotent=idempotent, tool=tool_name).payload

        async_wrapper.__shadow_guarded__ = True  # type: ignore[attr-defined]
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Payload:
        problem = _bind_problem(signature, args, kwargs)
        if problem is not None:
            return argument_error(problem, expected)
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            return _error_payload(exc, (signature, args, kwargs), rules, idempotent, tool_name)
        if isinstance(value, CoroutineType):  # ``def tool(): return impl()``: the payload of what it gives
            return _awaited(value, (signature, args, kwargs))  # type: ignore[return-value]
        return outcome_of_value(value, rules=rules, idempotent=idempotent, tool=tool_name).payload

    async def _awaited(coroutine: Awaitable[Any], call: tuple[inspect.Signature, tuple[Any, ...], dict[str, Any]],
                       ) -> Payload:
        try:
            value = await coroutine
        except Exception as exc:
            return _error_payload(exc, call, rules, idempotent, tool_name)
        return outcome_of_value(value, rules=rules, idempotent=idempotent, tool=tool_name).payload

    wrapper.__shadow_guarded__ = True  # type: ignore[attr-defined]
    return wrapper


def _error_payload(exc: Exception, call: tuple[inspect.Signature, tuple[Any, ...], dict[str, Any]],
                   rules: Rules | None, idempotent: bool, tool: str | None) -> Payload:
    """The payload for a raised exception, with values of credential-keyed arguments it echoes redacted."""
    try:
        secrets = secret_values(call[0].bind(*call[1], **call[2]).arguments)
    except TypeError:
        secrets = ()
    payload = outcome_of_exception(exc, rules=rules, idempotent=idempotent, tool=tool, secrets=secrets).payload
    return redact_values(payload, secrets) if secrets else payload  # type: ignore[arg-type,return-value]


def _args_problem(args: object) -> ErrorPayload | None:
    if args is None:
        return None
    if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
        return ToolError.of(
            Code.VALIDATION_ERROR,
            "The arguments must be a JSON object of parameter names to values. "
            'Send an object, for example {"id": "42"}.',
            context={"received_type": type(args).__name__},
        ).payload()
    return None


def _call(
    tool: Callable[..., Any], args: Mapping[str, Any] | None, rules: Rules | None, idempotent: bool
) -> Payload | Awaitable[Payload]:
    """Check ``args``, guard ``tool`` unless it is guarded already, and call it."""
    problem = _args_problem(args)
    if problem is not None:
        return problem
    guarded = tool if getattr(tool, "__shadow_guarded__", False) else _guard(
        tool, rules=rules, idempotent=idempotent, name=None
    )
    result: Payload | Awaitable[Payload] = guarded(**(args or {}))
    return result


def run_tool(
    tool: Callable[..., Any], args: Mapping[str, Any] | None = None, *, rules: Rules | None = None,
    idempotent: bool = True,
) -> Payload:
    """Call ``tool(**args)`` and return the contract payload; an ``async def`` tool is run to completion.

    Inside a running event loop, use ``await arun_tool(...)`` for async tools instead.
    """
    result = _call(tool, args, rules, idempotent)
    if not inspect.isawaitable(result):
        return result
    import asyncio  # here: ``import shadow`` does not load asyncio for the sync tools most processes have

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(result))
    if inspect.iscoroutine(result):
        result.close()
    raise RuntimeError("run_tool() was called inside a running event loop; use `await arun_tool(...)`")


async def arun_tool(
    tool: Callable[..., Any], args: Mapping[str, Any] | None = None, *, rules: Rules | None = None,
    idempotent: bool = True,
) -> Payload:
    """Async ``run_tool``: awaits async tools, calls plain ones directly."""
    result = _call(tool, args, rules, idempotent)
    if inspect.isawaitable(result):
        return await result
    return result


async def _await(result: Awaitable[Payload]) -> Payload:
    return await result
