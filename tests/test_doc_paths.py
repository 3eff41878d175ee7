"""Paths and module names in messages, docstrings, READMEs and the docs name what exists now, not the 0.1 layout."""

from __future__ import annotations

import re
from pathlib import Path

import shadow
from shadow._deprecated import MOVED

ROOT = Path(__file__).resolve().parents[1]
#: What a person reads: the package (code, its messages and docstrings, SQL, templates, data), the READMEs and the
#: documentation site.
SOURCES = sorted({
    *(p for p in (ROOT / "shadow").rglob("*") if p.suffix in {".py", ".md", ".mako", ".sql", ".json"}),
    ROOT / "README.md", *(ROOT / "migrations").iterdir(), ROOT / "analytics" / "README.md",
    *(ROOT / "docs").rglob("*.md"),
})
_PATH = re.compile(r"(?<![\w/.])((?:shadow|migrations|analytics|tests)/[\w/.-]*\.(?:py|sql|json|mako|ini|md))\b")
#: ``shadow.X`` used as a module: followed by an attribute or a call, or alone in backticks.
_MODULE = re.compile(r"(?<![\w.])shadow\.(\w+)(?=\.\w|\(|`)")
#: Alone in backticks, not module paths: shadow's loggers (``shadow.writer``, ...), the file ``shadow.db``.
_NOT_MODULES = {"adapter", "config", "fingerprint", "flags", "guard", "sessions", "writer", "otel", "proxy", "rules",
                "dashboard", "db"}


def _lines() -> list[tuple[Path, int, str]]:
    return [(path, n, line) for path in SOURCES if path.name != "_deprecated.py"
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)]


def test_every_file_path_named_in_the_package_and_readmes_exists() -> None:
    missing = [f"{p.relative_to(ROOT)}:{n}: {m}" for p, n, line in _lines() for m in _PATH.findall(line)
               if not (ROOT / m).exists()]
    assert missing == []


def test_no_message_or_docstring_names_a_0_1_module_path_except_where_it_says_it_moved() -> None:
    public = set(shadow.__all__)
    stale = []
    for path, n, line in _lines():
        if "0.1" in line:  # the notes that list the old paths on purpose
            continue
        for match in _MODULE.finditer(line):
            name, after = match.group(1), line[match.end():match.end() + 1]
            if name in MOVED and name not in public and not (after == "`" and name in _NOT_MODULES):
                stale.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert stale == []
