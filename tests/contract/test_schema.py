"""The schema layer: the shipped schema validates every payload and rejects each kind of broken one."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

import shadow
from shadow.cli import app
from shadow.contract._codes import Code
from shadow.contract._schema import build_schema, schema

GOOD: dict[str, Any] = shadow.Fail(
    "validation_error", "The field 'due_date' must be an ISO 8601 date, for example 2025-03-14.",
    field="due_date", received="next friday",
).error.payload()  # type: ignore[assignment]


def test_the_shipped_schema_is_the_one_generated_from_the_code_table() -> None:
    assert schema() == build_schema()
    jsonschema.Draft202012Validator.check_schema(schema())


def test_shadow_schema_prints_the_shipped_schema() -> None:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == schema()


@pytest.mark.parametrize("code", list(Code))
def test_each_codes_payload_validates(code: Code) -> None:
    shadow.validate(shadow.ToolError.of(code).payload())
    shadow.validate(shadow.ToolError.of(code, idempotent=False).payload())


def test_a_success_payload_validates() -> None:
    shadow.validate({"ok": True, "data": None})
    shadow.validate({"ok": True, "data": [1, {"a": "b"}]})


def broken(change: Any) -> dict[str, Any]:
    payload = copy.deepcopy(GOOD)
    change(payload["error"])
    return payload


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (broken(lambda e: e.update(code="oops")), "error.code: 'oops' is not a documented code"),
        (broken(lambda e: e.update(retryable="false")), "error.retryable"),
        (broken(lambda e: e.update(retryable=True, next_action="stop")),
         "retryable must be true exactly when next_action is 'retry'"),
        (broken(lambda e: e.update(retryable=False, next_action="retry")),
         "retryable must be true exactly when next_action is 'retry'"),
        (broken(lambda e: e.pop("context")), "'context' is missing"),
        (broken(lambda e: e.update(next_action="panic")), "error.next_action"),
        (broken(lambda e: e.update(message="")), "error.message"),
        (broken(lambda e: e.update(message="A. B. C.")), "more than 2 sentences"),
        (broken(lambda e: e.update(context={"retry_after_ms": -5})), "error.context"),
        (broken(lambda e: e.update(context="text")), "error.context"),
        (broken(lambda e: e.update(extra=1)), "error"),
        ({"ok": True}, "'data' is missing"),
        ({"ok": "yes", "data": 1}, "ok"),
        ({"error": "Bad request"}, "'ok' is missing"),
        ("Error: not found", "payload"),
    ],
)
def test_broken_payloads_are_rejected_naming_what_is_wrong(payload: object, says: str) -> None:
    with pytest.raises(shadow.PayloadError, match=None) as caught:
        shadow.validate(payload)
    assert says in str(caught.value), str(caught.value)
    assert not shadow.is_valid(payload)


def test_the_schema_itself_rejects_the_acceptance_cases_without_python_checks() -> None:
    validator = jsonschema.Draft202012Validator(schema())
    for change in (lambda e: e.update(code="oops"), lambda e: e.update(retryable="true"),
                   lambda e: e.update(retryable=True, next_action="stop"), lambda e: e.pop("context")):
        assert not validator.is_valid(broken(change))
    assert validator.is_valid(GOOD)


def _variants() -> list[object]:
    """Payloads near the common shapes: each field changed to each kind of value the schema may or may not take."""
    values: list[object] = [None, True, False, 0, 1, -1, 1.0, 2.5, "", " ", "x", "retry", "stop", "not_found", [], {},
                            {"retry_after_ms": 5}, {"retry_after_ms": -1}, {"retry_after_ms": 1.0},
                            {"retry_after_ms": True}, {"retry_after_ms": "5"}, "A" * 401]
    out: list[object] = [GOOD, {"ok": True, "data": 1}, {"ok": True}, {"ok": True, "data": 1, "x": 2}, {"ok": False}]
    for key in ("code", "message", "retryable", "next_action", "context", "extra"):
        for value in values:
            out.append(broken(lambda e, k=key, v=value: e.update({k: v})))  # type: ignore[misc]
    for key in ("ok", "data", "error"):
        for value in values:
            out.append({**GOOD, key: value})
            out.append({"ok": True, "data": 1, key: value})
    out.append(broken(lambda e: e.update(retryable=True, next_action="retry")))
    return out


def test_a_plain_payload_is_decided_without_the_general_validator_and_as_it_decides(monkeypatch: Any) -> None:
    from shadow.contract import _schema

    validator = jsonschema.Draft202012Validator(schema())
    variants = _variants()
    for payload in variants:
        if _schema._plainly_valid(payload):
            assert validator.is_valid(payload), payload
    expected = [shadow.is_valid(p) for p in variants]
    assert expected.count(True) > 20  # the variants reach both answers
    assert [validator.is_valid(p) and _rules_hold(p) for p in variants] == expected

    def no_validator() -> None:
        raise AssertionError("the general validator ran on a contract-built payload")

    monkeypatch.setattr(_schema, "_validator", no_validator)
    for code in Code:
        assert shadow.is_valid(shadow.ToolError.of(code).payload())
        assert shadow.is_valid(shadow.ToolError.of(code, context={"retry_after_ms": 10, "field": "x"}).payload())
    assert shadow.is_valid({"ok": True, "data": {"a": [1, 2]}})


def _rules_hold(payload: object) -> bool:
    try:
        shadow.validate(payload)
    except shadow.PayloadError:
        return False
    return True
