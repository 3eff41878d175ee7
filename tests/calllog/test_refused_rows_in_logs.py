"""A row PostgreSQL refuses is logged by its error type and the driver's first line, never with the row's values."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging

import pytest

from shadow._ids import new_id
from shadow.calllog._records import CallRecord
from shadow.calllog._store import SqlStore
from shadow.calllog._writer import Writer

SECRET = "note-Zq81-sensitive-argument"


def test_a_refused_row_is_logged_without_its_values(pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    good = CallRecord(
        id=new_id(), session_id="s", seq=1, ts=dt.datetime.now(dt.UTC), tool="t", mode="shadow", variant="legacy",
        fingerprint="f" * 32, arg_hashes={"note": "a" * 32}, args={"note": SECRET}, outcome="ok",
        legacy_payload={"r": SECRET}, new_payload=None, code=None, retryable=None, next_action=None,
        retry_after_ms=None, error_field=None, rule=None, unmapped=False, schema_valid=True, latency_us=1,
        process="p", host="h",
    )
    refused = dataclasses.replace(good, id=new_id(), tool="x" * 300)  # too long for calls.tool
    writer = Writer(SqlStore(pg_url), queue_size=100, batch_size=10, flush_interval=0.02, spool=None)
    with caplog.at_level(logging.DEBUG, logger="shadow"):
        writer.submit(good)
        writer.submit(refused)
        assert writer.flush(30)
    writer.close()
    assert writer.stats.written == 1 and writer.stats.rejected == 1 and writer.stats.dropped == 0
    logged = [r for r in caplog.records if "record_rejected" in r.getMessage()]
    assert logged, [r.getMessage() for r in caplog.records]
    text = " ".join(r.getMessage() + json.dumps(getattr(r, "shadow_fields", {}), default=str) for r in logged)
    assert SECRET not in text and "a" * 32 not in text and "x" * 300 not in text
    assert all(r.exc_info is None for r in logged)
