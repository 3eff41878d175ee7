"""The built wheel carries the migrations (and analytics), and ``shadow db upgrade`` works from an installed wheel."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)]
    if importlib.util.find_spec("hatchling") is not None:
        command.insert(4, "--no-build-isolation")  # the installed hatchling: no download
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    (found,) = out.glob("shadow_errors-*.whl")
    return found


def test_the_wheel_carries_the_alembic_environment_and_every_revision(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "shadow/_migrations/env.py" in names
    assert "shadow/_migrations/script.py.mako" in names
    revisions = sorted(p.name for p in (REPO / "migrations" / "versions").glob("*.py"))
    assert revisions
    assert {f"shadow/_migrations/versions/{name}" for name in revisions} <= names
    assert not any("__pycache__" in name for name in names)
    assert not any(name.startswith(("migrations/", "analytics/")) for name in names)  # no top-level packages


def test_the_wheel_carries_the_analytics_files(wheel: Path) -> None:
    source = REPO / "analytics"
    shipped = sorted(p.name for p in source.rglob("*") if p.is_file()) if source.is_dir() else []
    if not shipped:
        pytest.skip("analytics/ holds no files yet")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {Path(n).name for n in names if n.startswith("shadow/_analytics/")} >= set(shipped)


@pytest.mark.slow
def test_shadow_db_upgrade_works_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300,
                   capture_output=True)
    work = tmp_path / "elsewhere"  # not the checkout: nothing may come from the repository's migrations/
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") and k != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "import shadow.migrate as m; print(m.migrations_dir())"],
        cwd=work, env=env, check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv) and Path(where).name == "_migrations"
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
