"""ToolError, Fail and the two payload shapes: message and context rules."""

from __future__ import annotations

import json

import pytest

import shadow
from shadow._redact import REDACTED, TRUNCATED_KEY
from shadow.contract._payloads import ToolError, clean_context, ok


def test_a_failure_payload_always_has_all_five_keys() -> None:
    payload = ToolError.of("not_found").payload()
    assert set(payload) == {"ok", "error"}
    assert set(payload["error"]) == {"code", "message", "retryable", "next_action", "context"}
    assert payload["error"]["context"] is None


def test_success_payload_carries_the_data() -> None:
    assert ok({"id": 3}) == {"ok": True, "data": {"id": 3}}


@pytest.mark.parametrize(
    ("message", "problem"),
    [("", "empty"), ("   ", "empty"), ("x" * 401, "401 characters"),
     ("One. Two. Three.", "3 sentences")],
)
def test_messages_that_break_the_rules_are_refused_with_the_reason(message: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ToolError.of("validation_error", message)


def test_a_date_or_version_inside_a_sentence_does_not_count_as_a_sentence_end() -> None:
    error = ToolError.of("validation_error", "The field 'due_date' must be an ISO 8601 date, for example 2025-03-14.")
    assert error.message.endswith("2025-03-14.")
    ToolError.of("unsupported_input", "Version 1.2.3 is not supported. Use 2.0.1, for example.")


def test_retryable_must_agree_with_next_action() -> None:
    with pytest.raises(ValueError, match="retryable is true exactly when next_action is 'retry'"):
        ToolError(shadow.Code.NOT_FOUND, "No such item. Check the id.", True, shadow.NextAction.STOP)
    with pytest.raises(TypeError, match="retryable must be a bool"):
        ToolError(shadow.Code.NOT_FOUND, "No such item. Check the id.", "false", shadow.NextAction.STOP)  # type: ignore[arg-type]


def test_credential_keys_are_redacted_in_context() -> None:
    context = clean_context({"api_key": "sk-live", "Authorization": "Bearer abc", "nested": {"password": "p"},
                             "X-Auth-Token": "t", "max_tokens": 5, "field": "due_date"})
    assert context == {"api_key": REDACTED, "Authorization": REDACTED, "nested": {"password": REDACTED},
                       "X-Auth-Token": REDACTED, "max_tokens": 5, "field": "due_date"}


def test_credential_shaped_text_is_scrubbed_from_context_values() -> None:
    context = clean_context({"url": "postgresql://admin:hunter2@db/prod", "note": "use Bearer abcdefghijklmnop"})
    assert context is not None
    assert "hunter2" not in json.dumps(context) and "abcdefghijklmnop" not in json.dumps(context)


def test_oversized_context_is_trimmed_and_says_so() -> None:
    context = clean_context({"field": "body", "received": "x" * 10_000, **{f"k{i}": "v" * 100 for i in range(50)}})
    assert context is not None
    assert context[TRUNCATED_KEY] is True
    assert len(json.dumps(context, separators=(",", ":"))) <= 2048
    assert context["field"] == "body"


@pytest.mark.parametrize("bad", [-1, "soon", True, float("nan"), float("inf")])
def test_retry_after_ms_must_be_a_non_negative_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="retry_after_ms must be a non-negative integer"):
        shadow.Fail("rate_limited", retry_after_ms=bad)


def test_fractional_retry_after_rounds_up() -> None:
    assert shadow.Fail("rate_limited", retry_after_ms=1500.2).error.context == {"retry_after_ms": 1501}


def test_unserialisable_context_values_become_markers() -> None:
    class Thing:
        pass

    cyclic: list[object] = []
    cyclic.append(cyclic)
    context = clean_context({"thing": Thing(), "cycle": cyclic, "raw": b"\x00\x01"})
    assert context == {"thing": "<Thing>", "cycle": ["<cycle>"], "raw": "<bytes len=2>"}


def test_fail_can_override_next_action_keeping_the_invariant() -> None:
    error = shadow.Fail("conflict", "The item changed meanwhile. Read it again, then retry.", next_action="retry").error
    assert (error.retryable, error.next_action) == (True, shadow.NextAction.RETRY)
    error = shadow.Fail("rate_limited", retryable=False).error
    assert (error.retryable, error.next_action) == (False, shadow.NextAction.ASK_USER)
