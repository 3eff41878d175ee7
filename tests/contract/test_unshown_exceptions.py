"""An exception the model never saw is placed by its words or its HTTP status, served in the code's own words."""

from __future__ import annotations

import json

import pytest

from shadow.contract import Rules

SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


class GatewayError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"gateway answered {status}")
        self.status_code = status


class BillingError(GatewayError):
    """A product word in the class name decides nothing."""


class OrderMissing(LookupError):
    """A user's subclass of a Python bug type is the user's own error."""


@pytest.mark.parametrize(("exc", "code", "action"), [
    (RuntimeError("billing backend timed out"), "upstream_timeout", "retry"),
    (BillingError(502), "upstream_unavailable", "retry"),
    (ValueError("bad priority: urgent"), "validation_error", "ask_user"),
    (OrderMissing("order ORD-20391 not found"), "not_found", "ask_user"),
    (Exception("Too Many Requests"), "rate_limited", "retry"),
])
def test_an_unshown_exception_is_placed_by_its_words_without_showing_them(exc: Exception, code: str,
                                                                          action: str) -> None:
    found = Rules.default().translate_exception(exc)
    assert (found.error.code.value, found.error.next_action.value) == (code, action)
    assert str(exc) not in found.error.message  # the seed's rule: no raw exception text in a payload
    assert found.unmapped and found.rule is not None and found.rule.startswith("read:")  # still up for review


@pytest.mark.parametrize("exc", [
    IndexError("list index out of range"), ZeroDivisionError("division by zero"),
    TypeError("f() missing 1 required positional argument: 'x'"), AssertionError("invalid state"),
    ModuleNotFoundError("No module named 'x'"), RuntimeError("dictionary changed size during iteration"),
])
def test_a_bug_in_the_code_stays_an_internal_error(exc: Exception) -> None:
    found = Rules.default().translate_exception(exc)
    assert found.error.code.value == "internal_error" and found.unmapped and found.rule is None


def test_a_credential_in_an_unshown_exception_never_reaches_the_payload() -> None:
    found = Rules.default().translate_exception(RuntimeError(f"upstream timed out for key {SECRET}"))
    assert found.error.code.value == "upstream_timeout"
    assert SECRET not in json.dumps(found.error.payload())


def test_a_users_rule_wins_over_the_reading() -> None:
    rules = Rules.default().on(ValueError, "unsupported_input", "Send a supported priority: low, normal, high.")
    found = rules.translate_exception(ValueError("bad priority: urgent"))
    assert found.error.code.value == "unsupported_input" and not found.unmapped


def test_an_exception_whose_str_raises_is_an_internal_error() -> None:
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert Rules.default().translate_exception(Hostile()).error.code.value == "internal_error"
