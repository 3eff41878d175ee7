"""Property tests: arbitrary exceptions, messages and context values never produce an invalid payload."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import shadow
from shadow.contract._codes import Code
from shadow.testing import assert_no_leak, assert_valid_payload

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50) | st.binary(max_size=10),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)
exception_types = st.sampled_from([
    ValueError, TypeError, KeyError, RuntimeError, OSError, TimeoutError, ConnectionError, PermissionError,
    FileNotFoundError, NotImplementedError, ArithmeticError, LookupError, UnicodeError, MemoryError,
    AttributeError, Exception,
])


@st.composite
def custom_exception_types(draw: st.DrawFn) -> type[Exception]:
    base = draw(exception_types)
    name = draw(st.text(string.ascii_letters, min_size=1, max_size=12))
    return type(name, (base,), {})


@settings(max_examples=150, deadline=None)
@given(exc_type=exception_types | custom_exception_types(), text=st.text(max_size=300), args=st.lists(json_values, max_size=3))
def test_any_exception_gives_a_valid_payload_that_leaks_nothing(exc_type: type[Exception], text: str, args: list[Any]) -> None:
    def tool() -> None:
        raise exc_type(text, *args)

    payload = shadow.guard(tool)()
    assert_valid_payload(payload)
    assert payload["ok"] is False
    if len(text) >= 8 and text.strip() and not text.isdigit() and not _in_a_generic_message(text):
        assert_no_leak(payload, secrets=[text])


def _in_a_generic_message(text: str) -> bool:
    """A text that is itself a word of a code's own message ("unavailable") is no leak when that message is served."""
    return any(text.strip().lower() in spec.default_message.lower() for spec in shadow.CODE_TABLE.values())


@settings(max_examples=150, deadline=None)
@given(code=st.sampled_from(list(Code)), context=st.dictionaries(st.text(max_size=20), json_values, max_size=8))
def test_any_context_gives_a_valid_payload(code: Code, context: dict[str, Any]) -> None:
    context.pop("retry_after_ms", None)

    def tool() -> None:
        raise shadow.Fail(code, **context)

    assert_valid_payload(shadow.guard(tool)())


@settings(max_examples=150, deadline=None)
@given(value=json_values)
def test_any_returned_value_gives_a_valid_payload(value: Any) -> None:
    assert_valid_payload(shadow.guard(lambda: value)())


@settings(max_examples=100, deadline=None)
@given(message=st.text(max_size=500))
def test_a_message_is_either_refused_clearly_or_valid(message: str) -> None:
    try:
        error = shadow.ToolError.of("validation_error", message)
    except ValueError as exc:
        assert "message" in str(exc)
    else:
        assert_valid_payload(error.payload())
