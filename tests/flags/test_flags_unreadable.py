"""Flags while the flag database is unreadable: the last flags read for a bounded time, then legacy."""

from __future__ import annotations

import time
from pathlib import Path

from shadow.flags._db import DbFlags, Mode, Variant


def _variant(flags: DbFlags) -> Variant:
    return flags.state("search").variant("s-1")


def test_the_last_flags_stay_in_force_for_the_bound_then_every_tool_is_served_legacy(tmp_path: Path) -> None:
    db = tmp_path / "flags.db"
    url = f"sqlite:///{db}"
    DbFlags(url).set("search", Mode.CUTOVER, actor="test")
    flags = DbFlags(url, ttl=0.05, stale_after=1.5)
    assert flags.wait(10)
    assert _variant(flags) is Variant.STRUCTURED
    for name in ("flags.db", "flags.db-wal", "flags.db-shm"):
        if (tmp_path / name).exists():
            (tmp_path / name).write_bytes(b"garbage, not a database" * 100)
    from shadow.calllog import _db

    _db.dispose_all()
    start = time.monotonic()
    seen = []
    while time.monotonic() - start < 4:
        seen.append((round(time.monotonic() - start, 2), _variant(flags)))
        time.sleep(0.05)
    early = [v for t, v in seen if t < 1.0]
    late = [v for t, v in seen if t > 2.0]
    assert early and all(v is Variant.STRUCTURED for v in early)
    assert late and all(v is Variant.LEGACY for v in late)
