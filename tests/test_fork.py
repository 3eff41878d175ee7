"""Fork safety: a lock held by another thread at ``fork`` never hangs the child; forked workers under busy threads
all log their calls."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (module that owns the lock, attribute, setup in the parent, the child's public operation that needs the lock)
LOCKS = {
    "sessions": ("shadow._sessions", "_counters_lock", "lookup('warm')",
                 "with shadow.session('child-new'): lookup('x')"),
    "ids": ("shadow._ids", "_lock", "lookup('warm')", "shadow.mark('end')"),
    "engines": ("shadow.calllog._db", "_lock", "lookup('warm'); shadow.flush(5)",
                "lookup('x'); assert shadow.flush(5)"),
    "config": ("shadow._config", "_lock", "lookup('warm')", "shadow.configure(flush_interval=0.25)"),
    "flags": ("shadow.flags._db", "_lock", "", "lookup('x')"),
    "migrations": ("shadow.calllog._migrate", "_lock", "", "lookup('x'); assert shadow.flush(5)"),
    "fingerprint key": ("shadow._fingerprint", "_lock", "", "lookup('x'); assert shadow.flush(5)"),
}

_HELD = textwrap.dedent('''
    import importlib, os, threading
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        return {{"item": item}}

    {setup}
    lock = getattr(importlib.import_module({module!r}), {attribute!r})
    held, release = threading.Event(), threading.Event()

    def holder():
        with lock:
            held.set()
            release.wait()

    threading.Thread(target=holder, daemon=True).start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        threading.Timer(8, lambda: os._exit(9)).start()  # hung: exit 9 instead of hanging the test
        {operation}
        os._exit(0)
    release.set()
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
''')


def _env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    return {**base, "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}",
            "SHADOW_FLAGS": "*=shadow", "SHADOW_SPOOL": str(tmp_path / "spool"), "SHADOW_LOG_LEVEL": "ERROR"}


@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_held_at_fork_does_not_hang_the_child(tmp_path: Path, name: str) -> None:
    module, attribute, setup, operation = LOCKS[name]
    code = _HELD.format(module=module, attribute=attribute, setup=setup, operation=operation)
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip() == "child 0", done.stdout + done.stderr[-2000:]


_WORKERS = textwrap.dedent('''
    import multiprocessing, os, sys, threading, time
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        return {"item": item}

    stop = threading.Event()

    def busy(n):
        i = 0
        while not stop.is_set():
            with shadow.session(f"busy-{n}-{i}"):
                lookup(i)
                if i % 3 == 0:
                    shadow.mark("end")
            i += 1

    threads = [threading.Thread(target=busy, args=(n,), daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.3)

    def work(k):
        with shadow.session(f"child-{k}"):
            lookup(k)
            shadow.mark("end")
        return shadow.flush(10)

    with multiprocessing.get_context("fork").Pool(6, maxtasksperchild=1) as pool:
        results = pool.map_async(work, range(40), chunksize=1).get(timeout=150)
    stop.set()
    print(sum(results))
''')


@pytest.mark.xfail(strict=False, reason="open (issue 13): after the merge with issue 12's writer, forked pool workers "
                   "under busy threads flush True yet only some of their records reach SQLite (seen: 5 of 40); "
                   "no child hangs")
@pytest.mark.timeout(240)
def test_forked_workers_under_busy_threads_never_hang_and_log_every_call(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _WORKERS], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "40"
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        logged = con.execute("SELECT count(DISTINCT session_id) FROM calls WHERE session_id LIKE 'child-%'").fetchone()
        marks = con.execute("SELECT count(*) FROM marks WHERE session_id LIKE 'child-%'").fetchone()
    assert logged[0] == 40 and marks[0] == 40
