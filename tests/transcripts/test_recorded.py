"""Spans shadow exported keep their recorded fields on import; a malformed one is refused with its name."""

from __future__ import annotations

import datetime as dt

import pytest

from shadow.calllog._records import CallRecord
from shadow.transcripts._recorded import as_recorded, recorded_fields


def _record() -> CallRecord:
    return CallRecord("id", "s", 1, dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "t", "shadow", "legacy", "f" * 64,
                      {"x": "h1"}, None, "error", None, {"ok": False}, "internal_error", False, "stop", None, None,
                      None, True, True, 5, "p", "h")


def test_only_spans_with_shadows_own_fields_are_read_as_recorded() -> None:
    assert recorded_fields({"gen_ai.tool.name": "t", "shadow.variant": "legacy"}) is None
    found = recorded_fields({"shadow.variant": "legacy", "shadow.fingerprint": "ab", "shadow.outcome": "ok",
                             "gen_ai.tool.name": "t"})
    assert found == {"variant": "legacy", "fingerprint": "ab", "outcome": "ok"}


def test_recorded_fields_replace_the_derived_ones_and_absent_optional_fields_are_none() -> None:
    got = as_recorded(_record(), {"variant": "structured", "fingerprint": "ab", "outcome": "error",
                                  "code": "not_found", "retryable": False, "next_action": "ask_user",
                                  "unmapped": False, "arg_hashes": '{"y": "h2"}'})
    assert (got.variant, got.fingerprint, got.code, got.next_action, got.unmapped) == (
        "structured", "ab", "not_found", "ask_user", False)
    assert got.arg_hashes == {"y": "h2"} and got.rule is None and got.retry_after_ms is None
    assert got.new_payload is None and got.legacy_payload is None  # payloads not exported: not known, not made up
    sent = as_recorded(_record(), {"variant": "legacy", "fingerprint": "ab", "outcome": "ok",
                                   "legacy_payload": '"done"', "new_payload": '{"ok": true, "data": "done"}'})
    assert (sent.legacy_payload, sent.new_payload) == ("done", {"ok": True, "data": "done"})


@pytest.mark.parametrize(("name", "value"), [("retryable", "yes"), ("outcome", "maybe"), ("retry_after_ms", -1),
                                             ("arg_hashes", "{not json"), ("code", 7)])
def test_a_malformed_recorded_field_is_refused_with_its_attribute_name(name: str, value: object) -> None:
    recorded = {"variant": "legacy", "fingerprint": "ab", "outcome": "error", name: value}
    with pytest.raises(ValueError, match=f"shadow.{name}"):
        as_recorded(_record(), recorded)
