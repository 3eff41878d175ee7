"""The dashboard page, its data, the ``shadow dashboard`` command and the localhost server."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
import os
import re
import stat
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from _dashboard_stores import (
    EVIL_ACTOR,
    EVIL_CODE,
    EVIL_REASON,
    EVIL_TOOL,
    EVIL_VARIANT,
    PLAIN_TOOL,
    Store,
    build,
    successes_only,
    with_gaps,
)
from plotly.offline import get_plotlyjs
from typer.testing import CliRunner

from shadow.analytics._report import UnknownToolError
from shadow.analytics._warehouse import Warehouse, WarehouseError
from shadow.cli import app
from shadow.dashboard import _page as dashboard
from shadow.dashboard._charts import text
from shadow.dashboard._data import (
    LoopedSession,
    choose_unit,
    collect,
    looped_sessions,
    render_session,
    session_events,
)

EVIL = (EVIL_TOOL, EVIL_ACTOR, EVIL_REASON, EVIL_CODE, EVIL_VARIANT)
SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.DOTALL)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("hostile-dashboard"))


@pytest.fixture
def warehouse(store: Store) -> Iterator[Warehouse]:
    with Warehouse.open(store.warehouse, read_only=True) as wh:
        yield wh


@pytest.fixture(scope="module")
def page(store: Store) -> str:
    with Warehouse.open(store.warehouse, read_only=True) as wh:
        return dashboard.build_dashboard(wh, subtitle="SIMULATED <b>traffic</b> & more")


def _outside_scripts(text: str) -> str:
    return SCRIPT.sub("", text)


def test_the_page_loads_nothing_from_anywhere(page: str) -> None:
    assert not re.search(r"<script[^>]+src=", page)
    assert "<link" not in page and "<iframe" not in page and "@import" not in page
    assert "MathJax" not in _outside_scripts(page) and "cdn.plot.ly" not in _outside_scripts(page)
    executable = [m for m in SCRIPT.finditer(page) if "application/json" not in m.group("attrs")]
    assert len(executable) == 2  # plotly.js once, then the loader
    assert page.count(get_plotlyjs()[:500]) == 1 and executable[0].group("body").startswith(get_plotlyjs()[:500])


def test_the_content_security_policy_allows_exactly_the_inline_scripts(page: str) -> None:
    policy = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    allowed = set(re.findall(r"'sha256-([^']+)'", policy))
    for m in SCRIPT.finditer(page):
        if "application/json" in m.group("attrs"):
            continue
        digest = base64.b64encode(hashlib.sha256(m.group("body").encode()).digest()).decode()
        assert digest in allowed


def test_no_logged_string_reaches_the_page_as_markup(page: str) -> None:
    for raw in EVIL:
        assert raw not in page
    visible = _outside_scripts(page)
    for raw in (EVIL_TOOL, EVIL_ACTOR, EVIL_REASON):
        assert html.escape(raw) in visible  # in the tables, as text
    for m in SCRIPT.finditer(page):
        if "application/json" in m.group("attrs"):
            body = m.group("body")
            assert "<" not in body and ">" not in body
            json.loads(body)


def test_the_subtitle_is_stated_plainly_and_escaped(page: str) -> None:
    assert '<p class="subtitle" role="note">SIMULATED &lt;b&gt;traffic&lt;/b&gt; &amp; more</p>' in page


def test_the_header_gives_the_data_range_calls_sessions_and_generation_time(warehouse: Warehouse) -> None:
    data = collect(warehouse)
    page = dashboard.render(data)
    facts = re.search(r'<p class="facts">(.*?)</p>', page).group(1)  # type: ignore[union-attr]
    d = data.report.data_range
    assert f"{d.calls:,} calls" in facts and f"{d.sessions:,} sessions" in facts and f"{d.errors:,} errors" in facts
    assert f"{d.first_call:%Y-%m-%d %H:%M} UTC" in facts and f"{d.last_call:%Y-%m-%d %H:%M} UTC" in facts
    assert f"generated {data.generated_at:%Y-%m-%d %H:%M} UTC" in facts


def test_every_chart_has_a_panel_and_its_figure(warehouse: Warehouse) -> None:
    data = collect(warehouse)
    page = dashboard.render(data)
    figures = dashboard.figures(data)
    for panel in dashboard.PANELS:
        assert f'id="chart-{panel.key}"' in page
        spec = re.search(rf'data-target="chart-{panel.key}">(.*?)</script>', page, re.DOTALL).group(1)  # type: ignore[union-attr]
        assert len(json.loads(spec)["data"]) == len(figures[panel.key].data)
        assert figures[panel.key].data or figures[panel.key].layout.annotations  # drawn, or says why not


def test_readiness_flags_the_tool_whose_errors_are_unmapped(warehouse: Warehouse) -> None:
    data = collect(warehouse)
    gate = {r.tool: r for r in data.readiness}
    evil = gate[EVIL_TOOL]
    assert not evil.ready
    assert any("unmapped" in reason for reason in evil.reasons)
    assert evil.unmapped_share == pytest.approx(evil.unmapped_errors / evil.errors)


def test_what_is_drawn_is_capped_and_the_page_says_so(warehouse: Warehouse) -> None:
    data = collect(warehouse, max_tools=1, max_buckets=5)
    assert len(data.tools) == 1 and len(data.readiness) == 1
    assert {c.tool for c in data.code_mix} == {data.tools[0].tool}
    assert len({b.start for b in data.series.buckets}) == 5 and data.series.dropped > 0
    page = dashboard.render(data)
    assert "busiest of 2 tools" in page and "older hours are left out" in page


def test_a_log_without_errors_gives_a_page_that_says_what_is_missing(tmp_path: Path) -> None:
    quiet = successes_only(tmp_path)
    with Warehouse.open(quiet.warehouse, read_only=True) as wh:
        data = collect(wh)
        page = dashboard.render(data)
    figures = dashboard.figures(data)
    assert all(len(f.data) == 0 and f.layout.annotations for k, f in figures.items() if k != "readiness")
    assert len(figures["readiness"].data) == 3  # the tool has calls: its shares are drawn (as 0), and the gate
    assert "No errors in this range yet" in page and "savings come only from a randomised split" in page
    assert "No flag changes in the audit log" in page
    assert f"{quiet.calls:,} calls" in page


def _health_text(page: str) -> str:
    found = re.search(r'<section class="panel" id="panel-health">.*?</section>', page, re.DOTALL)
    assert found is not None
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(0)))


def test_the_health_panel_says_how_many_follow_ups_are_unknown_and_which_sessions_have_gaps(tmp_path: Path
                                                                                            ) -> None:
    store = build(tmp_path, sessions=16, hostile_records=False)
    with Warehouse.open(store.warehouse, read_only=True) as wh:
        assert "Every error's follow-up is known" in _health_text(dashboard.build_dashboard(wh))
    gone = with_gaps(store, errors=3)  # records deleted right after three errors, as a drop would
    assert len(gone) == 3
    with Warehouse.open(store.warehouse, read_only=True) as wh:
        unknown = {r for r, in wh.con.execute("SELECT id FROM error_followups WHERE follow_up = 'unknown'").fetchall()}
        (errors, sessions), = wh.con.execute("SELECT (SELECT count(*) FROM error_followups), "
                                             "(SELECT count(DISTINCT session_id) FROM calls)").fetchall()
        text = " ".join(_health_text(dashboard.build_dashboard(wh)).split())
    assert unknown == set(gone)
    assert (f"{len(gone)} of {errors:,} errors have an unknown follow-up (records are missing right after them) "
            "and are left out of the loop rate") in text
    assert f"{len(gone)} of {sessions:,} sessions shown have gaps" in text
    assert f"Whole log: {len(gone)} of {sessions:,} sessions have gaps in their sequence numbers" in text


def test_the_bucket_width_follows_the_data_range() -> None:
    t = dt.datetime(2025, 1, 1)
    assert choose_unit(t, t + dt.timedelta(hours=30)) == "hour"
    assert choose_unit(t, t + dt.timedelta(days=90)) == "day"
    assert choose_unit(t, t + dt.timedelta(days=400)) == "week"
    assert choose_unit(t, t + dt.timedelta(days=2000)) == "month"
    assert choose_unit(None, None) == "day"


def test_the_page_size_does_not_grow_with_the_call_count(tmp_path: Path) -> None:
    sizes = []
    for sessions in (40, 320):
        small = build(tmp_path / str(sessions), sessions=sessions, hostile_records=False)
        with Warehouse.open(small.warehouse, read_only=True) as wh:
            sizes.append((small.calls, len(dashboard.build_dashboard(wh).encode())))
    (calls_a, size_a), (calls_b, size_b) = sizes
    assert calls_b > 6 * calls_a
    assert abs(size_b - size_a) < 0.005 * size_a, sizes


def test_a_tool_filter_narrows_the_page_to_that_tool(warehouse: Warehouse) -> None:
    page = dashboard.build_dashboard(warehouse, tool=PLAIN_TOOL)
    assert html.escape(EVIL_TOOL) not in page and text(EVIL_TOOL) not in page.replace("\\u0026", "&")
    assert f"Cutover dashboard · tool {PLAIN_TOOL}" in page
    with pytest.raises(UnknownToolError, match="known tools"):
        dashboard.build_dashboard(warehouse, tool="no_such_tool")


def test_an_unsynced_warehouse_is_refused_with_advice(tmp_path: Path) -> None:
    with Warehouse.open(tmp_path / "empty.duckdb") as wh, pytest.raises(WarehouseError, match="shadow sync"):
        dashboard.build_dashboard(wh)


def test_write_dashboard_replaces_the_file_whole_and_refuses_bad_targets(warehouse: Warehouse,
                                                                          tmp_path: Path) -> None:
    out = tmp_path / "cutover.html"
    out.write_text("old")
    assert dashboard.write_dashboard(warehouse, out) == out
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["cutover.html"]  # no temporary file left behind
    with pytest.raises(dashboard.OutputError, match="is a directory"):
        dashboard.write_dashboard(warehouse, tmp_path)
    with pytest.raises(dashboard.OutputError, match="does not exist"):
        dashboard.write_dashboard(warehouse, tmp_path / "missing" / "x.html")


def test_the_page_is_an_ordinary_file_unless_private(warehouse: Warehouse, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        shared = dashboard.write_dashboard(warehouse, tmp_path / "shared.html")
        private = dashboard.write_dashboard(warehouse, tmp_path / "private.html", private=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_the_page_shows_no_markdown_backticks_and_no_clipped_scroll_box(warehouse: Warehouse) -> None:
    page = dashboard.render(collect(warehouse))
    text = re.sub(r"<script.*?</script>", "", page, flags=re.DOTALL)
    assert "`" not in text and 'class="scroll"' not in text and "max-height" not in page.split("</style>")[0]


def test_the_sessions_that_looped_come_most_loops_first_and_read_call_by_call(warehouse: Warehouse) -> None:
    found = looped_sessions(warehouse, limit=5)
    assert found and all(isinstance(s, LoopedSession) and s.loops > 0 for s in found)
    assert [s.loops for s in found] == sorted((s.loops for s in found), reverse=True)
    events = session_events(warehouse, found[0].session_id)
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert sum(1 for e in events if e.looped) == found[0].loops
    assert any(e.repeats_previous for e in events)
    assert events[-1].kind == "end"
    shown = render_session(events)
    assert "same call again" in shown and "legacy served:" in shown
    with pytest.raises(LookupError, match="looped_sessions"):
        session_events(warehouse, "no-such-session")
    with pytest.raises(ValueError, match="at least 1"):
        looped_sessions(warehouse, limit=0)


# --- the command --------------------------------------------------------------------------------------------------


def test_the_command_syncs_first_and_writes_the_page(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    fresh = tmp_path / "fresh.duckdb"
    result = CliRunner().invoke(app, ["dashboard", "--out", str(out), "--db-url", store.url, "--warehouse",
                                      str(fresh), "--format", "json", "--subtitle", "staging"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert facts["out"] == str(out.resolve()) and facts["bytes"] == out.stat().st_size
    assert "staging" in out.read_text()
    with Warehouse.open(fresh, read_only=True) as wh:
        assert wh.con.execute("SELECT count(*) FROM calls").fetchall()[0][0] == store.calls


def test_the_command_explains_bad_input(store: Store, tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["--db-url", store.url, "--warehouse", str(store.warehouse), "--out", str(tmp_path / "x.html")]
    cases = [
        (["--no-sync", "--tool", "no_such_tool"], "known tools"),
        (["--no-sync", "--since", "last tuesday"], "YYYY-MM-DD"),
        (["--no-sync", "--out", str(tmp_path / "missing" / "x.html")], "does not exist"),
    ]
    for extra, message in cases:
        result = runner.invoke(app, ["dashboard", *common, *extra])
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.stderr
    result = runner.invoke(app, ["dashboard", "--no-sync", "--warehouse", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 2 and "shadow sync" in result.stderr


# --- the server ---------------------------------------------------------------------------------------------------


def _get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.fixture
def running() -> Iterator[list[dashboard.DashboardServer]]:
    servers: list[dashboard.DashboardServer] = []
    yield servers
    for server in servers:
        server.shutdown()


def _start(servers: list[dashboard.DashboardServer], server: dashboard.DashboardServer) -> str:
    servers.append(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.url


def test_the_server_answers_on_loopback_with_the_page_and_its_policy(page: str,
                                                                    running: list[dashboard.DashboardServer]) -> None:
    server = dashboard.serve(lambda: page, port=0, refresh=0)
    assert server.httpd.server_address[0] == "127.0.0.1"
    url = _start(running, server)
    status, headers, body = _get(url)
    assert status == 200 and body.decode() == page
    assert headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert _get(url, "HEAD")[0] == 200
    status, _, body = _get(url + "../etc/passwd")
    assert status == 404 and b"dashboard is at /" in body


def test_the_server_rebuilds_a_stale_page_and_keeps_the_last_good_one(running: list[dashboard.DashboardServer]
                                                                      ) -> None:
    builds: list[str] = []

    def build() -> str:
        builds.append("x")
        if len(builds) == 3:
            raise RuntimeError("warehouse busy")
        return f"<!DOCTYPE html><p>build {len(builds)}</p>"

    url = _start(running, dashboard.serve(build, port=0, refresh=0.05))
    assert _get(url)[2] == b"<!DOCTYPE html><p>build 1</p>"
    time.sleep(0.1)
    assert _get(url)[2] == b"<!DOCTYPE html><p>build 2</p>"
    time.sleep(0.1)
    assert _get(url)[2] == b"<!DOCTYPE html><p>build 2</p>"  # the third build failed
    assert len(builds) == 3


def test_a_server_whose_first_build_fails_says_so() -> None:
    def build() -> str:
        raise RuntimeError("no warehouse")

    server = dashboard.serve(build, port=0, refresh=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status, _, body = _get(server.url)
        assert status == 503 and b"could not be built" in body
    finally:
        server.shutdown()
