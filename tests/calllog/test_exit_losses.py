"""Nothing silently lost at exit: what the store cannot take by the exit deadline is spooled, a spool whose
directory cannot be written goes to the fallback directory, and what is still lost is counted (fresh processes)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CALLS = textwrap.dedent(
    """
    import json, sys
    import shadow
    from shadow.calllog._writer import get_writer

    @shadow.tool
    def work(i: int) -> dict:
        return {"i": i}

    for i in range(int(sys.argv[1])):
        work(i)
    if sys.argv[2] == "flush":
        flushed = shadow.flush(3)
        stats = get_writer().stats
        print(json.dumps({"flushed": flushed, "pending": stats.pending, "dropped": stats.dropped,
                          "spooled": stats.spooled}), flush=True)
    """
)


def _env(tmp_path: Path, db: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "SHADOW_FLAGS": "*=shadow", "SHADOW_DB_URL": f"sqlite:///{db}",
            "XDG_CACHE_HOME": str(tmp_path / "cache"), "SHADOW_FINGERPRINT_KEY": "k" * 32}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-c", CALLS, *args], env=env, capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _stored(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM calls").fetchone()[0])


def test_a_spool_whose_directory_cannot_be_written_goes_to_the_fallback_and_is_replayed_later(
        tmp_path: Path) -> None:
    blocked = tmp_path / "data"
    blocked.write_text("a file where the database's directory should be")  # neither the database nor the spool
    db = blocked / "shadow.db"
    env = _env(tmp_path, db)
    first = _run(env, "3000", "flush")
    result = json.loads(first.stdout.strip().splitlines()[-1])
    assert result == {"flushed": True, "pending": 0, "dropped": 0, "spooled": 3000}
    assert "spool.fallback" in first.stderr
    kept = list((tmp_path / "cache" / "shadow" / "spool").glob("*.spool"))
    assert kept, first.stderr[-2000:]

    blocked.unlink()
    blocked.mkdir()  # the database's directory is there now: the next process replays the fallback spool
    _run(env, "10", "flush")
    assert _stored(db) == 3010
    assert not list((tmp_path / "cache" / "shadow" / "spool").glob("*.spool"))


def test_a_database_url_into_missing_directories_spools_to_the_fallback_and_makes_no_directories(
        tmp_path: Path) -> None:
    """An outside check: sqlite:////nonexistent/dir/x.db made /nonexistent/dir (as root) for its spool, and the next
    process made x.db in it."""
    db = tmp_path / "missing" / "deeper" / "shadow.db"
    first = _run(_env(tmp_path, db), "20", "flush")
    assert json.loads(first.stdout.strip().splitlines()[-1])["spooled"] == 20
    assert "spool.fallback" in first.stderr
    assert not (tmp_path / "missing").exists()
    assert list((tmp_path / "cache" / "shadow" / "spool").glob("*.spool"))


def test_what_neither_the_store_nor_any_spool_takes_is_pending_after_a_failed_flush_and_counted_at_exit(
        tmp_path: Path) -> None:
    blocked = tmp_path / "data"
    blocked.write_text("not a directory")
    env = {**_env(tmp_path, blocked / "shadow.db"), "XDG_CACHE_HOME": str(blocked / "cache")}  # no fallback either
    done = _run(env, "3000", "flush")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["flushed"] is False
    assert result["pending"] == 3000 and result["dropped"] == 0  # held in memory, said so
    totals = [int(line.rsplit("dropped_total=", 1)[1].split()[0]) for line in done.stderr.splitlines()
              if "writer.drop" in line and "dropped_total=" in line]
    assert totals and totals[-1] == 3000  # logged as lost at exit, every one of them


SLOW_STORE = textwrap.dedent(
    """
    import json, sys, time
    import shadow
    from shadow.calllog._spool import Spool
    from shadow.calllog._writer_thread import Writer
    from shadow.calllog._writer import set_writer

    class SlowStore:  # a store that takes its time: the exit deadline passes with records queued
        def write(self, records):
            time.sleep(0.4)
            with open(sys.argv[1], "a") as out:
                out.writelines(r.id + "\\n" for r in records)

    spool = Spool(sys.argv[2], max_bytes=1 << 30, tag="slow")
    set_writer(Writer(SlowStore(), queue_size=20000, batch_size=500, flush_interval=0.05, spool=spool))

    @shadow.tool
    def work(i: int) -> dict:
        return {"i": i}

    for i in range(13000):
        work(i)
    """
)


def test_records_the_store_cannot_take_by_the_exit_deadline_are_spooled_not_lost(tmp_path: Path) -> None:
    stored, spool = tmp_path / "stored.txt", tmp_path / "slow.spool"
    env = _env(tmp_path, tmp_path / "unused.db")
    done = subprocess.run([sys.executable, "-c", SLOW_STORE, str(stored), str(spool)], env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    ids = set(stored.read_text().split()) if stored.exists() else set()
    for path in tmp_path.glob("slow.*.spool"):
        for line in path.read_bytes().splitlines()[1:]:
            ids.add(json.loads(line)["r"]["id"])
    assert len(ids) == 13000, done.stderr[-2000:]


SLOW_BUILDS = textwrap.dedent(
    """
    import sys, time
    import shadow
    from shadow.calllog import _writer_thread
    from shadow.calllog._writer import get_writer

    _writer_thread.EXIT_GRACE = 0.2  # a short grace: records whose build is slow are still in flight at the end

    class Slow(dict):  # a value whose record takes its time to build (as on a busy machine)
        def items(self):
            time.sleep(0.25)
            return super().items()

    @shadow.tool
    def work(i: int, value: object) -> dict:
        return {"i": i}

    shadow.flags.wait()
    for i in range(40):
        work(i, Slow(a=1))
    get_writer().close(timeout=0.3)  # what atexit does, with a deadline shorter than the queued builds
    """
)


def test_what_misses_the_exit_grace_is_counted_in_the_writer_stats_table(tmp_path: Path) -> None:
    db = tmp_path / "shadow.db"
    done = subprocess.run([sys.executable, "-c", SLOW_BUILDS], env=_env(tmp_path, db), capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "writer.close_timeout" in done.stderr and "counted=True" in done.stderr, done.stderr[-2000:]
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT submitted, written, spooled, dropped FROM writer_stats").fetchone()
    submitted, written, spooled, dropped = row
    assert submitted == 40 and dropped > 0  # the loss is in the table, not only in a log line
    assert written + spooled + dropped == 40


SPOOLING_SLOWLY = textwrap.dedent(
    """
    import json, sys, time
    import shadow
    from shadow.calllog import _writer_thread
    from shadow.calllog._spool import Spool
    from shadow.calllog._writer import set_writer
    from shadow.calllog._writer_thread import Writer

    _writer_thread.EXIT_GRACE = 1.0

    class Away:  # the store is down: everything goes to the spool, after its build
        def write(self, records):
            raise ConnectionError("down")

    class Slow(dict):  # each record takes a while to build (a loaded machine): the spooling outlasts one grace
        def items(self):
            time.sleep(0.03)
            return super().items()

    writer = Writer(Away(), queue_size=1000, batch_size=2, flush_interval=0.05,
                    spool=Spool(sys.argv[1], max_bytes=1 << 30, tag="slow"))
    set_writer(writer)

    @shadow.tool
    def work(i: int, value: object) -> dict:
        return {"i": i}

    for i in range(40):
        work(i, Slow(a=1))
    writer.close(timeout=0.3)
    print(json.dumps({"spooled": writer.stats.spooled, "dropped": writer.stats.dropped}))
    """
)


def test_exit_waits_while_the_writer_is_still_spooling_so_nothing_is_lost(tmp_path: Path) -> None:
    spool = tmp_path / "slow.spool"
    done = subprocess.run([sys.executable, "-c", SPOOLING_SLOWLY, str(spool)], env=_env(tmp_path, tmp_path / "x.db"),
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"spooled": 40, "dropped": 0}, done.stderr[-2000:]
    lines = sum(len(path.read_bytes().splitlines()) - 1 for path in tmp_path.glob("slow.*.spool"))
    assert lines == 40
