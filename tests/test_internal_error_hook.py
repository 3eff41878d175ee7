"""``shadow.configure(on_internal_error=...)``: told of every failure inside shadow that is logged and swallowed."""

from __future__ import annotations

from typing import Any

import pytest

import shadow
from shadow.flags._db import FlagState


class BrokenFlags:
    def state(self, tool: str) -> FlagState:
        raise RuntimeError("flag store exploded")


def test_the_hook_hears_of_a_swallowed_failure_and_the_legacy_result_is_unchanged() -> None:
    heard: list[tuple[str, BaseException]] = []
    shadow.configure(on_internal_error=lambda operation, error: heard.append((operation, error)))

    @shadow.tool(flags=BrokenFlags())
    def add(a: int, b: int) -> int:
        return a + b

    assert add(1, 2) == 3
    assert [(op, str(err)) for op, err in heard] == [("adapter.flag", "flag store exploded")]


def test_a_hook_that_fails_is_logged_and_swallowed_and_strict_mode_still_raises() -> None:
    def bad_hook(operation: str, error: BaseException) -> Any:
        raise ValueError("hook broke")

    shadow.configure(on_internal_error=bad_hook)

    @shadow.tool(flags=BrokenFlags())
    def add(a: int, b: int) -> int:
        return a + b

    assert add(1, 2) == 3
    shadow.configure(strict=True)
    with pytest.raises(RuntimeError, match="flag store exploded"):
        add(1, 2)


def test_a_hook_that_is_not_callable_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="on_internal_error must be a function"):
        shadow.configure(on_internal_error="print")
