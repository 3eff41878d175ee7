"""Sync into the DuckDB warehouse (incremental, late and out-of-order rows, rebuild), Parquet export, SQL models."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, text

from shadow._ids import new_id
from shadow.analytics import _sql as sql
from shadow.analytics._report import loop_rate_report
from shadow.analytics._warehouse import SourceError, Warehouse, WarehouseError
from shadow.calllog import _db as db
from shadow.calllog import _migrate as migrate
from shadow.calllog import _tables as tables
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.calllog._store import SqlStore

T0 = dt.datetime(2025, 3, 14, 9, 0, tzinfo=dt.UTC)


def call(session: str, seq: int, tool: str = "search", fingerprint: str = "f1", outcome: str = "ok",
         **extra: Any) -> CallRecord:
    fields: dict[str, Any] = {
        "id": new_id(), "session_id": session, "seq": seq, "ts": T0 + dt.timedelta(seconds=seq), "tool": tool,
        "mode": "shadow", "variant": "legacy", "fingerprint": fingerprint, "arg_hashes": {"q": fingerprint},
        "args": {"q": "x"}, "outcome": outcome, "legacy_payload": {"error": "bad"} if outcome == "error" else None,
        "new_payload": None, "code": "not_found" if outcome == "error" else None, "retryable": None,
        "next_action": None, "retry_after_ms": None, "error_field": None, "rule": None, "unmapped": False,
        "schema_valid": True, "latency_us": 1500, "process": "p1", "host": "h1",
    }
    fields.update(extra)
    return CallRecord(**fields)


def mark(session: str, seq: int, kind: str = "user_turn") -> MarkRecord:
    return MarkRecord(new_id(), session, seq, T0 + dt.timedelta(seconds=seq), kind, "p1", "h1")


def session_rows(prefix: str, n: int) -> list[CallRecord | MarkRecord]:
    out: list[CallRecord | MarkRecord] = []
    for s in range(n):
        sid = f"{prefix}-{s}"
        out += [call(sid, 1, outcome="error"), call(sid, 2), mark(sid, 3), call(sid, 4, "create_task", "g1")]
    return out


def snapshot(wh: Warehouse) -> dict[str, list[tuple[Any, ...]]]:
    return {name: wh.con.execute(f"SELECT * FROM {name} ORDER BY ALL").fetchall()
            for name in ("calls", "marks", "flags", "flag_audit", "error_followups", "flag_periods",
                         "session_counters")}


def without_insert_times(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(r[:-1] for r in rows)


@pytest.fixture
def store_url(db_url: str) -> str:
    migrate.ensure(db_url)
    return db_url


def test_incremental_sync_equals_rebuild(store_url: str, tmp_path: Path) -> None:
    store = SqlStore(store_url)
    inc = Warehouse.open(tmp_path / "inc.duckdb")
    results = []
    for batch in range(4):
        store.write(session_rows(f"b{batch}", 5))
        # a late call in the middle of an already synced session changes an old error's follow-up
        if batch:
            store.write([call("b0-0", 100 * batch, outcome="error"), call("b0-0", 100 * batch - 50, "late")])
        results.append(inc.sync(store_url))
    full = Warehouse.open(tmp_path / "full.duckdb")
    full.sync(store_url, rebuild=True)
    assert results[0].rebuilt and not any(r.rebuilt for r in results[1:])
    assert [r.calls_added for r in results] == [15, 17, 17, 17]
    assert snapshot(inc) == snapshot(full)
    inc.close()
    full.close()


def test_a_second_sync_adds_nothing_and_reads_only_the_margin(store_url: str, tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 3))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url)
        again = wh.sync(store_url)
        assert (again.calls_added, again.marks_added, again.sessions_recomputed) == (0, 0, 0)
        assert again.calls_read == 9  # all rows are younger than the five-minute margin
        assert wh.con.execute("SELECT count(*), count(DISTINCT id) FROM calls").fetchall() == [(9, 9)]


def test_rows_committed_after_the_watermark_with_an_older_insert_time_are_picked_up(
        store_url: str, tmp_path: Path) -> None:
    """A writer whose transaction committed late: its rows carry an insert time before the synced rows'."""
    SqlStore(store_url).write(session_rows("early", 2))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url)
        newest = wh.con.execute("SELECT max(inserted_at) FROM calls").fetchall()[0][0]
        late = call("late-writer", 1, outcome="error").to_row()
        late["inserted_at"] = newest - dt.timedelta(seconds=30)
        late["ts"] = late["ts"].replace(tzinfo=None)
        with db.engine(store_url).begin() as conn:
            conn.execute(insert(tables.calls), [late])
        result = wh.sync(store_url)
        assert result.calls_added == 1
        ids = {r[0] for r in wh.con.execute("SELECT id FROM error_followups").fetchall()}
        assert late["id"] in ids


def test_a_spool_replayed_hours_late_is_picked_up_and_recomputes_its_sessions(
        store_url: str, tmp_path: Path) -> None:
    store = SqlStore(store_url)
    store.write([call("s", 1, outcome="error"), call("s", 3, "other_tool")])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url)
        before = wh.con.execute("SELECT follow_up, looped FROM error_followups").fetchall()
        # the call at seq 2 was spooled by a process that lost the database; it is replayed hours later
        store.write([call("s", 2, ts=T0 - dt.timedelta(hours=5))])
        result = wh.sync(store_url)
        after = wh.con.execute("SELECT follow_up, looped FROM error_followups").fetchall()
    assert before == [("unknown", False)]  # seq 2 is missing: what followed the error is not known yet
    assert (result.calls_added, result.sessions_recomputed) == (1, 1)
    assert after == [("repeat", True)]


@pytest.mark.postgres
def test_out_of_order_commits_from_two_postgres_writers_are_all_picked_up(pg_url: str, tmp_path: Path) -> None:
    """Writer A starts first and commits last; its rows' insert time precedes writer B's. No margin at all."""
    migrate.ensure(pg_url)
    engine = db.create(pg_url)
    a, b = engine.connect(), engine.connect()
    try:
        a.begin()
        a.execute(insert(tables.calls), [_pg_row(call("a", 1, outcome="error"))])
        time.sleep(0.05)
        b.begin()
        b.execute(insert(tables.calls), [_pg_row(call("b", 1))])
        b.commit()
        with Warehouse.open(tmp_path / "w.duckdb") as wh:
            first = wh.sync(pg_url, margin=dt.timedelta(0))
            a.commit()
            second = wh.sync(pg_url, margin=dt.timedelta(0))
            sessions = sorted(r[0] for r in wh.con.execute("SELECT session_id FROM calls").fetchall())
        assert (first.calls_added, second.calls_added) == (1, 1)
        assert sessions == ["a", "b"]
    finally:
        a.close()
        b.close()
        engine.dispose()


def _pg_row(record: CallRecord) -> dict[str, Any]:
    return record.to_row()


def test_two_writer_processes_interleaving_lose_and_duplicate_nothing(store_url: str, tmp_path: Path) -> None:
    script = (
        "import sys, datetime as dt\n"
        "from shadow.calllog._store import SqlStore\n"
        "from tests.analytics.test_warehouse import session_rows\n"
        "store = SqlStore(sys.argv[1])\n"
        "for i in range(6):\n"
        "    store.write(session_rows(f'{sys.argv[2]}{i}', 4))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", script, store_url, name], env=env) for name in ("x", "y")]
    seen = 0
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        while any(p.poll() is None for p in procs):
            seen += wh.sync(store_url).calls_added
            time.sleep(0.05)
        seen += wh.sync(store_url).calls_added
        counts = wh.con.execute("SELECT count(*), count(DISTINCT id) FROM calls").fetchall()
    assert all(p.returncode == 0 for p in procs)
    assert seen == 2 * 6 * 4 * 3
    assert counts == [(seen, seen)]


def test_rebuild_starts_over_and_flag_history_is_copied(store_url: str, tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 2))
    with db.engine(store_url).begin() as conn:
        conn.execute(insert(tables.flag_audit), [{
            "id": new_id(), "tool": "search", "old_mode": "shadow", "old_percent": 100, "new_mode": "cutover",
            "new_percent": 50, "actor": "ana", "reason": "half", "ts": T0.replace(tzinfo=None),
        }])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url)
        wh.con.execute("DELETE FROM calls WHERE session_id = 's-0'")
        rebuilt = wh.sync(store_url, rebuild=True)
        assert rebuilt.rebuilt and rebuilt.calls_added == 6 and rebuilt.flag_changes == 1
        assert wh.con.execute("SELECT tool, mode, percent, randomised FROM flag_periods").fetchall() == [
            ("search", "cutover", 50, True)]


def test_a_row_that_cannot_be_loaded_leaves_the_warehouse_as_it_was(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    SqlStore(url).write(session_rows("s", 2))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        before = snapshot(wh)
        bad = call("bad", 1).to_row()
        bad["ts"] = bad["ts"].replace(tzinfo=None)
        with db.engine(url).begin() as conn:
            conn.execute(insert(tables.calls), [bad])
            conn.execute(text("UPDATE calls SET args = 'not json {' WHERE session_id = 'bad'"))
        with pytest.raises(WarehouseError, match="could not be loaded.*unchanged"):
            wh.sync(url)
        assert snapshot(wh) == before
        assert not [r for r in wh.con.execute("SHOW TABLES").fetchall() if r[0].startswith("_stage")]


def test_large_sqlite_reads_go_through_adbc_in_a_child_beside_an_open_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow.analytics import _arrow, _sqlite_read

    monkeypatch.setattr(_arrow, "CHILD_FROM_ROWS", 0)  # every read through the child process
    monkeypatch.setattr(_sqlite_read, "BATCH_ROWS", 3)  # ADBC infers types from 3 rows: NULL code, then 'not_found'
    url = f"sqlite:///{tmp_path}/s.db"
    store = SqlStore(url)  # keeps its connections (WAL) open in this process throughout
    store.write([call("n", i) for i in range(1, 8)] + session_rows("s", 3))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        first = wh.sync(url)
        store.write(session_rows("t", 2))  # the writer still works: its locks and WAL survived the reads
        second = wh.sync(url)
        with Warehouse.open(tmp_path / "full.duckdb") as full:
            full.sync(url, rebuild=True)
            assert snapshot(wh) == snapshot(full)
        codes = wh.con.execute("SELECT count(code), count(*) FROM calls").fetchall()[0]
    assert (first.calls_read, second.calls_added) == (16, 6)
    assert codes == (5, 22)


def test_a_warehouse_built_from_another_store_asks_for_a_rebuild(tmp_path: Path) -> None:
    first, second = f"sqlite:///{tmp_path}/one.db", f"sqlite:///{tmp_path}/two.db"
    for url in (first, second):
        SqlStore(url).write(session_rows("s", 1))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(first)
        with pytest.raises(WarehouseError, match="--rebuild"):
            wh.sync(second)
        assert wh.sync(second, rebuild=True).calls_added == 3


def test_a_store_without_a_call_log_says_how_to_create_one(tmp_path: Path) -> None:
    with Warehouse.open(tmp_path / "w.duckdb") as wh, pytest.raises(SourceError, match="shadow db upgrade"):
        wh.sync(f"sqlite:///{tmp_path}/empty.db")


def test_bad_warehouse_paths_are_refused_with_a_fix(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="is a directory"):
        Warehouse.open(tmp_path)
    with pytest.raises(WarehouseError, match="does not exist"):
        Warehouse.open(tmp_path / "no" / "such" / "w.duckdb")
    with pytest.raises(WarehouseError, match="run `shadow sync` first"):
        Warehouse.open(tmp_path / "missing.duckdb", read_only=True)
    (tmp_path / "junk.duckdb").write_text("not a database")
    with pytest.raises(WarehouseError, match="not a DuckDB warehouse"):
        Warehouse.open(tmp_path / "junk.duckdb")


def test_the_default_warehouse_sits_beside_the_store_and_shadow_warehouse_overrides_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow import _config as config

    monkeypatch.setenv("SHADOW_DB_URL", f"sqlite:///{tmp_path}/calls.db")
    config.reset()
    SqlStore(f"sqlite:///{tmp_path}/calls.db").write(session_rows("s", 1))
    with Warehouse.open() as wh:
        wh.sync()
        assert wh.path == tmp_path / "calls.duckdb"
    monkeypatch.setenv("SHADOW_WAREHOUSE", str(tmp_path / "elsewhere.duckdb"))
    config.reset()
    with Warehouse.open() as wh:
        assert wh.path == tmp_path / "elsewhere.duckdb"


def test_sync_reports_progress_up_to_the_row_count(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    SqlStore(url).write(session_rows("s", 4))
    seen: list[tuple[int, int]] = []
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 16) and seen[-1] == (16, 16)


def test_parquet_export_is_day_partitioned_and_reports_the_same(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    store = SqlStore(url)
    store.write(session_rows("d1", 3))
    store.write([call("d2-0", 1, outcome="error", ts=T0 + dt.timedelta(days=1)),
                 call("d2-0", 2, ts=T0 + dt.timedelta(days=1, seconds=1))])
    out = tmp_path / "parquet"
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        result = wh.export_parquet(out)
        direct = loop_rate_report(wh).to_dict()
        again = wh.export_parquet(out)  # an earlier export: only what is new, here nothing
        wh.export_parquet(out, overwrite=True)
    assert (result.calls, result.marks, result.appended) == (11, 3, False)
    assert (again.calls, again.marks, again.appended) == (0, 0, True)
    assert sorted(p.name for p in (out / "calls").iterdir()) == ["day=2025-03-14", "day=2025-03-15"]
    assert (out / "flag_audit.parquet").exists()
    with Warehouse.from_parquet(out) as pq:
        via_parquet = loop_rate_report(pq).to_dict()
    assert direct["methods"]["synced_at"].endswith("Z")  # UTC, as every time in the report
    assert via_parquet["methods"]["synced_at"] is None  # an export has no sync of its own
    for d in (direct, via_parquet):
        d.pop("generated_at")
        d["methods"].pop("synced_at")
    assert via_parquet == direct


def test_export_into_an_earlier_export_appends_only_new_rows_by_day_and_id(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    store = SqlStore(url)
    store.write(session_rows("e1", 2))
    out = tmp_path / "lake"
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        first = wh.export_parquet(out)
        # a new day, and a late call on the first day
        store.write([call("e2-0", 1, outcome="error", ts=T0 + dt.timedelta(days=2)), call("e1-0", 9)])
        wh.sync(url)
        second = wh.export_parquet(out)
        direct = loop_rate_report(wh).to_dict()
    assert (first.calls, second.calls, second.appended) == (6, 2, True)
    assert sorted(p.name for p in (out / "calls").iterdir()) == ["day=2025-03-14", "day=2025-03-16"]
    assert len(list((out / "calls" / "day=2025-03-14").glob("*.parquet"))) == 2  # the old file is kept
    with Warehouse.from_parquet(out) as pq:
        ids = pq.con.execute("SELECT count(*), count(DISTINCT id) FROM calls").fetchall()[0]
        via_lake = loop_rate_report(pq).to_dict()
    assert ids == (8, 8)
    for d in (direct, via_lake):
        d.pop("generated_at")
        d["methods"].pop("synced_at")
    assert via_lake == direct
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with Warehouse.open(tmp_path / "w.duckdb", read_only=True) as wh, \
            pytest.raises(WarehouseError, match="holds no earlier export"):
        wh.export_parquet(tmp_path / "other")


def test_models_are_package_data_of_the_analytics_subpackage() -> None:
    where = Path(str(sql.models_dir()))
    assert where == Path(sql.__file__).parent / "models"
    assert set(sql.names()) == {p.stem for p in where.glob("*.sql")}


def test_models_bind_exactly_their_declared_parameters() -> None:
    assert sql.parameters("SELECT $a, '$not_me' -- $nor_me\n FROM t WHERE x = $b") == {"a", "b"}
    assert sql.parameters(sql.load("report_totals")) == {"tool", "since", "until"}
    con = Warehouse.in_memory().con
    with pytest.raises(TypeError, match="missing \\['until'\\]"):
        sql.run(con, "report_totals", {"tool": None, "since": None})
    with pytest.raises(KeyError, match="known: "):
        sql.load("no_such_model")
    with pytest.raises(ValueError, match="not a model name"):
        sql.load("../etc/passwd")


def test_every_model_opens_with_a_comment_and_holds_one_statement() -> None:
    for name in sql.names():
        query = sql.load(name)
        assert query.startswith(f"-- {name}:"), name
        code = re.sub(r"--[^\n]*|'(?:[^']|'')*'", " ", query)
        assert ";" not in code, name


@pytest.mark.postgres
def test_sync_of_postgres_keeps_utc_times_whatever_the_server_zone(pg_url: str, tmp_path: Path) -> None:
    migrate.ensure(pg_url)
    with db.engine(pg_url).begin() as conn:
        conn.execute(text("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET timezone TO %L', "
                          "current_database(), 'America/New_York'); END $$"))
    db.dispose_all()
    SqlStore(pg_url).write([call("s", 1, ts=dt.datetime(2025, 3, 14, 23, 30, tzinfo=dt.UTC))])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(pg_url)
        assert wh.con.execute("SELECT ts FROM calls").fetchall() == [(dt.datetime(2025, 3, 14, 23, 30),)]


def test_one_sqlite_child_streams_each_query_in_turn_and_reports_a_failing_one(tmp_path: Path) -> None:
    from shadow.analytics import _sqlite_read

    path = tmp_path / "s.db"
    SqlStore(f"sqlite:///{path}").write(session_rows("s", 2))
    queries = [["SELECT count(*) AS n FROM calls"], ["SELECT 2 AS b"], ["SELECT * FROM nope"]]
    with (pytest.raises(SourceError, match="no such table: nope"),  # noqa: PT012 (the streams are read inside)
          _sqlite_read.sqlite_child(str(path), queries) as next_stream):
        assert next_stream().read_all().to_pydict() == {"n": [6]}
        assert next_stream().read_all().to_pydict() == {"b": [2]}
        next_stream()


def test_a_table_read_in_parallel_parts_by_rowid_gives_every_row_once_without_seed_rows(tmp_path: Path,
                                                                                        monkeypatch: pytest.MonkeyPatch
                                                                                        ) -> None:
    from shadow.analytics import _arrow, _sqlite_read

    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    SqlStore(url).write(session_rows("s", 70))  # 210 calls
    monkeypatch.setattr(_arrow, "PART_FROM_ROWS", 10)
    monkeypatch.setattr(_arrow.os, "cpu_count", lambda: 3)
    parts = _arrow.sqlite_parts(db.engine(url), tables.calls, None, 210)
    assert len(parts) == 3
    with _sqlite_read.sqlite_child(str(path), [parts, ["SELECT 1 AS after"]]) as next_stream:
        ids = next_stream().read_all().column("id").to_pylist()
        assert next_stream().read_all().to_pydict() == {"after": [1]}
    with sqlite3.connect(path) as con:
        assert sorted(ids) == sorted(r[0] for r in con.execute("SELECT id FROM calls"))
    assert len(ids) == 210


def test_a_failing_part_of_a_parallel_read_is_reported(tmp_path: Path) -> None:
    from shadow.analytics import _sqlite_read

    path = tmp_path / "s.db"
    SqlStore(f"sqlite:///{path}").write(session_rows("s", 2))
    with (pytest.raises(SourceError, match="no such table: nope"),
          _sqlite_read.sqlite_child(str(path), [["SELECT id FROM calls", "SELECT id FROM nope"]]) as next_stream):
        next_stream().read_all()


def test_an_error_on_the_warehouse_side_is_not_hidden_by_the_sqlite_child_it_stopped(tmp_path: Path) -> None:
    from shadow.analytics import _sqlite_read

    path = tmp_path / "s.db"
    SqlStore(f"sqlite:///{path}").write(session_rows("s", 2))
    big = "SELECT a.id FROM calls AS a, calls AS b, calls AS c, calls AS d, calls AS e, calls AS f"  # 46,656 rows
    with (pytest.raises(KeyError, match="stopped here"),  # noqa: PT012
          _sqlite_read.sqlite_child(str(path), [[big], [big]]) as next_stream):
        next(iter(next_stream()))
        raise KeyError("stopped here")  # the child is still writing: it ends on a broken pipe, silently


@pytest.mark.postgres
def test_a_postgres_table_read_in_parallel_page_ranges_gives_every_row_once(pg_url: str, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow.analytics import _arrow

    SqlStore(pg_url).write(session_rows("s", 400))  # 1,200 calls over several pages
    engine = db.engine(pg_url)
    monkeypatch.setattr(_arrow, "PART_FROM_ROWS", 10)
    monkeypatch.setattr(_arrow.os, "cpu_count", lambda: 3)
    assert len(_arrow.postgres_parts(engine, tables.calls, None, 1200)) == 3
    with Warehouse.open(tmp_path / "parts.duckdb") as wh:
        wh.sync(pg_url)
        parts = snapshot(wh)
    monkeypatch.setattr(_arrow, "PART_FROM_ROWS", 10**9)
    with Warehouse.open(tmp_path / "whole.duckdb") as wh:
        wh.sync(pg_url)
        whole = snapshot(wh)
    assert parts == whole
    assert len(parts["calls"]) == 1200
    assert len({row[0] for row in parts["calls"]}) == 1200


def test_planning_the_parallel_parts_of_an_unreadable_table_is_a_source_error(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow.analytics import _arrow

    monkeypatch.setattr(_arrow.os, "cpu_count", lambda: 2)
    engine = db.engine(f"sqlite:///{tmp_path}/empty.db")  # no calls table: the rowid bounds cannot be read
    with pytest.raises(SourceError, match="reading calls from the call log failed: no such table: calls"):
        _arrow.sqlite_parts(engine, tables.calls, None, 10**6)


def test_a_sync_returns_with_its_tables_in_the_file_not_the_wal(store_url: str, tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 50))
    path = tmp_path / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.sync(store_url, rebuild=True)
        wal = Path(f"{path}.wal")
        assert not wal.exists() or wal.stat().st_size == 0  # closing has nothing to replay
        wh.sync(store_url)


_SYNC_SETTINGS = ("checkpoint_threshold", "auto_checkpoint_skip_wal_threshold", "max_vacuum_tasks",
                  "preserve_insertion_order")


def _settings(wh: Warehouse) -> dict[str, str]:
    return dict(wh.con.execute("SELECT name, value FROM duckdb_settings() WHERE list_contains($names, name)",
                               {"names": list(_SYNC_SETTINGS)}).fetchall())


def test_a_sync_leaves_the_connections_settings_as_it_found_them_whether_it_succeeds_or_fails(
        store_url: str, tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 20))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        before = _settings(wh)
        wh.sync(store_url, rebuild=True)  # every commit of it checkpoints at once; later commits do not
        assert _settings(wh) == before
        with pytest.raises(SourceError):
            wh.sync(f"sqlite:///{tmp_path / 'missing' / 'shadow.db'}", rebuild=True)
        assert _settings(wh) == before


def test_a_reader_holding_a_transaction_open_does_not_fail_the_sync(store_url: str, tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 5))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url, rebuild=True)
        reader = wh.con.cursor()
        reader.begin()
        assert reader.execute("SELECT count(*) FROM calls").fetchall() == [(15,)]
        SqlStore(store_url).write(session_rows("t", 5))
        for rebuild in (False, True):  # the checkpoint after the sync waits for a later one
            assert wh.sync(store_url, rebuild=rebuild).calls_read >= 15
        reader.rollback()
        assert wh.con.execute("SELECT count(*) FROM calls").fetchall() == [(30,)]


def test_the_warehouse_turns_off_duckdbs_progress_bar_which_would_print_over_the_cli(tmp_path: Path) -> None:
    # DuckDB draws a bar on the terminal for any query past two seconds (a multi-million-call sync's insert and
    # derive), over the CLI's own progress line; a library prints nothing.
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        assert wh.con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [(False,)]
    with Warehouse.in_memory() as wh:
        assert wh.con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [(False,)]


@pytest.mark.parametrize("limit", ["lots", "", "0", "64MB", "100MiB", "1.5", "-1GB", "80%", "99999999999TB"])
def test_a_memory_limit_that_is_not_a_size_of_at_least_128mb_is_refused_before_any_file_is_made(
        tmp_path: Path, limit: str) -> None:
    with pytest.raises(ValueError, match=f"the memory limit '{re.escape(limit)}' is (not a size of at least 128MB|"
                                         "refused by DuckDB .*value is too large)"):
        Warehouse.open(tmp_path / "w.duckdb", memory_limit=limit)
    assert not (tmp_path / "w.duckdb").exists()


@pytest.mark.parametrize(("limit", "shown"), [("128MB", "122.0 MiB"), ("512MB", "488.2 MiB"), (" 2 GiB ", "2.0 GiB"),
                                              ("1.5gb", "1.3 GiB")])
def test_a_memory_limit_caps_duckdb(tmp_path: Path, limit: str, shown: str) -> None:
    with Warehouse.open(tmp_path / "w.duckdb", memory_limit=limit) as wh:
        assert wh.con.execute("SELECT current_setting('memory_limit')").fetchall() == [(shown,)]


def test_a_sync_out_of_memory_says_to_raise_the_limit_and_changes_nothing(store_url: str, tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 20))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url, rebuild=True)
        before = snapshot(wh)
        SqlStore(store_url).write(session_rows("t", 20))
        wh.con.execute("SET memory_limit = '1MB'")  # below what the CLI accepts: forces the failure
        with pytest.raises(WarehouseError, match=r"ran out of memory .*--memory-limit 4GB"):
            wh.sync(store_url, rebuild=True)
        wh.con.execute("SET memory_limit = '1GB'")
        assert snapshot(wh) == before


def test_progress_never_passes_the_total_when_rows_arrive_during_the_sync(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shadow.analytics import _sync

    store = SqlStore(store_url)
    store.write(session_rows("s", 5))
    planned = _sync.plan

    def plan_then_more_rows(*args: Any, **kwargs: Any) -> _sync.Plan:
        found = planned(*args, **kwargs)  # the rows are counted here ...
        store.write(session_rows("late", 5))  # ... and these arrive before they are read
        return found

    monkeypatch.setattr(_sync, "plan", plan_then_more_rows)
    seen: list[tuple[int, int]] = []
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        result = wh.sync(store_url, progress=lambda done, total: seen.append((done, total)))
    assert (result.calls_read, result.marks_read) == (30, 10)
    assert all(done <= total for done, total in seen)
    assert seen[-1] == (40, 40)


def test_a_full_syncs_row_count_is_the_databases_estimate_and_the_progress_ends_at_what_was_read(
        store_url: str, tmp_path: Path) -> None:
    from shadow.analytics._source import count_rows

    store = SqlStore(store_url)
    store.write(session_rows("s", 300))  # 900 calls
    engine = db.engine(store_url)
    assert count_rows(engine, tables.calls, None) == 900  # SQLite's rowid span; PostgreSQL, never analysed: counted
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("ANALYZE calls"))
            conn.commit()
        store.write(session_rows("t", 300))  # the table grew since its last ANALYZE
        estimate = count_rows(engine, tables.calls, None)
        assert 0.8 * 1800 <= estimate <= 1.25 * 1800  # the rows per page of the ANALYZE times the pages now
    seen: list[tuple[int, int]] = []
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        result = wh.sync(store_url, progress=lambda done, total: seen.append((done, total)))
    read = result.calls_read + result.marks_read
    assert all(done <= total for done, total in seen)
    assert seen[-1] == (read, read)


def test_a_sync_stores_ids_and_fingerprints_uncompressed_and_the_rest_compressed(store_url: str,
                                                                                  tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 400))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url, rebuild=True)
        SqlStore(store_url).write(session_rows("t", 10))
        assert wh.sync(store_url).calls_added == 30
        storage = dict(wh.con.execute(
            "SELECT column_name, string_agg(DISTINCT compression, ',') FROM pragma_storage_info('calls') "
            "WHERE segment_type = 'VARCHAR' GROUP BY ALL").fetchall())
        assert storage["id"] == storage["fingerprint"] == "Uncompressed"
        assert storage["session_id"] != "Uncompressed" and storage["tool"] != "Uncompressed"
        assert wh.con.execute("SELECT count(DISTINCT id), count(*) FROM calls").fetchall() == [(1230, 1230)]


def test_a_warehouse_built_before_the_storage_choice_syncs_on_without_a_rebuild(store_url: str,
                                                                               tmp_path: Path) -> None:
    SqlStore(store_url).write(session_rows("s", 5))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(store_url, rebuild=True)
        wh.con.execute("CREATE TABLE old_calls AS SELECT * FROM calls")  # compression left to DuckDB, as before
        wh.con.execute("DROP TABLE calls")
        wh.con.execute("ALTER TABLE old_calls RENAME TO calls")
        SqlStore(store_url).write(session_rows("t", 5))
        result = wh.sync(store_url)
        assert not result.rebuilt and result.calls_added == 15
        assert wh.con.execute("SELECT count(*) FROM calls").fetchall() == [(30,)]


def _child_imports(pythonpath: str | None = None) -> dict[str, bool]:
    code = ("import json, sys; from shadow.analytics._sqlite_child import _import_pyarrow; _import_pyarrow(); "
            "print(json.dumps({'pyarrow': 'pyarrow' in sys.modules, "
            "'numpy': sys.modules.get('numpy') is not None}))")
    path = os.pathsep.join(filter(None, [pythonpath, str(Path(__file__).resolve().parents[2])]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, "PYTHONPATH": path})
    result: dict[str, bool] = json.loads(done.stdout)
    return result


def test_the_sqlite_reader_process_starts_without_numpy_which_pyarrow_does_not_need() -> None:
    assert _child_imports() == {"pyarrow": True, "numpy": False}


def test_the_sqlite_reader_process_imports_numpy_after_all_for_a_pyarrow_that_needs_it(tmp_path: Path) -> None:
    (tmp_path / "pyarrow").mkdir()
    (tmp_path / "pyarrow" / "__init__.py").write_text("import numpy\n")  # as pyarrow before 16 did
    assert _child_imports(str(tmp_path)) == {"pyarrow": True, "numpy": True}


def _spawns(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    from shadow.analytics import _arrow, _sqlite_read

    started: list[subprocess.Popen[bytes]] = []
    spawn = _sqlite_read.spawn

    def counted(path: str) -> subprocess.Popen[bytes]:
        started.append(spawn(path))
        return started[-1]

    monkeypatch.setattr(_sqlite_read, "spawn", counted)
    monkeypatch.setattr(_arrow, "EARLY_CHILD_FROM_BYTES", 0)  # every file counts as large
    return started


def test_a_full_sync_of_a_large_sqlite_file_reads_through_the_process_started_before_planning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/log.db"
    migrate.ensure(url)
    SqlStore(url).write(session_rows("s", 20))
    started = _spawns(monkeypatch)
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        result = wh.sync(url, rebuild=True)
        assert (result.calls_read, result.marks_read) == (60, 20)  # a small log, read by the started process
        assert len(started) == 1 and started[0].returncode == 0
        SqlStore(url).write(session_rows("t", 2))
        assert wh.sync(url).calls_added == 6  # incremental: no process started ahead
        assert len(started) == 1


def test_a_reader_process_started_before_a_plan_that_fails_is_ended(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = f"sqlite:///{tmp_path}/a.db", f"sqlite:///{tmp_path}/b.db"
    for url in (first, second):
        migrate.ensure(url)
        SqlStore(url).write(session_rows("s", 2))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(first, rebuild=True)
        wh.con.execute("DROP TABLE error_followups")  # not synced: a full sync is expected
        started = _spawns(monkeypatch)
        with pytest.raises(WarehouseError, match="was built from"):
            wh.sync(second)
        assert len(started) == 1 and started[0].returncode == 0  # told there is nothing to read, it exited
