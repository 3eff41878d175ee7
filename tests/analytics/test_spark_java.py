"""The Java the Spark engine checks is the one PySpark would start: JAVA_HOME's when set, else PATH's, 17 or later."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from shadow.analytics import _spark


def _fake_java(home: Path, version_line: str) -> Path:
    java = home / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return java


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for java")
@pytest.mark.parametrize(("line", "problem"), [
    ('openjdk version "17.0.15" 2025-04-15', None),
    ('openjdk version "21" 2023-09-19', None),
    ('openjdk version "11.0.2" 2019-01-15', "is Java 11"),
    ('java version "1.8.0_392"', "is Java 8"),
    ("no version here", "said no version"),
])
def test_the_java_under_java_home_must_be_17_or_later(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      line: str, problem: str | None) -> None:
    _fake_java(tmp_path / "jdk", line)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    found = _spark._java_problem()
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found and "Java 17 or later" in found


def test_a_java_home_without_java_is_named_even_when_java_is_on_path(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path / "other", 'openjdk version "17.0.1"')
    monkeypatch.setenv("PATH", str(tmp_path / "other" / "bin"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))  # PySpark's launcher takes JAVA_HOME, not PATH
    found = _spark._java_problem()
    assert found is not None and f"JAVA_HOME={tmp_path / 'nowhere'} has no bin/java" in found
    monkeypatch.delenv("JAVA_HOME")
    assert _spark._java_problem() is None  # then the java on PATH


def test_no_java_at_all_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _spark._java_problem() == "Java 17 or later (a JDK or JRE on PATH, or JAVA_HOME)"
