"""``shadow inventory`` reads a bounded amount: a file over the size bound and a device or FIFO named ``*.py`` are
skipped with the reason, the rest read; never a traceback, never a file read whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shadow.inventory._index import MAX_SOURCE_BYTES, python_files
from shadow.inventory._run import inventory

ROOT = Path(__file__).resolve().parents[2]
TOOL = 'import shadow\n\n\n@shadow.tool\ndef lookup(key: str) -> dict:\n    return {"error": "Bad request"}\n'


def test_a_file_over_the_bound_is_skipped_with_its_size_and_the_rest_read(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOL, encoding="utf-8")
    big = tmp_path / "generated.py"
    big.write_text("# " + "x" * (MAX_SOURCE_BYTES + 10) + "\n", encoding="utf-8")
    found = inventory(python_files([tmp_path]))
    assert [(s.file, s.error.split(",")[0]) for s in found.skipped] == [
        (str(big), f"{big.stat().st_size} bytes")]
    assert [t.name for t in found.tools] == ["lookup"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_named_py_is_skipped_on_the_command_line_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOL, encoding="utf-8")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    done = subprocess.run([sys.executable, "-m", "shadow", "inventory", "."], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "skipped zero.py: not a regular file" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
