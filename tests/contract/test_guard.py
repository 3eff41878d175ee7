"""The wrapper: every path (each code, each built-in rule, the catch-all, async) ends in a valid payload."""

from __future__ import annotations

import asyncio
import errno
import json
from collections.abc import Callable
from typing import Any

import pytest

import shadow
from shadow.contract._codes import Code
from shadow.testing import assert_no_leak, assert_valid_payload


def raising(exc: BaseException) -> Callable[[], Any]:
    def tool() -> Any:
        raise exc

    tool.__name__ = f"raises_{type(exc).__name__}"
    return tool


def returning(value: Any) -> Callable[[], Any]:
    def tool() -> Any:
        return value

    return tool


# (tool, expected code): every code through Fail, every built-in exception rule, legacy values, the catch-all.
PATHS: list[tuple[Callable[[], Any], str]] = [
    *((raising(shadow.Fail(code)), code.value) for code in Code),
    (raising(TimeoutError()), "upstream_timeout"),
    (raising(TimeoutError()), "upstream_timeout"),
    (raising(ConnectionRefusedError(errno.ECONNREFUSED, "refused")), "upstream_unavailable"),
    (raising(ConnectionResetError()), "upstream_unavailable"),
    (raising(FileNotFoundError(errno.ENOENT, "No such file", "/etc/secret/path.txt")), "not_found"),
    (raising(FileExistsError(errno.EEXIST, "exists", "/tmp/x")), "already_exists"),
    (raising(PermissionError(errno.EACCES, "denied", "/root/.ssh/id_rsa")), "permission_denied"),
    (raising(IsADirectoryError(errno.EISDIR, "is a dir", "/home")), "failed_precondition"),
    (raising(json.JSONDecodeError("Expecting value", '{"password": "hunter2"', 5)), "validation_error"),
    (raising(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")), "unsupported_input"),
    (raising(NotImplementedError("later")), "not_implemented"),
    (raising(MemoryError()), "payload_too_large"),
    (raising(ValueError("something odd with token=abc123")), "internal_error"),
    (raising(KeyError("user_id")), "internal_error"),
    (raising(RuntimeError("Traceback (most recent call last): File \"/srv/app.py\", line 3")), "internal_error"),
    (returning({"error": "Bad request"}), "validation_error"),
    (returning("Error: not found"), "not_found"),
    (returning({"status": 404}), "not_found"),
    (returning({"status": 429, "detail": "slow down"}), "rate_limited"),
    (returning({"error": {"code": 503, "message": "down"}}), "upstream_unavailable"),
    (returning({"error": "kaboom"}), "rejected"),
]


@pytest.mark.parametrize(("tool", "code"), PATHS, ids=[f"{t.__name__}-{c}" for t, c in PATHS])
def test_every_error_path_returns_a_valid_payload_with_the_expected_code(tool: Callable[[], Any], code: str) -> None:
    payload = shadow.guard(tool)()
    assert_valid_payload(payload)
    assert payload["ok"] is False
    assert payload["error"]["code"] == code


@pytest.mark.parametrize(("tool", "code"), PATHS[:20], ids=[f"async-{c}" for _, c in PATHS[:20]])
def test_async_tools_follow_the_same_paths(tool: Callable[[], Any], code: str) -> None:
    async def async_tool() -> Any:
        await asyncio.sleep(0)
        return tool()

    payload = asyncio.run(shadow.guard(async_tool)())
    assert_valid_payload(payload)
    assert payload["error"]["code"] == code  # type: ignore[typeddict-item]


def test_success_returns_the_data() -> None:
    @shadow.guard
    def add(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    assert add(2, 3) == {"ok": True, "data": {"sum": 5}}


def test_the_catch_all_claims_to_know_nothing_and_leaks_nothing() -> None:
    secret = "sk-live-9f8e7d6c5b4a39281706"
    payload = shadow.guard(raising(RuntimeError(f"db password {secret} at /srv/app/site-packages/x.py")))()
    assert payload["error"]["message"] == shadow.CODE_TABLE[Code.INTERNAL_ERROR].default_message  # type: ignore[typeddict-item]
    assert payload["error"]["context"] is None  # type: ignore[typeddict-item]
    assert_no_leak(payload, secrets=[secret, "password"])


def test_leaks_never_reach_a_payload_from_any_path() -> None:
    secret = "hunter2-SECRET-value"
    for tool, _ in PATHS:
        try:
            tool()
        except BaseException as exc:
            exc.args = (*exc.args, f"password={secret} /home/user/.config/app.py", "Traceback (most recent call last)")
            payload = shadow.guard(raising(exc))()
        else:
            payload = shadow.guard(tool)()
        assert_no_leak(payload, secrets=[secret])


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3), asyncio.CancelledError(), GeneratorExit()])
def test_interrupts_exits_and_cancellation_are_never_swallowed(exc: BaseException) -> None:
    with pytest.raises(type(exc)):
        shadow.guard(raising(exc))()


def test_async_task_cancellation_propagates() -> None:
    @shadow.guard
    async def slow() -> None:
        await asyncio.sleep(10)

    async def main() -> None:
        task = asyncio.create_task(slow())
        await asyncio.sleep(0.01)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())


def test_arguments_that_do_not_fit_the_signature_are_a_validation_error() -> None:
    @shadow.guard
    def create_task(title: str, due_date: str) -> None:
        raise AssertionError("not reached")

    payload = create_task(title="x")  # type: ignore[call-arg]
    assert_valid_payload(payload)
    assert payload["error"]["code"] == "validation_error"  # type: ignore[typeddict-item]
    assert payload["error"]["context"]["expected"] == ["title", "due_date"]  # type: ignore[typeddict-item,index]


def test_run_tool_calls_with_a_mapping_of_arguments() -> None:
    def lookup(item_id: str) -> dict[str, str]:
        if item_id != "42":
            raise shadow.Fail("not_found", f"No item has the id {item_id!r}. List items first, for example list_items().",
                              item_id=item_id)
        return {"id": item_id}

    assert shadow.run_tool(lookup, {"item_id": "42"}) == {"ok": True, "data": {"id": "42"}}
    missing = shadow.run_tool(lookup, {"item_id": "7"})
    assert missing["error"]["context"] == {"item_id": "7"}  # type: ignore[typeddict-item]
    assert shadow.run_tool(lookup, ["not", "a", "mapping"])["error"]["code"] == "validation_error"  # type: ignore[arg-type,typeddict-item]


def test_run_tool_runs_async_tools_and_arun_tool_awaits_them() -> None:
    async def fetch(url: str) -> str:
        raise TimeoutError

    assert shadow.run_tool(fetch, {"url": "u"})["error"]["code"] == "upstream_timeout"  # type: ignore[typeddict-item]
    assert asyncio.run(shadow.arun_tool(fetch, {"url": "u"}))["error"]["code"] == "upstream_timeout"  # type: ignore[typeddict-item]


def test_run_tool_inside_a_running_loop_says_to_use_arun_tool() -> None:
    async def fetch() -> str:
        return "x"

    async def main() -> None:
        with pytest.raises(RuntimeError, match="arun_tool"):
            shadow.run_tool(fetch)

    asyncio.run(main())


def test_user_rules_win_over_the_built_in_ones() -> None:
    rules = shadow.Rules.default().on(
        KeyError, "not_found", "No task has the id {task_id}. List tasks to find it, for example list_tasks().",
        context=lambda e: {"task_id": e.args[0]},
    )

    @shadow.guard(rules=rules)
    def get_task(task_id: str) -> None:
        raise KeyError(task_id)

    error = get_task("t-9")["error"]  # type: ignore[typeddict-item]
    assert error["code"] == "not_found"
    assert error["message"].startswith("No task has the id t-9.")
    assert error["context"] == {"task_id": "t-9"}


def test_a_rule_that_raises_falls_back_to_internal_error() -> None:
    def broken(exc: BaseException) -> dict[str, Any]:
        raise RuntimeError("rule bug")

    rules = shadow.Rules.default().on(ValueError, "validation_error", context=broken)
    payload = shadow.guard(raising(ValueError("x")), rules=rules)()
    assert_valid_payload(payload)
    assert payload["error"]["code"] == "internal_error"  # type: ignore[typeddict-item]


def test_a_text_pattern_rule_matches_legacy_error_values() -> None:
    rules = shadow.Rules.default().on_result(r"due date", "validation_error",
                                             "The field 'due_date' must be an ISO 8601 date, for example 2025-03-14.",
                                             context=lambda v: {"field": "due_date"})
    payload = shadow.guard(returning({"error": "bad due date"}), rules=rules)()
    assert payload["error"]["context"] == {"field": "due_date"}  # type: ignore[typeddict-item]


def test_unserialisable_data_still_gives_a_valid_success_payload() -> None:
    class Row:
        pass

    payload = shadow.guard(returning({"row": Row(), "n": float("nan"), "when": b"raw"}))()
    assert_valid_payload(payload)
    assert payload == {"ok": True, "data": {"row": "<Row>", "n": "nan", "when": "<bytes len=3>"}}


def test_guard_accepts_a_positional_name_and_rejects_misuse_at_decoration() -> None:
    @shadow.guard("create_task")
    def make(title: str) -> dict[str, str]:
        raise ValueError("bad")

    assert make("x")["ok"] is False
    assert make.__name__ == "make"
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        shadow.guard(name=42)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="wraps a function"):
        shadow.guard()(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="given twice"):
        shadow.guard("a", name="b")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="rules must be"):
        shadow.guard(rules="x")  # type: ignore[call-overload]


def test_a_plain_function_that_hands_back_a_coroutine_is_guarded_by_what_the_coroutine_gives() -> None:
    async def impl(name: str) -> str:
        if name == "x":
            raise KeyError(name)
        return f"Document {name} created"

    @shadow.guard
    def create(name: str) -> object:
        return impl(name)

    async def run() -> tuple[object, object]:
        return await create("a"), await create("x")  # type: ignore[misc]

    made, failed = asyncio.run(run())
    assert made == {"ok": True, "data": "Document a created"}
    assert isinstance(failed, dict) and failed["ok"] is False and failed["error"]["code"] == "internal_error"
