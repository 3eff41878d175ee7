"""``shadow.configure(store=...)``: the records of the calls that follow go to that store, ``None`` goes back."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

import shadow
from shadow import _config as config
from shadow.calllog._writer import set_writer
from shadow.testing import InMemoryFlags, InMemoryStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_writer() -> Iterator[None]:
    yield
    set_writer(None)


def _tool() -> typing.Callable[[str], dict[str, str]]:
    @shadow.tool(name="lookup", flags=InMemoryFlags({"lookup": "shadow"}))
    def lookup(key: str) -> dict[str, str]:
        if key == "missing":
            raise KeyError(key)
        return {"key": key}

    return lookup


def test_configure_store_sends_the_records_there_until_another_store_or_none(tmp_path: Path, sqlite_url: str,
                                                                             no_writer: None) -> None:
    first, second = InMemoryStore(), InMemoryStore()
    shadow.configure(store=first, spool_path=str(tmp_path / "spool"), db_url=sqlite_url)
    lookup = _tool()
    lookup("a")
    with pytest.raises(KeyError):
        lookup("missing")
    assert shadow.flush(10)
    assert sorted((r.tool, r.outcome) for r in first.records.values()) == [("lookup", "error"), ("lookup", "ok")]

    shadow.configure(store=second)
    lookup("b")
    assert shadow.flush(10)
    assert len(second.records) == 1
    assert len(first.records) == 2  # nothing more went to the first store

    shadow.configure(store=None)  # back to db_url's database
    lookup("c")
    assert shadow.flush(10)
    assert len(second.records) == 1
    db = Path(sqlite_url.removeprefix("sqlite:///"))
    assert sqlite3.connect(db).execute("SELECT count(*) FROM calls").fetchone()[0] == 1


def test_configure_refuses_a_store_without_write_and_names_every_setting_in_its_signature() -> None:
    with pytest.raises(TypeError, match="store must be a shadow.typing.Store"):
        shadow.configure(store="sqlite:///x.db")  # type: ignore[typeddict-item]
    assert config.settings().store is None
    assert list(config.Changes.__annotations__) == [f.name for f in dataclasses.fields(config.Settings)]


def test_a_fresh_process_configuring_its_own_store_keeps_every_record_out_of_the_database(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import json, shadow
        from shadow.testing import InMemoryFlags, InMemoryStore

        class Collected(InMemoryStore):
            display_url = "memory://collected"

        store = Collected()
        shadow.configure(store=store)

        @shadow.tool(name="lookup", flags=InMemoryFlags({"lookup": "shadow"}))
        def lookup(key: str) -> str:
            return key.upper()

        results = [lookup(k) for k in ("a", "b", "c")]
        shadow.flush(10)
        print(json.dumps({"results": results, "stored": sorted(r.seq for r in store.records.values())}))
    """)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}, "PYTHONPATH": str(ROOT),
           "SHADOW_FINGERPRINT_KEY": "test-key"}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"results": ["A", "B", "C"], "stored": [1, 2, 3]}
    assert not (tmp_path / "shadow.db").exists()


def test_the_demo_writes_its_simulated_calls_to_its_own_database_not_a_configured_store(tmp_path: Path,
                                                                                       no_writer: None) -> None:
    from shadow.demo._run import run_demo

    mine = InMemoryStore()
    shadow.configure(store=mine)
    result = run_demo(tmp_path / "demo", sessions=5, seed=1, dashboard=False)
    assert result.report.data_range.calls > 0
    assert mine.records == {}
    assert config.settings().store is mine  # restored afterwards
