"""The dashboard in a real browser: Playwright driving Debian's chromium opens the file, offline, and looks."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _dashboard_stores import EVIL_ACTOR, EVIL_CODE, EVIL_REASON, EVIL_TOOL, EVIL_VARIANT, build, with_gaps

from shadow.analytics._warehouse import Warehouse
from shadow.dashboard import _page as dashboard
from shadow.dashboard._data import collect
from shadow.demo._run import SIMULATED, run_demo

pytestmark = pytest.mark.browser
REPRO = Path("/work/repro/16")

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


def visit(browser: Any, path: Path, plots: int, width: int = 1440) -> Visit:
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 900})
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
        assert all(n > 0 for n in expected.values()) or which == "hostile"  # too few errors there for savings
        assert seen.page.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length") >= len(expected)
        assert seen.console_errors == [] and seen.page_errors == []
        assert seen.requests == [seen.url], "the page requested something besides itself"
        assert SIMULATED in seen.page.evaluate("document.querySelector('.subtitle').textContent")
        shot = tmp_path / f"dashboard-{which}.png"
        seen.page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 50_000
        if REPRO.parent.is_dir():  # for a person to look at (the lead's review folder), when it exists
            REPRO.mkdir(exist_ok=True)
            shutil.copy(shot, REPRO / shot.name)
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


#: Bounding boxes (x, y, width, height) of the page's header parts and, per chart, of legend entries,
#: annotations, titles, text on the plot, reference-line shapes, the plot area and the mode bar.
BOXES = """() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
  const all = (root, sel) => Array.from(root.querySelectorAll(sel)).filter(e => {
    const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; });
  const header = all(document, 'header h1, header .facts, header .subtitle, header #recommendations h2, ' +
                     'header li.rec, header .notice, header .card').map(e => [e.tagName + '.' + e.className, box(e)]);
  const charts = {};
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    charts[plot.id] = {
      legend: all(plot, '.legend .traces').map(e => [e.textContent, box(e)]),
      labels: all(plot, '.annotation, .gtitle, .bartext, .textpoint').map(e => [e.textContent, box(e)]),
      lines: Array.from(plot.querySelectorAll('.shapelayer path')).map(e => box(e))  // a vertical line is 0 wide
        .filter(b => b[2] > 0 || b[3] > 0).map(b => [b[0] - 1.5, b[1] - 1.5, b[2] + 3, b[3] + 3]),
      plot: all(plot, '.nsewdrag').map(e => box(e)),
      modebar: all(plot, '.modebar').length,
    };
  }
  return {header, charts};
}"""


def overlap(a: list[float], b: list[float], slack: float = 1.0) -> bool:
    """Whether two boxes share more than ``slack`` pixels in both directions."""
    return (min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]) > slack
            and min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]) > slack)


def clashes(named: list[list[Any]], others: list[list[Any]] | None = None) -> list[tuple[str, str]]:
    pairs = []
    group = others if others is not None else named
    for i, (name_a, a) in enumerate(named):
        for j, (name_b, b) in enumerate(group):
            if (others is not None or j > i) and overlap(a, b):
                pairs.append((str(name_a), str(name_b)))
    return pairs


@pytest.mark.parametrize("width", [1366, 1920, 900])
def test_nothing_overlaps_in_the_header_legends_and_labels_and_there_is_no_mode_bar(
        width: int, browser: Any, demo: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    path, expected = demo
    seen = visit(browser, path, len(expected), width)
    page = seen.page
    try:
        for plot in page.query_selector_all(".js-plotly-plot"):
            plot.hover()  # the mode bar used to appear on hover, over legends and headlines
        page.wait_for_timeout(200)
        found = page.evaluate(BOXES)
        assert clashes(found["header"]) == [], "header parts overlap"
        for chart, parts in found["charts"].items():
            assert parts["modebar"] == 0, chart
            assert clashes(parts["legend"]) == [], f"{chart}: legend entries overlap"
            assert clashes(parts["legend"] + parts["labels"]) == [], f"{chart}: a legend and a label overlap"
            assert clashes(parts["legend"], [["plot", b] for b in parts["plot"]]) == [], f"{chart}: legend on plot"
            lines = [["line", b] for b in parts["lines"]]
            assert clashes(parts["labels"], lines) == [], f"{chart}: a label sits on a reference line"
        assert page.evaluate("document.documentElement.scrollWidth") <= width + 1, "the page scrolls sideways"
        page.screenshot(path=str(tmp_path / f"dashboard-{width}.png"), full_page=True)
        assert seen.console_errors == [] and seen.page_errors == [] and seen.requests == [seen.url]
    finally:
        page.close()


def test_the_recommendation_lines_come_first_one_per_tool_in_words(browser: Any,
                                                                    demo: tuple[Path, dict[str, int]]) -> None:
    path, expected = demo
    seen = visit(browser, path, len(expected))
    page = seen.page
    try:
        first = page.evaluate("""() => {
          const recs = document.getElementById('recommendations');
          const top = recs.getBoundingClientRect().top;
          const later = Array.from(document.querySelectorAll('.card, section.panel, table, .js-plotly-plot'));
          return {top, above: later.filter(e => e.getBoundingClientRect().top < top).length,
                  lines: Array.from(recs.querySelectorAll('li.rec')).map(li => li.innerText)};
        }""")
        assert first["above"] == 0, "something is drawn above the recommendations"
        tools = page.evaluate("Array.from(document.querySelectorAll('#tools tr td:first-child'))"
                              ".map(td => td.textContent)")
        assert len(first["lines"]) == len(tools) > 0
        words = ("raise the percentage", "hold", "fix the rules", "roll back", "done")
        assert all(any(w in line for w in words) and len(line) > 40 for line in first["lines"]), first["lines"]
        text = page.evaluate("document.body.innerText")
        assert "`" not in text, "literal Markdown backticks on the page"
        clipped = page.evaluate("""Array.from(document.querySelectorAll('#panel-flags, #panel-flags *'))
            .filter(e => e.scrollHeight > e.clientHeight + 1 && getComputedStyle(e).overflowY !== 'visible')
            .map(e => e.tagName + '.' + e.className)""")
        assert clipped == [], "the flag history sits in a clipped scroll box"
        assert seen.console_errors == [] and seen.requests == [seen.url]
    finally:
        page.close()


def test_the_health_panel_shows_the_unknown_follow_ups_of_a_log_with_deleted_records(browser: Any,
                                                                                   tmp_path: Path) -> None:
    store = build(tmp_path, sessions=16, hostile_records=False)
    gone = with_gaps(store, errors=2)
    with Warehouse.open(store.warehouse, read_only=True) as wh:
        data = collect(wh)
    path = dashboard.write_page(dashboard.render(data), tmp_path / "gaps.html")
    seen = visit(browser, path, len(dashboard.figures(data)))
    try:
        line = seen.page.locator("#panel-health #follow-ups-unknown")
        assert line.is_visible()
        text = " ".join(line.inner_text().split())
        assert text.startswith(f"Missing records: {len(gone)} of ") and "unknown follow-up" in text
        assert f"; {len(gone)} of 16 sessions shown have gaps" in text
        assert seen.console_errors == [] and seen.page_errors == []
    finally:
        seen.page.close()
