"""The call wrappers of ``@shadow.tool``, one per kind of callable: plain, async, generator, async generator."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from shadow.flags._db import Variant

if TYPE_CHECKING:
    from shadow._adapter import _Runner as Runner


def _sync(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
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
        structured = runner.finish(started, args, kwargs, value=value)
        return value if structured is None else structured

    return wrapper


def _async(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = runner.begin()
        if started is None:
            return await fn(*args, **kwargs)
        try:
            value = await fn(*args, **kwargs)
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

    return wrapper


def _generator(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
    """A generator tool stays a generator; its call is logged when iteration ends, with its real latency.

    The items reach the caller unchanged in every mode (a stream cannot be swapped for a payload half-way), and an
    exception is re-raised; the record holds the number of items and, for an error, the structured payload.
    """

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = runner.begin()
        if started is None:
            return (yield from fn(*args, **kwargs))
        started = dataclasses.replace(started, variant=Variant.LEGACY)
        items = 0
        try:
            for item in fn(*args, **kwargs):
                items += 1
                yield item
        except Exception as exc:
            runner.finish(started, args, kwargs, exc=exc)
            raise
        except GeneratorExit:  # the consumer stopped early: an ordinary end
            runner.finish(started, args, kwargs, value=f"<generator: {items} items, closed early>")
            raise
        except BaseException as exc:
            runner.finish(started, args, kwargs, exc=exc)
            raise
        runner.finish(started, args, kwargs, value=f"<generator: {items} items>")
        return None

    return wrapper


def _async_generator(fn: Callable[..., Any], runner: Runner) -> Callable[..., Any]:
    """The async twin of ``_generator``."""

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = runner.begin()
        if started is None:
            async for item in fn(*args, **kwargs):
                yield item
            return
        started = dataclasses.replace(started, variant=Variant.LEGACY)
        items = 0
        try:
            async for item in fn(*args, **kwargs):
                items += 1
                yield item
        except Exception as exc:
            runner.finish(started, args, kwargs, exc=exc)
            raise
        except GeneratorExit:
            runner.finish(started, args, kwargs, value=f"<async generator: {items} items, closed early>")
            raise
        except BaseException as exc:
            runner.finish(started, args, kwargs, exc=exc)
            raise
        runner.finish(started, args, kwargs, value=f"<async generator: {items} items>")

    return wrapper


WRAPPERS: Final[dict[str, Callable[[Callable[..., Any], Runner], Any]]] = {
    "sync": _sync, "async": _async, "generator": _generator, "async_generator": _async_generator,
}
