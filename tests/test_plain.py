"""The fast path for plain JSON values gives exactly what the general conversion gives."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from shadow import _fingerprint
from shadow._redact import to_jsonable
from shadow.calllog import _pending as pending
from shadow.calllog import _plain as plain
from shadow.flags._db import Mode, Variant

VALUES: list[Any] = [
    {"user_id": "u-1", "fields": ["a", "b"], "limit": 10},
    {"title": "Buy milk", "due": "2025-01-01", "n": 1.5, "none": None, "ok_flag": True, "nested": {"x": [1, 2.25]}},
    {"é": "ünïcode ✓", "tab": "a\tb", "quote": 'say "hi"', "ctl": "\x01\x7f", "line": "a\u2028b"},
    ["x", 0, -5, 0.0, 123456.789, [], {}],
    "plain text",
    42,
]


@pytest.mark.parametrize("value", VALUES)
def test_a_clean_value_has_the_same_fingerprint_and_stored_form_as_the_general_path(value: Any) -> None:
    assert plain.clean(value)
    copy, size = plain.snapshot(value)
    assert copy == to_jsonable(value)
    assert copy is not value or not isinstance(value, dict | list)
    assert plain.fingerprint(copy) == _fingerprint.fingerprint(value)
    from shadow._redact import dumps

    assert size == len(dumps(to_jsonable(value)).encode())


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("value", [
    {"password": "hunter2"}, {"auth": {"token": "x"}}, "Bearer abcdefghijklmnop", "sk-abc4defghijklmnopqrstu",
    "glpat-Xy7Qm2Lp9Rt4Vw8Nb3Cz", "AIzaSyD4kP9xQ2mZr7TwXy2VbNcLpKd9sHfJaE0", ["xoxb-2048593017-4417283910-qmzr7twx"],
    {"ghp_R7tQ2xZ9mKpL4vW8nB3cY6dF1gH5jS0aE2uI": 1}, "sk_live_4eC39HqLyj",
    "postgres://u:secret@host/db", 1e20, 2**70, float("nan"), (1, 2), {1: "a"}, {"d": Mode.SHADOW},
    b"bytes", {"deep": _nested(25)},
])
def test_values_that_redaction_or_conversion_would_change_take_the_general_path(value: Any) -> None:
    assert not plain.clean(value)


def _legacy(user_id: str, fields: list[str], limit: int = 10) -> Any:
    return {"id": user_id, "fields": fields, "limit": limit}


ERRORS: list[Any] = [{"error": "x"}, {"status": 404}, "Error: boom", {"error": "Bad request"},
                     {"error": {"code": 429, "message": "Too many requests, slow down"}}, {"ok": False, "status": 503},
                     {"error": "quota exceeded for today", "status": "failed"}, "Error: file not found: /tmp/x.txt"]


#: Values over the stored limits: a search tool's results, a mapping keyed by ids, a long text, results with a
#: credential in an item cut away and in one kept, and a value whose kept part is not plain.
BIG: list[Any] = [
    [{"id": f"doc-{i}", "title": f"Title number {i} of the results", "score": i / 7} for i in range(2000)],
    {f"user-{i}": {"name": f"User {i}", "active": i % 2 == 0} for i in range(3000)},
    "x" * 60000,
    [*({"id": i, "title": f"Title number {i} of the results"} for i in range(300)),
     {"note": "sk-abc4defghijklmnopqrstu"}],
    [{"note": "sk-abc4defghijklmnopqrstu"}, *({"id": i, "title": f"Title number {i} of the results"}
                                              for i in range(300))],
    [Mode.SHADOW, *range(5000)],
]


@pytest.mark.parametrize("value", [*VALUES, *ERRORS, *BIG])
def test_the_fast_record_equals_the_general_record(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    spec = pending.ToolSpec("legacy", signature=inspect.signature(_legacy))
    call = pending.PendingCall(spec=spec, mode=Mode.SHADOW, variant=Variant.LEGACY, session_id="s", seq=1,
                               started_ns=time.time_ns(), latency_ns=5000, args=("u-1", ["a"]),
                               kwargs={"limit": 3}, value=value)
    fast = call.build()
    monkeypatch.setattr(pending.PendingCall, "_fast", lambda *a: None)
    general = call.build()
    ignore = {"id"}
    assert {k: v for k, v in dataclasses.asdict(fast).items() if k not in ignore} == {  # type: ignore[call-overload]
        k: v for k, v in dataclasses.asdict(general).items() if k not in ignore}  # type: ignore[call-overload]


def test_a_payload_made_on_the_callers_side_is_stored_as_served(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    from shadow.contract._guard import Outcome
    from shadow.contract._payloads import ok

    spec = pending.ToolSpec("legacy", signature=inspect.signature(_legacy))
    served = Outcome(ok({"result": 3}))
    call = pending.PendingCall(spec=spec, mode=Mode.CUTOVER, variant=Variant.STRUCTURED, session_id="s", seq=1,
                               started_ns=time.time_ns(), latency_ns=5000, args=("u-1", ["a"]), kwargs={},
                               value={"content": [{"type": "text", "text": "3"}]}, outcome=served)
    fast = call.build()
    assert fast.new_payload == {"ok": True, "data": {"result": 3}}
    monkeypatch.setattr(pending.PendingCall, "_fast", lambda *a: None)
    general = call.build()
    assert (fast.new_payload, fast.legacy_payload) == (general.new_payload, general.legacy_payload)


@pytest.mark.parametrize("value", ERRORS)
def test_an_error_value_of_plain_json_is_recorded_without_the_general_conversion(
        value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    spec = pending.ToolSpec("legacy", signature=inspect.signature(_legacy))
    call = pending.PendingCall(spec=spec, mode=Mode.SHADOW, variant=Variant.LEGACY, session_id="s", seq=1,
                               started_ns=time.time_ns(), latency_ns=5000, args=("u-1", ["a"]),
                               kwargs={"limit": 3}, value=value)
    general: list[object] = []
    monkeypatch.setattr(pending, "to_jsonable", lambda v, **k: general.append(v) or to_jsonable(v, **k))
    record = call.build()
    assert record.outcome == "error" and record.code is not None and record.schema_valid
    assert general == []


@pytest.mark.parametrize("big", ["value", "args"])
def test_a_value_over_its_limit_is_stored_capped_without_the_general_conversion(
        big: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search tool's 2,000 results cost 70 ms a record through the general path, and ids as keys 120 ms: the
    writer fell behind a burst and lost records with its store up (outside checks)."""
    import inspect

    results = [{"id": f"doc-{i}", "title": f"Title number {i} of the results"} for i in range(2000)]
    by_id = {f"key{i}": i for i in range(5000)}
    spec = pending.ToolSpec("legacy", signature=inspect.signature(_legacy))
    call = pending.PendingCall(spec=spec, mode=Mode.SHADOW, variant=Variant.LEGACY, session_id="s", seq=1,
                               started_ns=time.time_ns(), latency_ns=5000,
                               args=("u-1", [by_id] if big == "args" else ["a"]), kwargs={},
                               value=results if big == "value" else {"id": "u-1"})
    general: list[object] = []
    monkeypatch.setattr(pending, "to_jsonable", lambda v, **k: general.append(v) or to_jsonable(v, **k))
    record = call.build()
    assert general == []
    if big == "value":
        assert record.legacy_payload == results[:50]
        assert record.new_payload == {"_truncated": True, "ok": True, "data": results[:50]}
    else:
        assert record.args == {"_truncated": True, "user_id": "u-1"}  # fields, too big, left out
        assert record.arg_hashes is not None and set(record.arg_hashes) == {"user_id", "fields"}
