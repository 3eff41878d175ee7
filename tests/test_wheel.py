"""The built wheel carries its package data, ``shadow db upgrade`` works from it, and a core install stays light."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)]
    if importlib.util.find_spec("hatchling") is not None:
        command.insert(4, "--no-build-isolation")  # the installed hatchling: no download
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    (found,) = out.glob("shadow_errors-*.whl")
    return found


MIGRATIONS = "shadow/calllog/migrations"


def _venv_seeing_these_packages(venv: Path) -> Path:
    """A venv that also sees this interpreter's packages, whether this interpreter is a venv's or the system's.

    (``venv --system-site-packages`` from inside a venv sees the base interpreter's packages, not the venv's.)
    """
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    (Path(purelib) / "_outer.pth").write_text("\n".join(p for p in sys.path if p.endswith("-packages")) + "\n")
    return python


def test_the_wheel_carries_the_alembic_environment_and_every_revision(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert f"{MIGRATIONS}/env.py" in names
    assert f"{MIGRATIONS}/script.py.mako" in names
    revisions = sorted(p.name for p in (REPO / MIGRATIONS / "versions").glob("*.py"))
    assert revisions
    assert {f"{MIGRATIONS}/versions/{name}" for name in revisions} <= names
    assert not any("__pycache__" in name for name in names)
    assert not any(name.startswith(("migrations/", "analytics/")) for name in names)  # no top-level packages


def test_the_wheel_carries_every_sql_model_and_the_schema(wheel: Path) -> None:
    shipped = sorted(p.name for p in (REPO / "shadow" / "analytics" / "models").glob("*.sql"))
    assert shipped
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"shadow/analytics/models/{n}" for n in shipped} <= names
    assert "shadow/contract/tool-result.schema.json" in names
    assert "shadow/eval/scenarios.json" in names


@pytest.mark.slow
def test_shadow_db_upgrade_works_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = _venv_seeing_these_packages(venv)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300,
                   capture_output=True)
    work = tmp_path / "elsewhere"  # not the checkout: nothing may come from the repository's migrations/
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") and k != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "from shadow.calllog import _migrate as m; print(m.migrations_dir())"],
        cwd=work, env=env, check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv) and Path(where).name == "migrations"
    shadow_cli = venv / "bin" / "shadow"
    url = f"sqlite:///{work}/installed.db"
    upgraded = subprocess.run([str(shadow_cli), "db", "upgrade", "--url", url, "--format", "json"],
                              check=False, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert upgraded.returncode == 0, upgraded.stderr
    shown = subprocess.run([str(shadow_cli), "db", "current", "--url", url, "--format", "json"],
                           check=False, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["up_to_date"] is True and report["current"] == json.loads(upgraded.stdout)["to"]


CORE_SCRIPT = """
import sys
import shadow

@shadow.tool(name="create_task")
def create_task(title: str) -> dict:
    if not title:
        raise ValueError("title is empty")
    return {"id": 1, "title": title}

for i in range(20):
    try:
        create_task("" if i % 4 == 0 else f"task {i}")
    except ValueError:
        pass
shadow.flush()
heavy = sorted(m for m in ("duckdb", "numpy", "plotly", "psycopg") if m in sys.modules)
print("HEAVY", heavy)
"""


@pytest.mark.slow
def test_a_core_install_runs_a_shadowed_tool_without_the_analytics_stack(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "core"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)],
                               check=False, capture_output=True, text=True, timeout=600)
    if installed.returncode != 0 and "No matching distribution" in installed.stderr:
        pytest.skip(f"no package registry reachable: {installed.stderr[-300:]}")
    assert installed.returncode == 0, installed.stderr
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"],
                            check=True, capture_output=True, text=True, timeout=120).stdout
    names = {row["name"].lower() for row in json.loads(listed)}
    assert not names & {"duckdb", "numpy", "plotly", "psycopg", "psycopg-binary"}
    work = tmp_path / "work"
    work.mkdir()
    db = work / "calls.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") and k != "PYTHONPATH"}
    env |= {"SHADOW_FLAGS": "create_task=shadow", "SHADOW_DB_URL": f"sqlite:///{db}"}
    (work / "script.py").write_text(CORE_SCRIPT)
    run = subprocess.run([str(python), "script.py"], cwd=work, env=env, check=False, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "HEAVY []" in run.stdout
    import sqlite3

    with sqlite3.connect(db) as con:
        (stored,) = con.execute("SELECT count(*) FROM calls WHERE tool = 'create_task'").fetchone()
    assert stored == 20
    missing = subprocess.run([str(venv / "bin" / "shadow"), "report", "loop-rate", "--db-url", f"sqlite:///{db}"],
                             cwd=work, env=env, check=False, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2
    assert "pip install 'shadow-errors[analytics]'" in missing.stderr
    assert "Traceback" not in missing.stderr
