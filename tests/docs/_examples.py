"""The code examples of the README and the docs: found, then run in order, one temporary directory per page."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What a reader runs: every ``python`` and ``sh`` block of these files.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN = {"python", "sh", "bash"}
#: Pages whose examples another test runs (and checks more closely), with that test.
RUN_ELSEWHERE = {ROOT / "docs" / "how-to" / "frameworks.md": "tests/integrations/test_readme_examples.py"}
#: ``<!-- example: file=NAME exit=N serve=URL -->`` on the line before a block: write it to NAME instead of running
#: it; expect exit status N; or start it, wait for URL to answer 200 and stop it (a server runs until Ctrl-C).
_DIRECTIVE = re.compile(r"<!-- example: (.*?) -->\s*$")
#: ``<!-- examples: postgres -->`` anywhere on a page: the page's SHADOW_DB_URL is a throw-away PostgreSQL database.
PAGE_NEEDS = re.compile(r"<!-- examples: ([\w ]+) -->")
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
#: A Python block that says how it is run on its first line: ``# SHADOW_FLAGS="x=cutover" python app.py``.
_RUN_LINE = re.compile(r"^# (?P<env>(?:\w+=\S+ )*)python3? (?P<file>[\w/.-]+\.py)$")
#: An installation from the checkout (a whole line, or the step before ``&&``): its extras are checked against
#: pyproject.toml, and it is not run (installing is the test run's own first step).
_INSTALL = re.compile(r"^python3 -m pip install -e '\.\[(?P<extras>[\w,-]+)\]'(?: && |\n|$)", re.M)
CI_COMMAND = "python3 -m pip install -e '.[test]' && python3 -m pytest -m '' -n 2 --dist loadfile"


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text and its directive."""

    page: Path
    line: int
    lang: str
    code: str
    options: dict[str, str]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The runnable blocks of a page, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        lang = match.group(1)
        if lang not in RUN:
            continue
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        options = dict(opt.split("=", 1) for opt in directive.group(1).split()) if directive else {}
        found.append(Block(page, line, lang, match.group(2), options))
    return found


def needs(page: Path) -> set[str]:
    """What a page's examples need beyond the machine (``postgres``, ``spark``)."""
    return {word for m in PAGE_NEEDS.finditer(page.read_text(encoding="utf-8")) for word in m.group(1).split()}


def extras() -> set[str]:
    """The extras pyproject.toml defines."""
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def environment(home: Path, overrides: dict[str, str]) -> dict[str, str]:
    """A reader's shell: this checkout first on the path, no SHADOW_* settings of the test run, a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_TEST_POSTGRES_URL"}
    env |= {"PYTHONPATH": str(ROOT), "HOME": str(home), "SHADOW_FINGERPRINT_KEY": "docs-examples-key",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "100"}
    return env | overrides


def run(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str] | None:
    """Run one block in ``cwd`` (or write it to its file); None when the block only writes a file."""
    if "file" in block.options:
        target = cwd / block.options["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.code, encoding="utf-8")
        return None
    if block.lang == "python":
        first = block.code.split("\n", 1)[0]
        header = _RUN_LINE.match(first)
        script = header["file"] if header else f"_example_{block.line}.py"
        (cwd / script).write_text(block.code, encoding="utf-8")
        extra = dict(pair.split("=", 1) for pair in shlex.split(header["env"])) if header else {}
        argv = [sys.executable, script]
        env = env | extra
    else:
        for install in _INSTALL.finditer(block.code):
            unknown = set(install["extras"].split(",")) - extras()
            assert not unknown, f"{block.where}: no extra named {sorted(unknown)} in pyproject.toml"
        argv = ["bash", "-e", "-o", "pipefail", "-c", _INSTALL.sub("", block.code)]
    if "serve" in block.options:
        return serve(argv, block.options["serve"], cwd, env)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def serve(argv: list[str], url: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Start a block that serves until stopped, wait until ``url`` answers 200, then stop it (exit 0 if it did)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    status = 1
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    status = 0 if response.status == 200 else 1
                    break
            except OSError:
                time.sleep(0.5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        output = proc.communicate(timeout=30)[0]
    return subprocess.CompletedProcess(argv, status, output, f"no 200 from {url}" if status else "")


def prepare(cwd: Path) -> None:
    """A reader's working directory: empty but for the checkout's fixtures and notebooks, linked where docs name them."""
    for name in ("tests", "notebooks", "docs", "mkdocs.yml"):
        (cwd / name).symlink_to(ROOT / name, target_is_directory=(ROOT / name).is_dir())
