"""The oldest DuckDB ``pyproject.toml`` allows runs ``shadow demo`` (sync, report, dashboard) to its end.

DuckDB changes behaviour between releases (``date_trunc`` to a day gave a DATE before 2.0; settings the sync uses
appeared in 1.2), so the floor is tried, not assumed: the declared version is installed beside the test's own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from shadow.demo._run import DASHBOARD_FILE

ROOT = Path(__file__).resolve().parents[2]


def _duckdb_floor() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for group in project["optional-dependencies"].values():
        for requirement in group:
            found = re.fullmatch(r"duckdb>=([0-9.]+)", requirement.replace(" ", ""))
            if found:
                return found[1]
    raise AssertionError("no duckdb>=X requirement in pyproject.toml")


@pytest.mark.slow
def test_the_oldest_duckdb_the_package_allows_runs_the_demo_to_its_end(tmp_path: Path) -> None:
    floor = _duckdb_floor()
    target = tmp_path / "site"
    got = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                          f"duckdb=={floor}.*" if floor.count(".") < 2 else f"duckdb=={floor}"],
                         capture_output=True, text=True, timeout=240, check=False)
    if got.returncode:
        pytest.skip(f"cannot install duckdb {floor} from the package index: {got.stderr.strip()[-300:]}")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")},
           "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    version = subprocess.run([sys.executable, "-c", "import duckdb; print(duckdb.__version__)"], env=env,
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert version.startswith(floor), version
    done = subprocess.run([sys.executable, "-m", "shadow", "demo", "--dir", str(tmp_path / "demo"), "--sessions", "150",
                           "--seed", "11"], env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert (tmp_path / "demo" / DASHBOARD_FILE).stat().st_size > 0
