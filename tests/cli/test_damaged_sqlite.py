"""Every command on a damaged SQLite file (not a database, truncated, a good header over garbage) is a one-line
error, exit 3; never a traceback."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _damaged(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.db"
    if kind == "random":
        path.write_bytes(os.urandom(5000))
        return path
    good = tmp_path / "good.db"
    conn = sqlite3.connect(good)
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(20_000)])
    conn.commit()
    conn.close()
    data = good.read_bytes()
    path.write_bytes(data[: len(data) // 3] if kind == "truncated" else data[:100] + b"\xff" * 4000)
    return path


@pytest.mark.parametrize("kind", ["random", "truncated", "header-then-garbage"])
@pytest.mark.parametrize("command", [["db", "current"], ["db", "upgrade"]])
def test_db_commands_on_a_damaged_sqlite_file_are_one_line(tmp_path: Path, kind: str, command: list[str]) -> None:
    path = _damaged(tmp_path, kind)
    done = subprocess.run([sys.executable, "-m", "shadow", *command, "--db-url", f"sqlite:///{path}"],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 3, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"shadow: the call log at sqlite:///{path} could not be used (DatabaseError: ")


def test_a_driver_error_no_command_expected_is_still_one_line(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from shadow.cli import _app

    def damaged() -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(sys, "argv", ["shadow", "doctor", "--offline"])
    monkeypatch.setattr("shadow.cli._doctor._key_check", damaged)
    with pytest.raises(SystemExit) as stop:
        _app.main()
    assert stop.value.code == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["shadow: the database could not be used (DatabaseError: database disk image is malformed); "
                   "check --db-url or SHADOW_DB_URL and that a SQLite file is an intact database"]
