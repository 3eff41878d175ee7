"""The docs' "Wrap a framework's tools" page: each framework's program runs as written, and the report sees its calls."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The page tests/docs/test_examples.py leaves to this test (which also reads the report of the calls).
PAGE = ROOT / "docs" / "how-to" / "frameworks.md"
SECTION = PAGE.read_text()
EXAMPLES = re.findall(r"```python\n(.*?)```", SECTION, flags=re.S)
FLAGS = re.compile(r'^# SHADOW_FLAGS="(?P<tool>\w+)=cutover" python app\.py$', re.M)


def test_there_is_one_example_per_framework() -> None:
    assert [FLAGS.search(code)["tool"] for code in EXAMPLES] == [  # type: ignore[index]
        "fm_lookup", "mcp_lookup", "lc_lookup", "ag_lookup", "pa_lookup"]


@pytest.mark.slow
def test_each_framework_example_serves_the_contract_and_lands_in_the_report(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SHADOW_WAREHOUSE": str(tmp_path / "w.duckdb")}
    tools = []
    for code in EXAMPLES:
        tool = FLAGS.search(code)["tool"]  # type: ignore[index]
        tools.append(tool)
        (tmp_path / "app.py").write_text(code)
        done = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env={**env, "SHADOW_FLAGS": f"{tool}=cutover"},
                              capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert '"code":"not_found"' in done.stdout.replace(" ", ""), (tool, done.stdout)
    report = subprocess.run([sys.executable, "-m", "shadow", "report", "loop-rate", "--format", "json"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert report.returncode == 0, report.stderr[-3000:]
    by_tool = {row["tool"]: row for row in json.loads(report.stdout)["by_tool"]}
    for tool in tools:
        assert by_tool[tool]["calls"] == 1 and by_tool[tool]["errors"] == 1, by_tool.get(tool)
