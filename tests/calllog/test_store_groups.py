"""SQLite batches go in as groups of rows per statement; the rows stored are exactly those of the per-row insert."""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import create_engine, event
from test_store import call, mark
from test_store_bulk import EDGES

from shadow._ids import new_id
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.calllog._store import SqlStore


def _stored(url: str) -> dict[tuple[str, int], tuple[Any, ...]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            got = {("calls", row[0]): row[1:] for row in conn.exec_driver_sql(
                "SELECT seq, session_id, ts, typeof(ts), tool, fingerprint, arg_hashes, args, legacy_payload, "
                "new_payload, retryable, typeof(retryable), retry_after_ms, epoch, latency_us FROM calls")}
            got.update({("marks", row[0]): row[1:] for row in conn.exec_driver_sql(
                "SELECT seq, session_id, ts, kind, epoch FROM marks")})
            return got
    finally:
        engine.dispose()


def _batch() -> list[CallRecord | MarkRecord]:
    edges = [edge for edge in EDGES if "epoch" not in edge or edge["epoch"] < 2**63]  # past 64 bits: refused
    records: list[CallRecord | MarkRecord] = [call(i, **edges[i % len(edges)]) for i in range(75)]
    records.insert(40, records[35])  # the same id twice in one group: stored once
    records += [mark(100 + i) for i in range(3)]
    return records


def test_a_sqlite_batch_in_groups_stores_what_the_per_row_insert_stores(tmp_path: Any) -> None:
    grouped, per_row = f"sqlite:///{tmp_path}/grouped.db", f"sqlite:///{tmp_path}/per_row.db"
    records = _batch()
    SqlStore(grouped).write(records)
    store = SqlStore(per_row)
    for record in records:  # one record per batch: never a full group
        store.write([dataclasses.replace(record, id=new_id()) if record is not records[40] else record])
    got, want = _stored(grouped), _stored(per_row)
    assert len(got) == 75 + 3
    assert got == want


def test_a_sqlite_batch_reaches_the_driver_as_a_few_statements_not_one_per_row(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/log.db"
    store = SqlStore(url)
    store.write([call(0)])  # the schema and the engine, made before listening
    seen: list[tuple[int, int]] = []

    def listen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if statement.startswith("INSERT INTO \"calls\""):
            seen.append((statement.count("(?"), len(parameters) if executemany else 1))

    from shadow.calllog import _db as db

    engine = db.engine(url)
    event.listen(engine, "before_cursor_execute", listen)
    try:
        store.write([call(i) for i in range(1, 501)])
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    group = store.prepare()[0].group
    assert group == 32
    # 500 rows: 15 parameter sets of a 32-row statement, then 20 sets of the one-row statement
    assert seen == [(group, 500 // group), (1, 500 % group)]
