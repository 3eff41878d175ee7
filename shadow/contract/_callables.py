"""What calling a callable gives (a value, a coroutine, a generator), seen through partials and ``__call__``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Literal

CallableKind = Literal["sync", "async", "generator", "async_generator"]


def callable_kind(fn: Callable[..., Any]) -> CallableKind:
    """What calling ``fn`` gives: a value, a coroutine, a generator or an async generator.

    Sees through ``functools.partial`` and instances whose ``__call__`` is ``async def`` (or a generator).
    """
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target) or inspect.isbuiltin(target)
            or isinstance(target, type)):
        call = vars(type(target)).get("__call__") or next(
            (vars(base)["__call__"] for base in type(target).__mro__ if "__call__" in vars(base)), None)
        target = call if call is not None else target
    if inspect.isasyncgenfunction(target):
        return "async_generator"
    if inspect.isgeneratorfunction(target):
        return "generator"
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(fn):
        return "async"
    return "sync"
