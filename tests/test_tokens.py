"""Signed context tokens: round trips, rotation, expiry, size cap, and rejection of every altered token."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shadow
from shadow import tokens
from shadow._redact import REDACTED, Public, to_jsonable
from shadow.testing import assert_no_leak, assert_valid_payload
from shadow.tokens import KeyRing, TokenError, sign, verify

K1 = b"k1-secret-key-material-32-bytes!"
K2 = b"k2-secret-key-material-32-bytes!"
KEYS = {"k1": K1}
NOW = 1_700_000_000.0


def _token(payload: dict[str, Any] | None = None, **kw: Any) -> str:
    return sign(payload if payload is not None else {"cursor": 120, "q": "open tasks"}, keys=KEYS, **kw)


def test_a_signed_payload_verifies_back_to_the_same_data() -> None:
    payload = {"cursor": 120, "filters": {"state": "open", "tags": ["a", "b"]}, "note": "über"}
    assert verify(_token(payload), keys=KEYS) == payload


def test_the_token_is_url_safe_and_public_so_context_redaction_keeps_it() -> None:
    token = _token()
    assert isinstance(token, Public)
    assert all(c.isalnum() or c in "-_." for c in token)
    assert to_jsonable({"continuation_token": token}) == {"continuation_token": str(token)}
    assert to_jsonable({"continuation_token": str(token)}) == {"continuation_token": REDACTED}


def test_the_same_payload_gives_the_same_token_whatever_the_key_order() -> None:
    assert _token({"a": 1, "b": 2}) == _token({"b": 2, "a": 1})


def test_a_rotated_key_ring_verifies_old_tokens_and_signs_with_the_current_key() -> None:
    old = sign({"n": 1}, keys=KEYS)
    ring = KeyRing.of({"k1": K1, "k2": K2}, current="k2")
    new = sign({"n": 2}, keys=ring)
    assert new.split(".")[1] == "k2"
    assert verify(old, keys=ring) == {"n": 1}
    assert verify(new, keys=ring) == {"n": 2}


def test_a_plain_mapping_of_several_keys_verifies_tokens_of_each() -> None:
    keys = {"k1": K1, "k2": K2}
    assert verify(sign({"n": 1}, keys=keys, kid="k1"), keys=keys) == {"n": 1}
    assert verify(sign({"n": 2}, keys=keys, kid="k2"), keys=keys) == {"n": 2}


def test_a_token_signed_by_a_retired_key_is_rejected_as_unknown_key() -> None:
    old = sign({"n": 1}, keys=KEYS)
    with pytest.raises(TokenError) as caught:
        verify(old, keys={"k2": K2})
    assert caught.value.problem == "unknown_key"


def test_a_token_from_another_key_under_the_same_id_is_rejected_as_forged() -> None:
    forged = sign({"admin": True}, keys={"k1": b"attacker-chosen-key-of-32-bytes!"})
    with pytest.raises(TokenError) as caught:
        verify(forged, keys=KEYS)
    assert caught.value.problem == "bad_signature"


def test_expiry_is_honoured_to_the_millisecond() -> None:
    token = _token(ttl=60, now=NOW)
    assert verify(token, keys=KEYS, now=NOW + 59.998) == {"cursor": 120, "q": "open tasks"}
    with pytest.raises(TokenError) as caught:
        verify(token, keys=KEYS, now=NOW + 60)
    assert caught.value.problem == "expired"


def test_a_token_without_ttl_never_expires() -> None:
    assert verify(_token(), keys=KEYS, now=NOW * 10)


def test_an_oversized_token_is_rejected_before_it_is_decoded() -> None:
    big = sign({"blob": "x" * 900}, keys=KEYS, max_bytes=4096)
    with pytest.raises(TokenError) as caught:
        verify(big, keys=KEYS)
    assert caught.value.problem == "oversized"
    assert verify(big, keys=KEYS, max_bytes=4096)["blob"] == "x" * 900


def test_signing_a_payload_over_the_cap_says_how_to_fix_it() -> None:
    with pytest.raises(ValueError, match=r"max_bytes=1024.*an id"):
        sign({"blob": "x" * 2000}, keys=KEYS)


@pytest.mark.parametrize(
    "bad",
    ["", "s1", "s1.k1", "s1.k1.e30", "s2.k1.e30.AAAA", "not a token", "s1.k1.e30.AAAA.extra", "s1.k!.e30.AAAA", 42,
     None, b"s1.k1.e30.AAAA", "s1.k1.é.AAAA"],
)
def test_malformed_tokens_are_rejected(bad: object) -> None:
    with pytest.raises(TokenError) as caught:
        verify(bad, keys=KEYS)
    assert caught.value.problem in {"malformed", "unknown_key"}


def test_every_truncation_of_a_token_is_rejected() -> None:
    token = _token()
    for end in range(len(token)):
        with pytest.raises(TokenError):
            verify(token[:end], keys=KEYS)


@settings(max_examples=300, deadline=None)
@given(
    payload=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20) | st.booleans(), max_size=4),
    position=st.integers(min_value=0),
    byte=st.integers(min_value=0, max_value=255),
    ttl=st.none() | st.floats(min_value=1, max_value=1e6),
)
def test_any_single_byte_change_to_a_token_is_rejected(
    payload: dict[str, Any], position: int, byte: int, ttl: float | None
) -> None:
    ring = KeyRing.of({"k1": K1, "k2": K2}, current="k1")
    token = sign(payload, keys=ring, ttl=ttl, now=NOW)
    raw = bytearray(str(token).encode("ascii"))
    index = position % len(raw)
    if raw[index] == byte:
        byte = (byte + 1) % 256
    raw[index] = byte
    changed = raw.decode("latin-1")
    with pytest.raises(TokenError):
        verify(changed, keys=ring, now=NOW)


@settings(max_examples=100, deadline=None)
@given(payload=st.dictionaries(st.text(max_size=10), st.integers() | st.text(max_size=30) | st.none(), max_size=6))
def test_any_json_payload_round_trips(payload: dict[str, Any]) -> None:
    assert verify(sign(payload, keys=KEYS), keys=KEYS) == payload


@pytest.mark.parametrize("problem", ["malformed", "oversized", "unknown_key", "bad_signature", "expired"])
def test_every_rejection_is_a_validation_error_naming_the_field(problem: tokens.Problem) -> None:
    error = TokenError(problem, field="continuation_token")
    payload = error.error.payload()
    assert_valid_payload(payload)
    assert payload["error"]["code"] == "validation_error"
    assert payload["error"]["context"] == {"field": "continuation_token", "problem": problem}
    assert "'continuation_token'" in payload["error"]["message"]
    assert isinstance(error, shadow.Fail)


def test_through_the_wrapper_a_bad_token_names_the_field_and_never_echoes_the_token() -> None:
    secret_payload = {"cursor": "row-77341", "owner": "alice@example.com"}
    genuine = sign(secret_payload, keys=KEYS)
    kid, body, sig = genuine.split(".")[1:]
    tampered = f"s1.{kid}.{body[:-2]}AA.{sig}"

    @shadow.guard
    def list_tasks(continuation_token: str | None = None) -> dict[str, Any]:
        state = verify(continuation_token, keys=KEYS, field="continuation_token") if continuation_token else {}
        return {"tasks": [], "from": state.get("cursor")}

    assert list_tasks(continuation_token=genuine) == {"ok": True, "data": {"tasks": [], "from": "row-77341"}}
    payload = list_tasks(continuation_token=tampered)
    assert_valid_payload(payload)
    assert payload["ok"] is False
    error = payload["error"]
    assert error["code"] == "validation_error"
    assert error["next_action"] == "ask_user"
    assert error["context"] == {"field": "continuation_token", "problem": "bad_signature"}
    text = json.dumps(payload)
    assert_no_leak(payload, secrets=[tampered, body, sig, "row-77341", "alice"])
    assert body[:12] not in text


def test_a_token_in_context_reaches_the_payload_unredacted() -> None:
    token = sign({"page": 2}, keys=KEYS)
    error = shadow.ToolError.of("rate_limited", context={"retry_token": token, "retry_after_ms": 500})
    assert error.payload()["error"]["context"] == {"retry_token": str(token), "retry_after_ms": 500}


def test_key_rings_refuse_weak_or_misnamed_keys_with_a_remedy() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        KeyRing.of({"k1": b"short"})
    with pytest.raises(TypeError, match="must be bytes"):
        KeyRing.of({"k1": "a-text-key-of-enough-length"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="key id"):
        KeyRing.of({"k.1": os.urandom(32)})
    with pytest.raises(ValueError, match="kid="):
        sign({}, keys={"k1": K1, "k2": K2})
    with pytest.raises(ValueError, match="not in the key ring"):
        KeyRing.of({"k1": K1}, current="k9")


def test_a_key_ring_never_shows_its_keys() -> None:
    ring = KeyRing.of({"k1": K1})
    assert "secret" not in repr(ring)
    assert "k1" in repr(ring)


def test_non_json_payloads_and_bad_ttls_are_refused_when_signing() -> None:
    with pytest.raises(TypeError, match="JSON data"):
        sign({"when": object()}, keys=KEYS)
    with pytest.raises(TypeError, match="mapping"):
        sign(["a"], keys=KEYS)  # type: ignore[arg-type]
    for ttl in (0, -5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="ttl"):
            sign({}, keys=KEYS, ttl=ttl)
