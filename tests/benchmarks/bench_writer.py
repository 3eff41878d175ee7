"""Writer throughput into SQLite and PostgreSQL next to a raw DBAPI ``executemany`` of the same rows (target >= 0.7x).

Run: python3 tests/benchmarks/bench_writer.py [--records N] [--rounds R]
PostgreSQL is measured when SHADOW_TEST_POSTGRES_URL (or --pg URL) points at a server; a throw-away database is
created and dropped. Each round times the writer (submit every record, then flush) and the raw inserts of the same
rows into an empty table, alternating, and the medians are compared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from shadow._ids import new_id
from shadow.calllog import _db as db
from shadow.calllog import _migrate as migrate
from shadow.calllog._records import CallRecord
from shadow.calllog._store import SqlStore, utc
from shadow.calllog._tables import calls
from shadow.calllog._writer import Writer

BATCH = 500
COLUMNS = [c.name for c in calls.columns if c.name != "inserted_at"]
JSON_COLUMNS = {"arg_hashes", "args", "legacy_payload", "new_payload"}


def records(n: int) -> list[CallRecord]:
    now = dt.datetime.now(dt.UTC)
    return [
        CallRecord(
            id=new_id(), session_id=f"session-{i // 40}", seq=i % 40, ts=now, tool="create_task", mode="shadow",
            variant="legacy", fingerprint=f"{i:032x}", arg_hashes={"title": f"{i:032x}"},
            args={"title": f"task {i}", "due_date": "2025-03-14", "tags": ["a", "b"]}, outcome="error",
            legacy_payload={"error": "Bad request"},
            new_payload={"ok": False, "error": {"code": "validation_error", "message": "Use a date, for example x.",
                                                "retryable": False, "next_action": "ask_user", "context": None}},
            code="validation_error", retryable=False, next_action="ask_user", retry_after_ms=None,
            error_field="due_date", rule="legacy-error-dict", unmapped=False, schema_valid=True, latency_us=120,
            process="4242", host="agent-1",
        )
        for i in range(n)
    ]


def raw_tuples(batch: list[CallRecord], naive: bool) -> list[tuple[Any, ...]]:
    out = []
    for r in batch:
        row = r.to_row()
        ts = utc(row["ts"])
        row["ts"] = ts.replace(tzinfo=None).isoformat(" ") if naive else ts
        out.append(tuple(json.dumps(row[c]) if c in JSON_COLUMNS else row[c] for c in COLUMNS))
    return out


def time_writer(url: str, recs: list[CallRecord]) -> float:
    writer = Writer(SqlStore(url), queue_size=len(recs) + 1, batch_size=BATCH, flush_interval=0.05, spool=None)
    writer.flush(30)
    SqlStore(url).write([])  # nothing; the schema exists already
    start = time.perf_counter()
    for r in recs:
        writer.submit(r)
    assert writer.flush(600), writer.stats
    elapsed = time.perf_counter() - start
    writer.close()
    assert writer.stats.written == len(recs), writer.stats
    return elapsed


def time_raw_sqlite(path: str, recs: list[CallRecord]) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    sql = f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
    start = time.perf_counter()
    for i in range(0, len(recs), BATCH):
        conn.execute("BEGIN")
        conn.executemany(sql, raw_tuples(recs[i:i + BATCH], naive=True))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def time_raw_pg(url: str, recs: list[CallRecord]) -> float:
    u = make_url(url)
    conn = psycopg.connect(host=u.host, port=u.port or 5432, user=u.username, password=u.password,
                           dbname=u.database)
    sql = f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES ({', '.join('%s' for _ in COLUMNS)})"
    start = time.perf_counter()
    for i in range(0, len(recs), BATCH):
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(sql, raw_tuples(recs[i:i + BATCH], naive=False))
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def empty(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM calls"))
    engine.dispose()


def compare(name: str, url: str, raw: Callable[[list[CallRecord]], float], n: int, rounds: int) -> float:
    migrate.upgrade(url)
    writer_times, raw_times = [], []
    for _ in range(rounds):
        empty(url)
        raw_times.append(raw(records(n)))
        empty(url)
        writer_times.append(time_writer(url, records(n)))
    w, r = statistics.median(writer_times), statistics.median(raw_times)
    ratio = r / w
    print(f"{name:10s} writer {n / w:10,.0f} rec/s   raw executemany {n / r:10,.0f} rec/s   "
          f"writer/raw throughput {ratio:.2f}x  (target >= 0.70x) {'ok' if ratio >= 0.7 else 'BELOW TARGET'}")
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pg", default=os.environ.get("SHADOW_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "bench.db")
        ratios.append(compare("sqlite", f"sqlite:///{path}", lambda recs: time_raw_sqlite(path, recs), args.records,
                              args.rounds))
    if args.pg:
        admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
        name = f"shadow_bench_{uuid.uuid4().hex[:8]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(args.pg).set(database=name).render_as_string(hide_password=False)
        try:
            ratios.append(compare("postgresql", url, lambda recs: time_raw_pg(url, recs), args.records,
                                  args.rounds))
        finally:
            db.dispose_all()
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
    else:
        print("postgresql skipped: set SHADOW_TEST_POSTGRES_URL or pass --pg URL")
    return 0 if all(r >= 0.7 for r in ratios) else 1


if __name__ == "__main__":
    sys.exit(main())
