"""The generator protocol driven step by step, and echo tools that use all of it, for the generator tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

import shadow
from shadow.calllog._records import CallRecord
from shadow.testing import InMemoryStore

MODES = ["legacy", "shadow", "cutover"]
Step = tuple[str, Any]  # ("next", None), ("send", value), ("throw", exception), ("close", None)


def records(store: InMemoryStore, tool: str) -> list[CallRecord]:
    assert shadow.flush(5)
    return [r for r in store.records.values() if isinstance(r, CallRecord) and r.tool == tool]


def echo_tool(events: list[str]) -> Callable[[str], Generator[str, str | None, str]]:
    """A generator tool that echoes what is sent, recovers from a thrown ``LookupError`` and returns a summary."""

    def echo(prefix: str) -> Generator[str, str | None, str]:
        events.append("start")
        received = 0
        try:
            sent = yield f"{prefix}:ready"
            while sent != "stop":
                try:
                    received += 1
                    sent = yield f"{prefix}:echo {sent}"
                except LookupError as exc:
                    sent = yield f"{prefix}:recovered {exc.args[0]}"
            return f"{prefix}:done after {received}"
        finally:
            events.append("finally")

    return echo


def aecho_tool(events: list[str]) -> Callable[[str], AsyncGenerator[str, str | None]]:
    """The async twin of ``echo_tool``: it ends on "stop" (an async generator returns no value), awaiting in finally."""

    async def aecho(prefix: str) -> AsyncGenerator[str, str | None]:
        events.append("start")
        try:
            sent = yield f"{prefix}:ready"
            while sent != "stop":
                try:
                    await asyncio.sleep(0)
                    sent = yield f"{prefix}:echo {sent}"
                except LookupError as exc:
                    sent = yield f"{prefix}:recovered {exc.args[0]}"
        finally:
            await asyncio.sleep(0)  # aclose() must await the tool's own clean-up
            events.append("finally")

    return aecho


def stubborn_tool(events: list[str]) -> Callable[[str], Generator[str, Any, str]]:
    """A generator tool that catches the first ``GeneratorExit`` and yields again, and returns on the second."""

    def stubborn(prefix: str) -> Generator[str, Any, str]:
        events.append("start")
        exits = 0
        item = f"{prefix}:ready"
        while True:
            try:
                sent = yield item
                item = f"{prefix}:got {sent}"
            except GeneratorExit:
                exits += 1
                events.append(f"GeneratorExit {exits}")
                if exits > 1:
                    return f"{prefix}:returned on exit {exits}"
                item = f"{prefix}:ignored exit"

    return stubborn


def astubborn_tool(events: list[str]) -> Callable[[str], AsyncGenerator[str, Any]]:
    """The async twin of ``stubborn_tool``: it yields again after the first ``GeneratorExit`` and ends on the second."""

    async def astubborn(prefix: str) -> AsyncGenerator[str, Any]:
        events.append("start")
        exits = 0
        item = f"{prefix}:ready"
        while True:
            try:
                sent = yield item
                await asyncio.sleep(0)
                item = f"{prefix}:got {sent}"
            except GeneratorExit:
                exits += 1
                events.append(f"GeneratorExit {exits}")
                if exits > 1:
                    return
                item = f"{prefix}:ignored exit"

    return astubborn


#: Scripts for ``stubborn_tool``: a GeneratorExit thrown in reaches the tool, which yields again or returns; a close
#: it ignores fails with RuntimeError and leaves it running, as on the bare generator.
STUBBORN_SCRIPTS: dict[str, list[Step]] = {
    "throw GeneratorExit twice": [("next", None), ("throw", GeneratorExit()), ("send", "a"),
                                  ("throw", GeneratorExit()), ("next", None)],
    "close ignored, then next": [("next", None), ("close", None), ("send", "b"), ("close", None), ("next", None)],
}
#: For ``astubborn_tool``: no aclose() it ignores (CPython leaves such an async generator in a state that even the
#: bare one reports as an unraisable StopAsyncIteration when the loop shuts down).
ASTUBBORN_SCRIPTS: dict[str, list[Step]] = {
    "throw GeneratorExit twice": STUBBORN_SCRIPTS["throw GeneratorExit twice"],
    "throw GeneratorExit, then close": [("next", None), ("throw", GeneratorExit()), ("send", "a"), ("close", None),
                                        ("next", None)],
}


def outcome_of(exc: BaseException) -> tuple[Any, ...]:
    if isinstance(exc, StopIteration):
        return ("return", exc.value)
    return ("raise", type(exc).__name__, str(exc))


def drive(gen: Generator[Any, Any, Any], steps: list[Step]) -> list[tuple[Any, ...]]:
    """What each step of the generator protocol gives: the item yielded, the value returned or the exception."""
    seen: list[tuple[Any, ...]] = []
    for op, arg in steps:
        try:
            if op == "next":
                seen.append(("yield", next(gen)))
            elif op == "send":
                seen.append(("yield", gen.send(arg)))
            elif op == "throw":
                seen.append(("yield", gen.throw(arg)))
            else:
                seen.append(("closed", gen.close()))
        except BaseException as exc:
            seen.append(outcome_of(exc))
    return seen


async def adrive(agen: AsyncGenerator[Any, Any], steps: list[Step]) -> list[tuple[Any, ...]]:
    """``drive`` for an async generator: ``__anext__``, ``asend``, ``athrow`` and ``aclose``."""
    seen: list[tuple[Any, ...]] = []
    for op, arg in steps:
        try:
            if op == "next":
                seen.append(("yield", await agen.__anext__()))
            elif op == "send":
                seen.append(("yield", await agen.asend(arg)))
            elif op == "throw":
                seen.append(("yield", await agen.athrow(arg)))
            else:
                seen.append(("closed", await agen.aclose()))
        except BaseException as exc:
            seen.append(outcome_of(exc))
    return seen


CONVERSATION: list[Step] = [("next", None), ("send", "a"), ("throw", KeyError("k")), ("send", "b"), ("send", "stop")]


def scripts() -> dict[str, list[Step]]:
    return {
        "conversation": CONVERSATION,
        "send before start": [("send", "early"), ("next", None), ("send", "a")],
        "throw before start": [("throw", KeyError("k")), ("next", None)],
        "throw uncaught": [("next", None), ("throw", ValueError("bad")), ("next", None), ("close", None)],
        "close twice, then next": [("next", None), ("close", None), ("close", None), ("next", None),
                                   ("send", "x")],
        "throw GeneratorExit": [("next", None), ("throw", GeneratorExit()), ("next", None)],
        "after the end": [("next", None), ("send", "stop"), ("next", None), ("throw", KeyError("late")),
                          ("close", None)],
    }
