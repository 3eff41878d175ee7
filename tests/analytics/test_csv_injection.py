"""``report --format csv`` never writes a cell a spreadsheet would run as a formula (tool names come from models)."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = ['=HYPERLINK("http://evil.example/x","click")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)"]

_CALLS = textwrap.dedent('''
    import shadow
    for name in {names!r}:
        tool = shadow.tool(lambda q: {{"error": "Service unavailable"}}, name=name)
        with shadow.session():
            tool(q="x")
            tool(q="x")
    assert shadow.flush(10)
''')


def test_formula_cells_are_escaped_and_keep_their_text(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"},
           "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}", "SHADOW_FLAGS": "*=shadow"}
    done = subprocess.run([sys.executable, "-c", _CALLS.format(names=NAMES)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = subprocess.run([sys.executable, "-m", "shadow", "report", "loop-rate", "--format", "csv", "--by", "tool"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert report.returncode == 0, report.stderr
    cells = [cell for row in csv.reader(io.StringIO(report.stdout)) for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c.startswith("-") and not _number(c))]
    for name in NAMES:
        assert "'" + name in cells


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
