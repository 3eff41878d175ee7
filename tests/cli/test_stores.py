"""Where commands look for the call log and the warehouse, and that reading creates neither."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shadow.cli import ExitCode, app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

_LOG_CALLS = textwrap.dedent("""
    import sys, shadow

    @shadow.tool
    def lookup(key: str) -> dict:
        if key.startswith("missing"):
            return {"error": "not found: " + key}
        return {"value": key}

    shadow.flags.wait()
    for i in range(int(sys.argv[1])):
        lookup("missing-%d" % i if i % 3 == 0 else "k%d" % i)
    shadow.flush()
""")


def _shadow(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m shadow ARGS`` in a fresh process, in ``cwd``, with only the given SHADOW_* variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "shadow", *args], cwd=cwd, env={**clean, **(env or {})},
                          capture_output=True, text=True, timeout=300, check=False)


def _log_calls(url: str, cwd: Path, n: int = 30) -> None:
    """Real calls of the tool ``lookup`` through the adapter in shadow mode, into the call log at ``url``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    env.update(SHADOW_DB_URL=url, SHADOW_FLAGS="lookup=shadow", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _LOG_CALLS, str(n)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("argv", [
    ["report", "loop-rate"], ["report", "loop-rate", "--no-sync"], ["flags", "show"], ["flags", "history"],
    ["ready", "lookup"], ["describe", "--tool", "lookup"], ["dashboard"], ["dashboard", "--no-sync"],
    ["export", "parquet", "out"], ["db", "current"],
])
def test_read_only_commands_create_no_store_and_say_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, argv)
    assert sorted(p.name for p in tmp_path.iterdir()) == [], argv
    if argv == ["db", "current"]:
        assert done.exit_code == 0 and "no schema yet" in done.stdout and "shadow db upgrade" in done.stdout
        return
    assert done.exit_code == ExitCode.USAGE, (argv, done.output)
    if "--no-sync" in argv:
        assert "no warehouse at" in done.stderr and "shadow sync" in done.stderr
    else:
        assert f"there is no call log at {tmp_path / 'shadow.db'} yet" in done.stderr
        assert "SHADOW_FLAGS" in done.stderr and "--db-url" in done.stderr


def test_a_process_that_only_reads_flags_creates_no_database(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import os, shadow

        @shadow.tool
        def lookup(key: str) -> dict:
            return {"value": key}

        assert shadow.flags.wait(10)
        assert lookup("k") == {"value": "k"}
        assert shadow.flags.current().state("lookup").mode.value == "legacy"
        print(sorted(os.listdir(".")))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_flag_set_later_is_picked_up_by_a_process_that_started_without_a_database(tmp_path: Path) -> None:
    from shadow.flags import DbFlags, Mode

    url = f"sqlite:///{tmp_path}/later.db"
    reader = DbFlags(url, ttl=0.0)
    assert reader.wait(10) and reader.state("lookup").mode is Mode.LEGACY
    assert not (tmp_path / "later.db").exists()
    assert reader.states() == ({}, False) and reader.history() == []
    assert not (tmp_path / "later.db").exists()
    DbFlags(url).set("lookup", "shadow")
    reader.invalidate()
    assert reader.state("lookup").mode is Mode.SHADOW
    assert [e.new_mode for e in reader.history()] == ["shadow"]


@pytest.mark.slow
def test_db_url_moves_the_default_warehouse_beside_it_as_shadow_db_url_does(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    logs = tmp_path / "logs"
    logs.mkdir()
    _log_calls(f"sqlite:///{logs}/x.db", tmp_path)
    by_option = _shadow("sync", "--db-url", f"sqlite:///{logs}/x.db", "-f", "json", cwd=tmp_path)
    assert by_option.returncode == 0, by_option.stderr
    assert json.loads(by_option.stdout)["warehouse"] == str(logs / "x.duckdb")
    by_env = _shadow("sync", "-f", "json", cwd=tmp_path, env={"SHADOW_DB_URL": f"sqlite:///{logs}/x.db"})
    assert by_env.returncode == 0, by_env.stderr
    assert json.loads(by_env.stdout)["warehouse"] == str(logs / "x.duckdb")
    assert not (tmp_path / "shadow.duckdb").exists() and not (tmp_path / "shadow.db").exists()
    report = _shadow("report", "loop-rate", "--no-sync", "--db-url", f"sqlite:///{logs}/x.db", "-f", "json",
                     cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["data_range"]["calls"] == 30


@pytest.mark.slow
def test_a_relative_and_an_absolute_url_of_one_sqlite_file_are_the_same_source(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    _log_calls("sqlite:///calls.db", tmp_path)
    first = _shadow("sync", "--db-url", "sqlite:///calls.db", "-f", "json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = _shadow("sync", "--db-url", f"sqlite:///{tmp_path}/calls.db", "-f", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr  # 0.1: "built from sqlite:///calls.db, not ...; --rebuild"
    assert json.loads(first.stdout)["source"] == json.loads(again.stdout)["source"]
    assert json.loads(again.stdout)["calls_added"] == 0


def test_flags_set_on_a_tool_the_log_never_saw_warns_and_still_sets_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/x.db"
    _log_calls(url, tmp_path, n=6)
    typo = runner.invoke(app, ["flags", "set", "lokup", "shadow", "--db-url", url])
    assert typo.exit_code == 0, typo.output
    assert "no calls of 'lokup'" in typo.stderr and "tools in the log: lookup" in typo.stderr
    assert "lokup: (unset) -> shadow" in typo.stdout
    known = runner.invoke(app, ["flags", "set", "lookup", "legacy", "--db-url", url])
    assert known.exit_code == 0 and "warning" not in known.stderr
    shown = json.loads(runner.invoke(app, ["flags", "show", "-f", "json", "--db-url", url]).stdout)
    assert shown["tools"]["lokup"]["mode"] == "shadow"


def test_flags_set_before_any_traffic_says_nothing_of_a_typo(tmp_path: Path) -> None:
    """Every documented flow sets the flag before the first call: the warning was printed every time."""
    first = runner.invoke(app, ["flags", "set", "create_task", "shadow", "--db-url", f"sqlite:///{tmp_path}/x.db"])
    assert first.exit_code == 0, first.output
    assert "warning" not in first.stderr and "create_task: (unset) -> shadow" in first.stdout


def test_describe_tool_says_when_the_log_does_not_know_the_tool(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/x.db"
    _log_calls(url, tmp_path, n=6)
    unknown = runner.invoke(app, ["describe", "--tool", "lokup", "--db-url", url])
    assert unknown.exit_code == 0
    assert "no calls of 'lokup'" in unknown.stderr and "tools in the log: lookup" in unknown.stderr
    assert "internal_error" in unknown.stdout
    known = runner.invoke(app, ["describe", "--tool", "lookup", "--db-url", url])
    assert known.exit_code == 0 and "warning" not in known.stderr


def test_import_takes_input_format_and_the_old_format_spelling(tmp_path: Path) -> None:
    chat = str(ROOT / "tests" / "fixtures" / "transcripts" / "openai_chat.json")
    url = f"sqlite:///{tmp_path}/x.db"
    new = runner.invoke(app, ["import", chat, "--input-format", "openai", "-f", "json", "--dry-run",
                              "--db-url", url])
    assert new.exit_code == 0, new.output
    old = runner.invoke(app, ["import", chat, "--format", "openai", "--output", "json", "--dry-run", "--db", url])
    assert old.exit_code == 0, old.output
    assert json.loads(old.stdout) == json.loads(new.stdout)
    assert "--input-format openai" in old.stderr
    missing = runner.invoke(app, ["import", chat, "--db-url", url])
    assert missing.exit_code == ExitCode.USAGE and "--input-format openai, anthropic or otel" in missing.stderr


def test_sync_of_a_database_without_call_log_tables_exits_2_and_an_unreachable_server_says_why(
        tmp_path: Path) -> None:
    import sqlite3

    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE t (a)").connection.commit()
    no_log = _shadow("sync", "--db-url", f"sqlite:///{tmp_path}/other.db", cwd=tmp_path)
    assert no_log.returncode == ExitCode.USAGE, no_log.stderr
    assert "has no call log" in no_log.stderr and "shadow db upgrade" in no_log.stderr
    down = _shadow("sync", "--db-url", "postgresql+psycopg://postgres@127.0.0.1:1/shadow", cwd=tmp_path)
    assert down.returncode == ExitCode.UNAVAILABLE, down.stderr
    assert "refused" in down.stderr.lower() or "failed" in down.stderr.lower()  # the driver's reason, not a class
    assert "Traceback" not in down.stderr


def test_sync_memory_limit_caps_duckdb_and_a_bad_one_exits_2_creating_nothing(tmp_path: Path) -> None:
    env = {"SHADOW_DB_URL": f"sqlite:///{tmp_path}/shadow.db", "SHADOW_FLAGS": "*=shadow"}
    subprocess.run([sys.executable, "-c", _LOG_CALLS, "12"], cwd=tmp_path, check=True, timeout=120,
                   env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
    for bad in ("lots", "64MB", "512", ""):
        done = _shadow("sync", "--memory-limit", bad, cwd=tmp_path, env=env)
        assert done.returncode == ExitCode.USAGE, done.stderr
        assert f"the memory limit '{bad}' is not a size of at least 128MB" in done.stderr and "512MB" in done.stderr
        assert not (tmp_path / "shadow.duckdb").exists()
    for command in (["report", "loop-rate"], ["export", "parquet", str(tmp_path / "lake")],
                    ["dashboard", "--out", str(tmp_path / "d.html")]):  # they sync first, with the same option
        done = _shadow(*command, "--memory-limit", "64MB", cwd=tmp_path, env=env)
        assert done.returncode == ExitCode.USAGE, done.stderr
        assert "the memory limit '64MB' is not a size of at least 128MB" in done.stderr
        assert not (tmp_path / "shadow.duckdb").exists()
    done = _shadow("sync", "--memory-limit", "256MB", "--format", "json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["calls_added"] == 12
    report = _shadow("report", "loop-rate", "--memory-limit", "2GiB", "--format", "json", cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr
    # a report that does not sync runs its queries under the limit too, so a bad one is refused there as well
    done = _shadow("report", "loop-rate", "--no-sync", "--memory-limit", "64MB", cwd=tmp_path, env=env)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "the memory limit '64MB' is not a size of at least 128MB" in done.stderr


def test_a_first_sync_that_fails_leaves_no_empty_warehouse_but_an_old_one_stays(tmp_path: Path) -> None:
    down = "postgresql+psycopg://postgres@127.0.0.1:1/shadow"
    failed = _shadow("sync", "--db-url", down, "--warehouse", str(tmp_path / "w.duckdb"), cwd=tmp_path)
    assert failed.returncode == ExitCode.UNAVAILABLE, failed.stderr
    assert list(tmp_path.iterdir()) == []
    env = {"SHADOW_DB_URL": f"sqlite:///{tmp_path}/shadow.db", "SHADOW_FLAGS": "*=shadow"}
    subprocess.run([sys.executable, "-c", _LOG_CALLS, "6"], cwd=tmp_path, check=True, timeout=120,
                   env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
    assert _shadow("sync", "--warehouse", str(tmp_path / "w.duckdb"), cwd=tmp_path, env=env).returncode == 0
    again = _shadow("sync", "--db-url", down, "--warehouse", str(tmp_path / "w.duckdb"), cwd=tmp_path)
    assert again.returncode == ExitCode.UNAVAILABLE, again.stderr
    assert (tmp_path / "w.duckdb").stat().st_size > 0
    report = _shadow("report", "loop-rate", "--no-sync", "--warehouse", str(tmp_path / "w.duckdb"),
                     "--format", "json", cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr


def test_a_sqlite_file_given_as_the_warehouse_is_refused_untouched(tmp_path: Path) -> None:
    env = {"SHADOW_DB_URL": f"sqlite:///{tmp_path}/shadow.db", "SHADOW_FLAGS": "*=shadow"}
    subprocess.run([sys.executable, "-c", _LOG_CALLS, "6"], cwd=tmp_path, check=True, timeout=120,
                   env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
    before = (tmp_path / "shadow.db").read_bytes()
    done = _shadow("sync", "--warehouse", str(tmp_path / "shadow.db"), cwd=tmp_path, env=env)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "is a SQLite database (a call log?), not a DuckDB warehouse" in done.stderr
    assert "download" not in done.stderr  # DuckDB's SQLite extension is not fetched to open it
    assert (tmp_path / "shadow.db").read_bytes() == before


def test_a_call_log_with_damaged_index_pages_is_read_in_full_and_an_index_lookup_is_a_clear_source_error(
        tmp_path: Path) -> None:
    import sqlite3

    env = {"SHADOW_DB_URL": f"sqlite:///{tmp_path}/shadow.db", "SHADOW_FLAGS": "*=shadow"}
    subprocess.run([sys.executable, "-c", _LOG_CALLS, "30"], cwd=tmp_path, check=True, timeout=120,
                   env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
    log = sqlite3.connect(tmp_path / "shadow.db")
    pages = [r[0] for r in log.execute("SELECT rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = "
                                       "'calls'")]
    size = log.execute("PRAGMA page_size").fetchone()[0]
    log.close()
    with (tmp_path / "shadow.db").open("r+b") as f:  # the table's own pages stay sound
        for page in pages:
            f.seek(size * (page - 1))
            f.write(b"\xff" * size)
    full = _shadow("sync", cwd=tmp_path, env=env)  # reads the table's pages, not its indexes: every call
    assert full.returncode == 0, full.stderr
    assert "30 new calls" in full.stdout
    warehouse = (tmp_path / "shadow.duckdb").read_bytes()
    again = _shadow("sync", cwd=tmp_path, env=env)  # counts the new rows through the index on inserted_at
    assert again.returncode == ExitCode.UNAVAILABLE, again.stdout + again.stderr
    assert "database disk image is malformed" in again.stderr and "Traceback" not in again.stderr
    assert (tmp_path / "shadow.duckdb").read_bytes() == warehouse


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.05, 0.6, 1.5])
def test_ctrl_c_during_a_sync_exits_130_and_leaves_the_warehouse_as_it_was(tmp_path: Path, delay: float) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
    from bench_sync import make_sqlite

    url = make_sqlite(tmp_path / "big.db", 150_000)  # a sync of a few seconds: the read, the insert, the derive
    warehouse = tmp_path / "w.duckdb"
    first = _shadow("sync", "--db-url", url, "--warehouse", str(warehouse), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = _shadow("report", "loop-rate", "--no-sync", "--warehouse", str(warehouse), "--format", "json",
                     cwd=tmp_path)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    proc = subprocess.Popen([sys.executable, "-m", "shadow", "sync", "--rebuild", "--db-url", url, "--warehouse",
                             str(warehouse)], cwd=tmp_path, env={**clean, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    started = proc.stderr.readline()  # the progress line's first report: the sync has begun
    assert "Syncing the call log" in started, started
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    drop = re.compile(r'"generated_at": "[^"]*"')
    # The sync finished (its summary printed) before the signal, which then hit the exiting process (status 130,
    # or -2 once Python's exit has restored the default handler): the warehouse holds the new, complete sync.
    if proc.returncode == 0 or ("new calls" in out and "Traceback" not in err):
        after = _shadow("report", "loop-rate", "--no-sync", "--warehouse", str(warehouse), "--format", "json",
                        cwd=tmp_path)
        resynced = re.compile(r'"(generated_at|synced_at)": "[^"]*"')  # the same log, synced again: all else equal
        assert resynced.sub("", after.stdout) == resynced.sub("", before.stdout)
        pytest.skip(f"the sync ended within {delay} s")
    assert proc.returncode == ExitCode.INTERRUPTED, (out, err)
    assert "sync interrupted" in err and "Traceback" not in err
    after = _shadow("report", "loop-rate", "--no-sync", "--warehouse", str(warehouse), "--format", "json",
                    cwd=tmp_path)
    if drop.sub("", after.stdout) != drop.sub("", before.stdout):
        # On a loaded machine the signal can land after the sync's commit but before its summary: the warehouse is
        # then the new, complete sync of the same log (only `synced_at` differs), never a half-written one.
        resynced = re.compile(r'"(generated_at|synced_at)": "[^"]*"')
        assert resynced.sub("", after.stdout) == resynced.sub("", before.stdout)


def test_a_call_log_file_that_is_not_a_sqlite_database_gets_advice_about_the_file(tmp_path: Path) -> None:
    (tmp_path / "shadow.db").write_bytes(b"not a database at all" * 300)
    done = _shadow("sync", "--db-url", f"sqlite:///{tmp_path}/shadow.db", cwd=tmp_path)
    assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
    assert "is not a database" in done.stderr and "an intact SQLite database" in done.stderr
    assert "running" not in done.stderr


def test_sync_from_a_server_that_accepts_but_never_answers_exits_unavailable_in_seconds(tmp_path: Path) -> None:
    # A stalled host (a half-dead proxy, a frozen VM): the sync's plan and its reader, opened side by side, both
    # give up after libpq's connect_timeout instead of waiting on the socket for ever.
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(listener.accept()[0])  # and never a byte back

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        port = listener.getsockname()[1]
        done = _shadow("sync", "--db-url", f"postgresql+psycopg://postgres@127.0.0.1:{port}/shadow", cwd=tmp_path)
        assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
        assert "timeout" in done.stderr.lower() and "Traceback" not in done.stderr
        assert time.monotonic() - started < 30
        assert len(held) >= 2  # the plan's connection and the reader's
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
