"""The dashboard in a real browser: Playwright driving Debian's chromium opens the file, offline, and looks."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _dashboard_stores import EVIL_ACTOR, EVIL_CODE, EVIL_REASON, EVIL_TOOL, EVIL_VARIANT, build

from shadow.analytics._warehouse import Warehouse
from shadow.dashboard import _page as dashboard
from shadow.dashboard._data import collect
from shadow.demo._run import SIMULATED, run_demo

pytestmark = pytest.mark.browser

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
HOOKS = """
window.__fired = [];
for (const name of ["alert", "confirm", "prompt", "print"]) {
  window[name] = (...args) => { window.__fired.push([name, String(args[0])]); };
}
window.addEventListener("error", (e) => window.__fired.push(["onerror", String(e.message)]), true);
"""


@dataclass
class Visit:
    """What one page load did: console errors, uncaught errors, requests, dialogs, and the page itself."""

    page: Any
    url: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("SHADOW_REQUIRE_BROWSER") == "1":
            pytest.fail("SHADOW_REQUIRE_BROWSER=1 but chromium is not installed; run: apt-get install -y chromium")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return path


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=chromium, headless=True, args=ARGS,
            viewport={"width": 1440, "height": 900}, service_workers="block",
        )
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                      else route.abort())
        context.add_init_script(HOOKS)
        yield context
        context.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """A dashboard file of a log with a tool named like an XSS probe, and the traces each chart should have."""
    store = build(tmp_path_factory.mktemp("browser-hostile"))
    with Warehouse.open(store.warehouse, read_only=True) as wh:
        data = collect(wh, subtitle=SIMULATED)
    out = dashboard.write_page(dashboard.render(data), store.warehouse.parent / "cutover.html")
    return out, {f"chart-{k}": len(f.data) for k, f in dashboard.figures(data).items()}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """The dashboard ``shadow demo`` writes, and the traces each chart should have."""
    result = run_demo(tmp_path_factory.mktemp("browser-demo"), sessions=120, seed=9)
    assert result.dashboard is not None
    with Warehouse.open(result.warehouse, read_only=True) as wh:
        figures = dashboard.figures(collect(wh, subtitle=SIMULATED))
    return result.dashboard, {f"chart-{k}": len(f.data) for k, f in figures.items()}


def visit(browser: Any, path: Path, plots: int) -> Visit:
    page = browser.new_page()
    seen = Visit(page, path.resolve().as_uri())
    page.on("console", lambda m: seen.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.page_errors.append(str(e)))
    page.on("request", lambda r: seen.requests.append(r.url))
    page.on("dialog", lambda d: (seen.dialogs.append(d.message), d.dismiss()))
    page.goto(seen.url, wait_until="load")
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {plots}",
                           timeout=30_000)
    page.wait_for_timeout(300)  # let anything late (a lazy request, a deferred error) happen before we look
    return seen


def rendered(page: Any) -> dict[str, int]:
    return dict(page.evaluate(
        "Array.from(document.querySelectorAll('.js-plotly-plot')).map(e => [e.id, e.data.length])"))


@pytest.mark.parametrize("which", ["hostile", "demo"])
def test_every_chart_renders_offline_without_errors(which: str, browser: Any, request: pytest.FixtureRequest,
                                                    tmp_path: Path) -> None:
    path, expected = request.getfixturevalue(which)
    seen = visit(browser, path, len(expected))
    try:
        assert rendered(seen.page) == expected
        assert all(n > 0 for n in expected.values())
        assert seen.page.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length") >= len(expected)
        assert seen.console_errors == [] and seen.page_errors == []
        assert seen.requests == [seen.url], "the page requested something besides itself"
        assert SIMULATED in seen.page.evaluate("document.querySelector('.subtitle').textContent")
        shot = tmp_path / f"dashboard-{which}.png"
        seen.page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 50_000
    finally:
        seen.page.close()


def test_the_malicious_names_are_shown_as_text_and_run_nothing(browser: Any, hostile: tuple[Path, dict[str, int]]
                                                               ) -> None:
    path, expected = hostile
    seen = visit(browser, path, len(expected))
    page = seen.page
    try:
        marker = page.locator("#chart-loop_rate .scatterlayer .trace").last.locator(".point").first
        marker.hover(force=True)
        page.wait_for_selector("#chart-loop_rate .hoverlayer .hovertext", timeout=5_000)
        hover = page.evaluate("document.querySelector('#chart-loop_rate .hoverlayer').textContent")
        assert EVIL_REASON in hover and EVIL_ACTOR in hover
        body = page.evaluate("document.body.textContent")
        for literal in (EVIL_TOOL, EVIL_ACTOR, EVIL_REASON):
            assert literal in body
        for chart in ("before_after", "readiness", "code_mix"):
            assert EVIL_TOOL in page.evaluate(f"document.getElementById('chart-{chart}').textContent"), chart
        assert EVIL_CODE in page.evaluate("document.getElementById('chart-code_mix').textContent")
        assert EVIL_VARIANT in page.evaluate("document.getElementById('chart-follow_ups').textContent")
        assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
        handlers = page.evaluate(
            "Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes)"
            ".filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))")
        assert handlers == []
        assert page.evaluate("window.__fired") == []
        assert seen.dialogs == [] and seen.console_errors == [] and seen.page_errors == []
        assert seen.requests == [seen.url]
    finally:
        page.close()
