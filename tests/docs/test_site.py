"""The documentation site builds in strict mode (no broken link, anchor or reference), with its generated pages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _examples import PAGES, ROOT
from _screenshots import NAMES, take

from shadow._config import Settings
from shadow.cli import app
from shadow.contract._codes import CODE_TABLE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built strictly from a copy of the docs, with screenshots this run took when chromium is there."""
    work = tmp_path_factory.mktemp("site")
    shutil.copytree(ROOT / "docs", work / "docs")
    shutil.copy(ROOT / "mkdocs.yml", work / "mkdocs.yml")
    chromium = shutil.which("chromium")
    if chromium is not None:
        take(work / "docs" / "assets" / "screenshots", chromium)
    elif os.environ.get("SHADOW_REQUIRE_BROWSER") == "1":
        pytest.fail("SHADOW_REQUIRE_BROWSER=1 but chromium is not installed; run: apt-get install -y chromium")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(work / "site")], cwd=work,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-5000:]
    assert "WARNING" not in done.stderr, done.stderr[-5000:]
    return work / "site"


def _text(html: Path) -> str:
    return re.sub(r"<[^>]+>", " ", html.read_text(encoding="utf-8"))


def test_the_site_builds_strictly_with_every_page_in_the_nav(site: Path) -> None:
    built = {p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in PAGES if p.is_relative_to(ROOT / "docs")}
    for page in built:
        index = site / (page.removesuffix("index").rstrip("/") or ".") / "index.html"
        if not page.endswith("index"):
            index = site / page / "index.html"
        assert index.is_file(), page


def test_the_codes_page_lists_every_code_of_the_code_table(site: Path) -> None:
    text = _text(site / "reference" / "contract" / "index.html")
    for spec in CODE_TABLE.values():
        assert f"{spec.code.value}" in text and spec.meaning in text and spec.default_message in text


def test_the_cli_page_documents_every_command(site: Path) -> None:
    import typer

    text = _text(site / "reference" / "cli" / "index.html")

    def walk(command: object, prefix: str) -> list[str]:
        subs = getattr(command, "commands", {})
        return [prefix] + [name for n, c in subs.items() for name in walk(c, f"{prefix} {n}")]

    commands = walk(typer.main.get_command(app), "shadow")
    assert len(commands) > 20
    missing = [c for c in commands if c not in text]
    assert missing == []


def test_the_settings_page_names_every_setting_and_every_variable_the_package_reads(site: Path) -> None:
    text = _text(site / "reference" / "settings" / "index.html")
    names = {f.name for f in Settings.__dataclass_fields__.values()}
    variables = {m for p in (ROOT / "shadow").rglob("*.py")
                 for m in re.findall(r"\bSHADOW_[A-Z][A-Z_]*[A-Z]\b", p.read_text(encoding="utf-8"))}
    missing = sorted(n for n in names | variables if n not in text)
    assert missing == []


def test_the_api_page_documents_each_public_package_from_its_docstrings(site: Path) -> None:
    anchors = set(re.findall(r'id="(shadow[\w.]*)"', (site / "reference" / "api" / "index.html").read_text()))
    expected = {"shadow.tool", "shadow.guard", "shadow.Rules.on", "shadow.testing.recording", "shadow.tokens.sign",
                "shadow.integrations.fastmcp_tool", "shadow.analytics.loop_rate_report",
                "shadow.dashboard.build_dashboard", "shadow.calllog.OtlpStore", "shadow.flags._openfeature.OpenFeatureFlags"}
    assert expected - anchors == set()


def test_the_dashboard_page_shows_the_screenshots_this_run_took(site: Path) -> None:
    if shutil.which("chromium") is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    for name in NAMES:
        shot = site / "assets" / "screenshots" / name
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        assert f"assets/screenshots/{name}" in (site / "how-to" / "dashboard" / "index.html").read_text()


def test_every_link_of_the_readme_into_the_checkout_exists() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme) if "://" not in t]
    assert len(links) > 20
    assert [t for t in links if not (ROOT / t).exists()] == []
