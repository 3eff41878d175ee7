"""The call wrappers of ``@shadow.tool``, one per kind of callable: plain, async, generator, async generator."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final

from shadow.flags._db import Variant

if TYPE_CHECKING:
    from shadow._adapter import _Runner as Runner
    from shadow._adapter import _Started as Started

_get_hooks: Final = sys.get_asyncgen_hooks
_set_hooks: Final = sys.set_asyncgen_hooks
_ARM_LEGACY: Final = Variant.LEGACY  # a stream is always served as the tool's own: its call is logged in that arm


def _sync(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
    """A plain tool; one that hands back a coroutine (``def tool(): return impl()``) under a framework that awaits
    it (FastMCP, PydanticAI) gives a coroutine that awaits it, so the call is logged, and in cutover served, by what
    the coroutine gives; under one that does not, the coroutine is the value, as the framework has it."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = runner.begin()
        if started is None:
            return fn(*args, **kwargs)
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            structured = runner.finish(started, args, kwargs, exc=exc)
            if structured is None:
                raise
            return structured
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: logged as cancelled, re-raised unchanged
            runner.finish(started, args, kwargs, exc=exc)
            raise
        if isinstance(value, CoroutineType) and runner.awaits_returned():
            return _awaited(value, runner, started, args, kwargs)
        structured = runner.finish(started, args, kwargs, value=value)
        return value if structured is None else structured

    return wrapper


def _async(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = runner.begin()
        if started is None:
            return await fn(*args, **kwargs)
        return await _awaited(fn(*args, **kwargs), runner, started, args, kwargs)

    return wrapper


async def _awaited(awaitable: Awaitable[Any], runner: Runner, started: Started, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """The call's value once ``awaitable`` gives it (or the structured payload in its place), the call logged."""
    try:
        value = await awaitable
    except Exception as exc:
        structured = runner.finish(started, args, kwargs, exc=exc)
        if structured is None:
            raise
        return structured
    except BaseException as exc:  # CancelledError (a wait_for timeout), KeyboardInterrupt, SystemExit
        runner.finish(started, args, kwargs, exc=exc)
        raise
    structured = runner.finish(started, args, kwargs, value=value)
    return value if structured is None else structured


def _generator(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
    """A generator tool stays a generator with its whole protocol; its call is logged when iteration ends.

    ``send``, ``throw`` and ``close`` reach the tool and its return value reaches the caller in every mode, as with
    the bare generator (``yield from`` semantics, PEP 380, but for a ``GeneratorExit``, which is thrown in, not
    turned into ``close()``: a tool that catches it may yield again or return). The items reach the caller unchanged
    (a stream cannot be swapped for a payload half-way), and an exception is re-raised; the record holds the real
    latency, the number of items yielded and, for an error, the structured payload.
    """

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = runner.begin()
        if started is not None:
            started.variant = _ARM_LEGACY
        items = 0
        try:
            gen = fn(*args, **kwargs)
            try:
                item = gen.send(None)
            except StopIteration as stop:
                result = stop.value
            else:
                while True:  # PEP 380's expansion of ``yield from``, counting the items, but for GeneratorExit (below)
                    items += 1
                    try:
                        sent = yield item
                    except BaseException as thrown:
                        # GeneratorExit too: thrown in as the bare generator gets it, where ``yield from`` would
                        # close the tool instead (a tool that catches it may yield again, or return a value)
                        try:
                            item = gen.throw(thrown)
                        except StopIteration as stop:
                            result = stop.value
                            break
                    else:
                        try:
                            item = gen.send(sent)
                        except StopIteration as stop:
                            result = stop.value
                            break
        except Exception as exc:
            if started is not None:
                runner.finish(started, args, kwargs, exc=exc)
            raise
        except GeneratorExit:  # the consumer stopped early: an ordinary end
            if started is not None:
                runner.finish(started, args, kwargs, value=f"<generator: {items} items, closed early>")
            raise
        except BaseException as exc:
            if started is not None:
                runner.finish(started, args, kwargs, exc=exc)
            raise
        if started is not None:
            runner.finish(started, args, kwargs, value=f"<generator: {items} items>")
        return result

    return wrapper


def _async_generator(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
    """The async twin of ``_generator``: ``asend``, ``athrow`` and ``aclose`` reach the tool, in legacy mode too.

    Python has no ``yield from`` for async generators, so the wrapper delegates step by step: each value sent, each
    exception thrown in and the close are passed to the tool's own generator, and what it yields or raises comes
    back unchanged.
    """

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = runner.begin()
        if started is not None:
            started.variant = _ARM_LEGACY
        items = 0
        try:
            agen = fn(*args, **kwargs)
            # The tool's generator is the wrapper's to close: kept out of the event loop's async generator hooks,
            # so that a loop shutting down does not close it too, racing the wrapper's own aclose().
            hooks = _get_hooks()
            _set_hooks(None, None)
            try:
                first = agen.asend(None)  # the hooks are read here, at the first step
            finally:
                _set_hooks(*hooks)
            try:
                item = await first
            except StopAsyncIteration:
                pass
            else:
                while True:
                    items += 1
                    try:
                        sent = yield item
                    except BaseException as thrown:  # GeneratorExit too, as the bare generator gets it (above)
                        try:
                            item = await agen.athrow(thrown)
                        except StopAsyncIteration:
                            break
                    else:
                        try:
                            item = await agen.asend(sent)
                        except StopAsyncIteration:
                            break
        except Exception as exc:
            if started is not None:
                runner.finish(started, args, kwargs, exc=exc)
            raise
        except GeneratorExit:
            if started is not None:
                runner.finish(started, args, kwargs, value=f"<async generator: {items} items, closed early>")
            raise
        except BaseException as exc:
            if started is not None:
                runner.finish(started, args, kwargs, exc=exc)
            raise
        if started is not None:
            runner.finish(started, args, kwargs, value=f"<async generator: {items} items>")

    return wrapper


WRAPPERS: Final[dict[str, Callable[[Callable[..., Any], Runner], Any]]] = {
    "sync": _sync, "async": _async, "generator": _generator, "async_generator": _async_generator,
}
