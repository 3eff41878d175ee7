"""A plain call's record built in one pass (``calllog/_direct``): the same record and row as the general path."""

from __future__ import annotations

import dataclasses
import inspect
import time
from pathlib import Path
from typing import Any

import pytest

from shadow import Rules
from shadow.calllog import _direct as direct
from shadow.calllog import _pending as pending
from shadow.calllog._records import CallRecord, CallRow
from shadow.calllog._store import SqlStore
from shadow.flags._db import Mode, Variant

_STARTED = time.time_ns()


def _legacy(user_id: str, fields: list[str], limit: int = 10) -> Any:
    return {"id": user_id, "fields": fields, "limit": limit}


def _call(value: Any, *, rules: Rules | None = None, idempotent: bool = True) -> pending.PendingCall:
    spec = pending.ToolSpec("legacy", rules=rules or Rules.default(), idempotent=idempotent,
                            signature=inspect.signature(_legacy))
    return pending.PendingCall(spec=spec, mode=Mode.SHADOW, variant=Variant.LEGACY, session_id="s", seq=1,
                               started_ns=_STARTED, latency_ns=5000, args=("u-1", ["a"]), kwargs={"limit": 3},
                               value=value, epoch=7, flag_source="env")


def _fields(record: CallRecord) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(record).items() if k != "id"}


VALUES: list[Any] = [{"id": "u-1", "name": "Ada"}, {"error": "Bad request"}, {"error": "rate limited", "status": 429},
                     "Error: file not found", {"ok": False, "status": 503}, [1, 2.5, None], "fine"]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("idempotent", [True, False])
def test_a_repeated_value_gives_the_record_the_general_path_gives_every_time(
        value: Any, idempotent: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    direct._readings.clear()
    first, second = _call(value, idempotent=idempotent).build(), _call(value, idempotent=idempotent).build()
    monkeypatch.setattr(pending.PendingCall, "_fast", lambda *a: None)
    general = _call(value, idempotent=idempotent).build()
    assert _fields(first) == _fields(general) == _fields(second)


def test_an_error_value_is_read_by_the_rules_once_per_distinct_value(monkeypatch: pytest.MonkeyPatch) -> None:
    direct._readings.clear()
    asked: list[object] = []
    real = pending.ToolSpec.outcome

    def outcome(self: pending.ToolSpec, value: object, exc: BaseException | None, shown: bool = False) -> Any:
        asked.append(value)
        return real(self, value, exc, shown)

    monkeypatch.setattr(pending.ToolSpec, "outcome", outcome)
    for _ in range(3):
        _call({"error": "Bad request"}).build()
        _call({"error": "Not found"}).build()
    _call({"error": "Bad request"}, idempotent=False).build()
    assert asked == [{"error": "Bad request"}, {"error": "Not found"}, {"error": "Bad request"}]


def test_rules_of_ones_own_are_asked_for_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []

    def mine(value: object) -> bool:
        seen.append(value)
        return False

    rules = Rules.default().on_result(mine, "not_found")
    for _ in range(3):
        record = _call({"error": "Bad request"}, rules=rules).build()
    assert len(seen) == 3 and record.code == "validation_error"


@pytest.mark.parametrize("value", VALUES)
def test_a_call_row_holds_the_record_the_general_path_gives(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    direct._readings.clear()
    row = _call(value).build_row()
    assert isinstance(row, CallRow)
    monkeypatch.setattr(pending.PendingCall, "_fast", lambda *a: None)
    general = _call(value).build()
    assert row.id == row.record().id and row.session_id == general.session_id
    assert _fields(row.record()) == _fields(general)


def test_the_row_made_in_one_pass_is_the_row_the_store_makes(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'log.db'}")
    assert store.takes_rows
    insert = store.prepare()[0]
    rows = [_call(value).build_row() for value in VALUES]
    assert all(isinstance(row, CallRow) for row in rows)
    assert insert._rows(rows) == [insert.row(row.record()) for row in rows]  # type: ignore[union-attr]
    store.write(rows)
    from sqlalchemy import create_engine, text

    with create_engine(store.url).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM calls")).scalar_one() == len(VALUES)


def test_a_value_that_is_not_plain_json_is_built_as_a_record_even_for_a_store_of_rows() -> None:
    built = _call({"when": time.gmtime()}).build_row()
    assert isinstance(built, CallRecord)


def test_a_subclass_that_builds_its_own_way_is_built_its_own_way_for_a_store_of_rows() -> None:
    made: list[str] = []

    @dataclasses.dataclass(slots=True, kw_only=True)
    class Own(pending.PendingCall):
        def build(self) -> CallRecord:
            made.append("own")
            return pending.PendingCall.build(self)

    plain_call = _call({"id": "u-1"})
    own = Own(**{f.name: getattr(plain_call, f.name) for f in dataclasses.fields(pending.PendingCall)})
    assert isinstance(own.build_row(), CallRecord) and made == ["own"]


@pytest.mark.postgres
def test_call_rows_stored_in_postgresql_as_one_document_are_their_records_stored_row_by_row(pg_url: str) -> None:
    from sqlalchemy import create_engine

    rows = [_call(value).build_row() for value in VALUES]
    store = SqlStore(pg_url)
    calls, _ = store.prepare()
    assert calls.statement(rows)[0] == calls.bulk_sql
    store.write(rows)
    query = ("SELECT id, seq, session_id, ts, tool, fingerprint, arg_hashes::text, args::text, outcome, "
             "legacy_payload::text, new_payload::text, code, retryable, next_action, rule, unmapped, schema_valid, "
             "latency_us, epoch, rules_fingerprint FROM calls ORDER BY id")
    engine = create_engine(pg_url)
    with engine.begin() as conn:
        via_document = list(conn.exec_driver_sql(query))
        conn.exec_driver_sql("DELETE FROM calls")
    calls.bulk_sql = None  # row by row, from the records
    store.write([row.record() for row in rows])  # type: ignore[union-attr]
    with engine.connect() as conn:
        assert list(conn.exec_driver_sql(query)) == via_document and len(via_document) == len(VALUES)
    engine.dispose()
