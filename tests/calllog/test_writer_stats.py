"""Each process's writer counters land in the store's ``writer_stats`` table, and reach the warehouse."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine, text
from test_writer import fast, rec

from shadow.analytics._warehouse import Warehouse
from shadow.calllog._spool import Spool
from shadow.calllog._store import SqlStore


def test_the_writer_upserts_its_counters_at_exit_and_sync_mirrors_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    writer = fast(SqlStore(url), Spool(tmp_path / "shadow.spool", max_bytes=10**7))
    for i in range(25):
        writer.submit(rec(i))
    assert writer.flush(10)
    writer.close()
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT process, submitted, written, spooled, replayed, dropped, rejected "
                                 "FROM writer_stats")).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [(str(os.getpid()), 25, 25, 0, 0, 0, 0)]
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.sync(url)
        assert wh.con.execute("SELECT written, dropped FROM writer_stats").fetchall() == [(25, 0)]
