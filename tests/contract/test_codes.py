"""The behaviour layer: the code table, code by code, and the non-idempotent downgrade."""

from __future__ import annotations

import pytest

import shadow
from shadow.contract._codes import CODE_TABLE, Code, NextAction, defaults, spec

EXPECTED = {
    "validation_error": (False, "ask_user", 422),
    "unsupported_input": (False, "ask_user", 415),
    "payload_too_large": (False, "ask_user", 413),
    "not_found": (False, "ask_user", 404),
    "already_exists": (False, "stop", 409),
    "conflict": (False, "ask_user", 409),
    "failed_precondition": (False, "ask_user", 412),
    "unauthenticated": (False, "ask_user", 401),
    "permission_denied": (False, "stop", 403),
    "rate_limited": (True, "retry", 429),
    "quota_exceeded": (False, "stop", 429),
    "upstream_timeout": (True, "retry", 504),
    "upstream_unavailable": (True, "retry", 503),
    "cancelled": (False, "stop", 499),
    "not_implemented": (False, "stop", 501),
    "rejected": (False, "ask_user", 400),
    "internal_error": (False, "stop", 500),
}


def test_the_code_set_is_exactly_the_documented_seventeen() -> None:
    assert [c.value for c in Code] == list(EXPECTED)
    assert list(CODE_TABLE) == list(Code)


@pytest.mark.parametrize("code", list(EXPECTED))
def test_each_code_has_its_documented_defaults(code: str) -> None:
    retryable, action, status = EXPECTED[code]
    row = spec(code)
    assert (row.retryable, row.next_action.value, row.http_status) == (retryable, action, status)
    error = shadow.Fail(code).error
    assert (error.retryable, error.next_action.value) == (retryable, action)
    assert error.retryable == (error.next_action is NextAction.RETRY)


@pytest.mark.parametrize("code", ["upstream_timeout", "upstream_unavailable"])
def test_non_idempotent_tools_ask_instead_of_retrying_upstream_failures(code: str) -> None:
    assert defaults(code, idempotent=False) == (False, NextAction.ASK_USER)

    @shadow.guard(idempotent=False)
    def send_email() -> None:
        raise shadow.Fail(code)

    error = send_email()["error"]
    assert (error["retryable"], error["next_action"]) == (False, "ask_user")


@pytest.mark.parametrize("code", [c for c in EXPECTED if c not in ("upstream_timeout", "upstream_unavailable")])
def test_non_idempotence_changes_no_other_code(code: str) -> None:
    assert defaults(code, idempotent=False) == defaults(code)


def test_an_unknown_code_is_rejected_with_the_list_of_codes() -> None:
    with pytest.raises(ValueError, match="unknown error code 'oops'.*validation_error"):
        spec("oops")


def test_every_default_message_meets_the_message_rules() -> None:
    for row in CODE_TABLE.values():
        shadow.ToolError.of(row.code)  # raises if a default message breaks a rule
