"""SqlStore on real SQLite and PostgreSQL: idempotent inserts, UTC microseconds, outages reported as such."""

from __future__ import annotations

import datetime as dt
import json
import socket
import sqlite3
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select

from shadow._ids import new_id
from shadow.calllog import _migrate as migrate
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.calllog._store import SqlStore, StoreUnavailable, utc
from shadow.calllog._tables import calls, marks

TS = dt.datetime(2025, 3, 14, 9, 26, 53, 589793, tzinfo=dt.UTC)


def call(i: int = 0, **changes: Any) -> CallRecord:
    fields: dict[str, Any] = {
        "id": new_id(), "session_id": "task-42", "seq": i, "ts": TS, "tool": "create_task", "mode": "shadow",
        "variant": "legacy", "fingerprint": "0" * 32, "arg_hashes": {"title": "1" * 32},
        "args": {"title": "Write", "tags": ["a", "b"], "n": 1.5, "none": None}, "outcome": "error",
        "legacy_payload": {"error": "Bad request"},
        "new_payload": {"ok": False, "error": {"code": "validation_error", "message": "Fix it, for example x.",
                                               "retryable": False, "next_action": "ask_user", "context": None}},
        "code": "validation_error", "retryable": False, "next_action": "ask_user", "retry_after_ms": None,
        "error_field": "due_date", "rule": "legacy-error-dict", "unmapped": False, "schema_valid": True,
        "latency_us": 1234, "process": "4242", "host": "agent-1",
    }
    fields.update(changes)
    return CallRecord(**fields)


def mark(i: int = 0) -> MarkRecord:
    return MarkRecord(id=new_id(), session_id="task-42", seq=i, ts=TS, kind="user_turn", process="4242", host="h")


def rows(url: str, table: Any) -> list[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(select(table).order_by(table.c.id)))
    finally:
        engine.dispose()


def count(url: str, table: Any) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar_one())
    finally:
        engine.dispose()


def test_first_write_creates_the_schema_and_stores_calls_and_marks(db_url: str) -> None:
    assert migrate.current(db_url) is None
    store = SqlStore(db_url)
    records = [call(1), mark(2), call(3)]
    store.write(records)
    assert migrate.current(db_url) == migrate.head()
    assert {r.id for r in rows(db_url, calls)} == {records[0].id, records[2].id}
    assert [r.id for r in rows(db_url, marks)] == [records[1].id]


def test_stored_values_round_trip_including_json_and_utc_microseconds(db_url: str) -> None:
    record = call(7)
    SqlStore(db_url).write([record])
    (row,) = rows(db_url, calls)
    stored = row._mapping
    assert utc(stored["ts"]) == TS
    assert utc(stored["ts"]).microsecond == 589793
    for name in ("session_id", "seq", "tool", "args", "arg_hashes", "legacy_payload", "new_payload", "code",
                 "retryable", "next_action", "error_field", "unmapped", "schema_valid", "latency_us", "source"):
        assert stored[name] == getattr(record, name), name
    assert stored["inserted_at"] is not None


def test_a_non_utc_time_is_stored_as_the_same_instant_in_utc(db_url: str) -> None:
    local = TS.astimezone(dt.timezone(dt.timedelta(hours=-5, minutes=-30)))
    SqlStore(db_url).write([call(ts=local)])
    (row,) = rows(db_url, calls)
    assert utc(row._mapping["ts"]) == TS


def test_sqlite_keeps_microseconds_as_utc_wall_time(sqlite_url: str) -> None:
    SqlStore(sqlite_url).write([call(ts=TS.astimezone(dt.timezone(dt.timedelta(hours=2))))])
    path = sqlite_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        (raw,) = conn.execute("SELECT ts FROM calls").fetchone()
    assert raw == "2025-03-14 09:26:53.589793"


def test_sqlite_times_in_one_batch_across_seconds_are_stored_as_sqlalchemy_core_stores_them(
        sqlite_url: str) -> None:
    from sqlalchemy import insert

    second = dt.timedelta(seconds=1)
    new_year = dt.datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)
    times = [TS, TS + second, TS, TS.replace(microsecond=0), TS + dt.timedelta(microseconds=1), new_year,
             new_year + dt.timedelta(microseconds=1), TS.replace(year=2026)]
    ours = [call(i, ts=ts) for i, ts in enumerate(times)]
    SqlStore(sqlite_url).write(ours)
    engine = create_engine(sqlite_url)
    try:
        with engine.begin() as conn:
            conn.execute(insert(calls), [{**r.to_row(), "id": f"core-{r.seq}"} for r in ours])
    finally:
        engine.dispose()
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as conn:
        stored = dict(conn.execute("SELECT id, ts FROM calls").fetchall())
    assert [stored[r.id] for r in ours] == [stored[f"core-{r.seq}"] for r in ours]
    assert stored[ours[5].id] == "2025-12-31 23:59:59.999999" and stored[ours[6].id] == "2026-01-01 00:00:00.000000"


def test_writing_the_same_batch_twice_stores_each_record_once(db_url: str) -> None:
    store = SqlStore(db_url)
    batch = [call(i) for i in range(20)] + [mark(99)]
    store.write(batch)
    store.write(batch)
    store.write(batch[5:9])
    assert count(db_url, calls) == 20
    assert count(db_url, marks) == 1


def test_a_batch_holding_the_same_id_twice_stores_it_once(db_url: str) -> None:
    record = call(1)
    SqlStore(db_url).write([record, record, call(2)])
    assert count(db_url, calls) == 2


def test_an_empty_batch_touches_nothing(sqlite_url: str) -> None:
    SqlStore(sqlite_url).write([])
    assert migrate.current(sqlite_url) is None


def test_a_locked_sqlite_database_is_reported_unavailable_then_written(sqlite_url: str) -> None:
    store = SqlStore(sqlite_url, lock_timeout=0.05)
    store.write([call(0)])
    holder = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailable, match="locked"):
            store.write([call(1)])
        holder.execute("COMMIT")
        store.write([call(2)])
    finally:
        holder.close()
    assert count(sqlite_url, calls) == 2


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_closed_postgres_port_is_reported_unavailable() -> None:
    store = SqlStore(f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/test?connect_timeout=2")
    with pytest.raises(StoreUnavailable) as info:
        store.write([call(0)])
    assert "127.0.0.1" in str(info.value)


def test_a_sqlite_file_in_a_missing_directory_is_reported_unavailable(tmp_path: Any) -> None:
    store = SqlStore(f"sqlite:///{tmp_path}/no/such/dir/shadow.db")
    with pytest.raises(StoreUnavailable):
        store.write([call(0)])


def test_the_password_never_appears_in_what_the_store_reports() -> None:
    store = SqlStore(f"postgresql+psycopg://postgres:hunter2@127.0.0.1:{_closed_port()}/test?connect_timeout=2")
    assert "hunter2" not in repr(store)
    with pytest.raises(StoreUnavailable) as info:
        store.write([call(0)])
    assert "hunter2" not in str(info.value)


def test_an_unsupported_database_is_refused_with_the_supported_forms() -> None:
    with pytest.raises(ValueError, match=r"sqlite:///shadow\.db"):
        SqlStore("mysql://user@localhost/db")


def test_something_other_than_a_record_is_refused_not_reported_as_an_outage(sqlite_url: str) -> None:
    with pytest.raises(TypeError, match="not a call or mark record"):
        SqlStore(sqlite_url).write([{"id": "x"}])  # type: ignore[list-item]


def test_a_forked_child_opens_its_own_database_connection(db_url: str) -> None:
    import os

    store = SqlStore(db_url)
    store.write([call(0)])
    engine = store._engine()
    with engine.connect() as conn:
        parent_dbapi = conn.connection.dbapi_connection  # kept alive, so no new object can take its address
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            child_store = SqlStore(db_url)
            child_store.write([call(1)])
            with child_store._engine().connect() as conn:
                code = 0 if conn.connection.dbapi_connection is not parent_dbapi else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 1) == b"\x00"
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    store.write([call(2)])
    assert count(db_url, calls) == 3


def test_rows_are_stored_as_sqlalchemy_core_would_store_them(db_url: str) -> None:
    import dataclasses

    from sqlalchemy import insert

    ours = call(1, arg_hashes=None, legacy_payload=None, retryable=True, ts=TS.replace(microsecond=0))
    theirs = dataclasses.replace(ours, id=new_id())
    SqlStore(db_url).write([ours])
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(insert(calls), [theirs.to_row()])
        columns = [c.name for c in calls.columns if c.name not in ("id", "inserted_at")]
        with engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                listed = ", ".join(f"{c}, typeof({c})" for c in columns)
            else:
                listed = ", ".join(f"{c}::text" for c in columns)
            got = {row[0]: row[1:] for row in conn.exec_driver_sql(f"SELECT id, {listed} FROM calls")}
    finally:
        engine.dispose()
    def parsed(row: tuple[object, ...]) -> list[object]:  # JSON text may differ in whitespace only (orjson)
        return [json.loads(v) if isinstance(v, str) and v[:1] in "{[" else v for v in row]

    assert parsed(got[ours.id]) == parsed(got[theirs.id])
