"""The oldest DuckDB ``pyproject.toml`` allows runs ``shadow demo`` to its end and passes the analytics tests.

DuckDB changes behaviour between releases (``date_trunc`` to a day gave a DATE before 2.0, a memory limit too large
was taken as 0 bytes, a setting the sync uses is missing up to 1.3, ``write_parquet`` learnt ``partition_by`` in
1.2), so the floor is tried, not assumed: the declared version is installed beside the test's own, first on the path.
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
pytestmark = pytest.mark.slow


def _duckdb_floor() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for group in project["optional-dependencies"].values():
        for requirement in group:
            found = re.fullmatch(r"duckdb>=([0-9.]+)", requirement.replace(" ", ""))
            if found:
                return found[1]
    raise AssertionError("no duckdb>=X requirement in pyproject.toml")


@pytest.fixture(scope="module")
def oldest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose ``import duckdb`` gives the oldest release the package allows."""
    floor = _duckdb_floor()
    target = tmp_path_factory.mktemp("duckdb-floor")
    spec = f"duckdb=={floor}.*" if floor.count(".") < 2 else f"duckdb=={floor}"
    got = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                          spec], capture_output=True, text=True, timeout=240, check=False)
    if got.returncode:
        pytest.skip(f"cannot install {spec} from the package index: {got.stderr.strip()[-300:]}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    version = subprocess.run([sys.executable, "-c", "import duckdb; print(duckdb.__version__)"], env=env,
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert version.startswith(floor), version
    return env


def test_the_oldest_duckdb_the_package_allows_runs_the_demo_to_its_end(oldest: dict[str, str],
                                                                       tmp_path: Path) -> None:
    env = {k: v for k, v in oldest.items() if not k.startswith("SHADOW_")}
    done = subprocess.run([sys.executable, "-m", "shadow", "demo", "--dir", str(tmp_path), "--sessions", "150",
                           "--seed", "11"], env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert (tmp_path / DASHBOARD_FILE).stat().st_size > 0


def test_the_oldest_duckdb_the_package_allows_passes_the_analytics_and_dashboard_tests(
        oldest: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/analytics",
                           "tests/dashboard", "tests/cli/test_json_results.py", "-m", "not slow and not spark"],
                          cwd=ROOT, env=oldest, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:]
