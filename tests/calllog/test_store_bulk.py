"""PostgreSQL batches go in as one JSON document of rows; the rows stored are exactly those of the per-row insert."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
from sqlalchemy import create_engine
from test_store import call

from shadow._ids import new_id
from shadow.calllog._records import CallRecord, MarkRecord, new_call_record
from shadow.calllog._store import SqlStore

EDGES: list[dict[str, Any]] = [
    {},
    {"ts": dt.datetime(2025, 3, 14, 9, 26, 53)},  # naive: taken as UTC
    {"ts": dt.datetime(2025, 3, 14, 9, 26, 53, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5)))},
    {"arg_hashes": None, "new_payload": None, "legacy_payload": None, "retryable": None, "epoch": 2**62},
    {"args": "text", "legacy_payload": [1.0, 1e300, -0.0, float("nan"), 2.5e-7], "new_payload": []},
    {"args": {"q": 'quote " backslash \\ é 😀 \u2028', "nested": {"k": [None, True, {}]}}},
    {"args": {"n": 2**70}},  # past 64 bits, in a JSON column: its JSON text goes in the document as text
    {"legacy_payload": "a\x00b"},  # NUL: the per-row insert
    {"epoch": 2**70},  # past 64 bits in a column of its own: the per-row insert (which refuses it)
]


def _stored(url: str) -> dict[tuple[str, int], tuple[Any, ...]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            got = {("calls", row[1]): row[2:] for row in conn.exec_driver_sql(
                "SELECT id, seq, session_id, ts, tool, mode, variant, fingerprint, arg_hashes::text, args::text, "
                "outcome, legacy_payload::text, new_payload::text, code, retryable, next_action, retry_after_ms, "
                "error_field, rule, unmapped, schema_valid, latency_us, process, host, source, epoch FROM calls")}
            got.update({("marks", row[1]): row[2:] for row in conn.exec_driver_sql(
                "SELECT id, seq, session_id, ts, kind, process, host, source, epoch FROM marks")})
            return got
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_batch_as_one_json_document_stores_what_the_per_row_insert_stores(pg_url: str) -> None:
    records: list[CallRecord | MarkRecord] = [call(i, **edge) for i, edge in enumerate(EDGES)]
    records.append(MarkRecord(id=new_id(), session_id="task-42", seq=99, ts=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
                              kind="end", process="1", host="h", epoch=7))
    bulk = SqlStore(pg_url)
    calls, _ = bulk.prepare()
    assert calls.statement(records[:7])[0] == calls.bulk_sql
    assert calls.statement(records[7:8])[0] == calls.sql  # NUL
    assert calls.statement(records[8:9])[0] == calls.sql  # an integer past 64 bits
    del records[8]  # a BIGINT column refuses it either way
    bulk.write(records)
    via_json = _stored(pg_url)
    with create_engine(pg_url).begin() as conn:
        conn.exec_driver_sql("DELETE FROM calls")
        conn.exec_driver_sql("DELETE FROM marks")
    per_row = SqlStore(pg_url)
    per_row_calls, per_row_marks = per_row.prepare()
    per_row_calls.bulk_sql = per_row_marks.bulk_sql = None
    per_row.write(records)
    assert len(via_json) == len(records)
    assert via_json == _stored(pg_url)


@pytest.mark.postgres
def test_a_record_the_json_document_cannot_take_is_refused_alone(pg_url: str) -> None:
    store = SqlStore(pg_url)
    too_long = call(1, tool="t" * 201)
    with pytest.raises(Exception, match="too long"):
        store.write([call(0), too_long])
    store.write([call(0)])
    assert len(_stored(pg_url)) == 1


def test_the_fast_constructor_makes_the_record_the_dataclass_makes() -> None:
    record = call(3, epoch=5)
    fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    made = new_call_record(**fields)
    assert type(made) is CallRecord and made == record
    del fields["source"], fields["epoch"]
    assert new_call_record(**fields) == CallRecord(**fields)  # the same defaults
    with pytest.raises(TypeError):
        new_call_record(**{k: v for k, v in fields.items() if k != "seq"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 4  # type: ignore[misc]
