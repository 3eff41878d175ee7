"""The cutover dashboard: one self-contained HTML page (plotly.js inline, works offline) and a localhost server."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import http.server
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from shadow._logs import get_logger
from shadow.analytics._report import ArmStats, ToolReport
from shadow.analytics._warehouse import Warehouse
from shadow.dashboard import _charts as charts
from shadow.dashboard._data import DashboardData, collect

log = get_logger("shadow.dashboard")


@dataclass(frozen=True, slots=True)
class Panel:
    """One chart on the page: its key (the element id is ``chart-<key>``), title and what it shows."""

    key: str
    title: str
    explains: str


PANELS: Final = (
    Panel("loop_rate", "Loop rate over time, per arm",
          "Share of errors whose next call in the session repeated the identical call (same tool, same arguments), "
          "per arm, with a 95% Wilson band. Vertical lines are flag changes: solid for a cutover, dotted for any "
          "other change; hover the triangles for who changed what and why."),
    Panel("before_after", "Per tool: before vs after cutover",
          "Each tool's loop rate before its cutover and after it in each arm, with 95% intervals. Under the name: "
          "structured minus legacy in percentage points, its 95% interval and p-value (sessions as clusters)."),
    Panel("readiness", "Cutover readiness: unmapped and schema-invalid",
          "Errors no rule mapped (they became internal_error) and structured payloads that failed the schema. A "
          "tool over the gate's limits is not ready to cut over."),
    Panel("code_mix", "Error code mix",
          "Errors per tool by the code the structured payload gives, in both arms; the hatched part matched no "
          "rule."),
    Panel("follow_ups", "What the agent did after an error",
          "The first thing after each error, per arm: a blind identical repeat, a repair, another tool, a hand-over "
          "to the user, the end of the task, or nothing."),
    Panel("savings", "Savings per 1,000 tasks",
          "Identical repeats an error costs on each arm, scaled to 1,000 tasks (a task is a session). The gap is "
          "the round trips the structured payload saves; time at the median call latency."),
)

_LOADER: Final = """(function () {
  var config = {displaylogo: false, responsive: true, showSendToCloud: false,
                modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"]};
  var nodes = document.querySelectorAll("script.figure-data");
  for (var i = 0; i < nodes.length; i++) {
    var spec = JSON.parse(nodes[i].textContent);
    Plotly.newPlot(nodes[i].getAttribute("data-target"), spec.data, spec.layout, config);
  }
})();"""

_STYLE: Final = """
:root { --ink: #212529; --muted: #6c757d; --line: #dee2e6; --legacy: #c8553d; --structured: #2a6f97; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); background: #f4f5f7; }
header, main, footer { max-width: 1480px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 20px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0 0 2px; }
.facts { color: var(--muted); margin: 0 0 12px; }
.subtitle { background: #fff3cd; border: 1px solid #e0c36a; border-radius: 6px; padding: 10px 14px; margin: 10px 0;
            font-weight: 600; }
.notice { background: #e7f1fa; border: 1px solid #b6d4ea; border-radius: 6px; padding: 8px 14px; margin: 8px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(230px, 1fr)); gap: 12px; margin: 12px 0; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.card .label { color: var(--muted); font-size: 13px; }
.card .value { font-size: 24px; font-weight: 650; }
.card .detail { color: var(--muted); font-size: 13px; }
.legacy { color: var(--legacy); } .structured { color: var(--structured); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(620px, 1fr)); gap: 16px; }
section.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px;
                min-width: 0; }
section.wide { grid-column: 1 / -1; }
.explains { color: var(--muted); font-size: 13px; margin: 0 0 6px; }
.chart { width: 100%; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bad { color: #b00020; font-weight: 600; } .good { color: #2d6a4f; }
.scroll { max-height: 380px; overflow-y: auto; }
footer { color: var(--muted); font-size: 13px; padding-top: 12px; padding-bottom: 28px; }
code { font-size: 12.5px; }
"""


class OutputError(ValueError):
    """The dashboard cannot be written where asked; the message says how to fix it."""


def _e(value: object) -> str:
    """``value`` escaped for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def script_json(value: Any) -> str:
    """JSON text safe inside a ``<script>`` element: ``<``, ``>``, ``&`` and the JS line separators escaped, so no
    logged string can close the element or start markup, whatever the encoder did."""
    text = value if isinstance(value, str) else pio.to_json(value, validate=False, pretty=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def figures(data: DashboardData) -> dict[str, go.Figure]:
    """The page's figures by panel key, in page order (the browser test counts their traces)."""
    ready = {r.tool: r for r in data.readiness}
    names = [t.tool for t in data.tools]
    out = {
        "loop_rate": charts.loop_rate_over_time(data.series, data.flag_changes),
        "before_after": charts.before_after(data.tools, ready),
        "readiness": charts.readiness(data.readiness, data.thresholds),
        "code_mix": charts.code_mix(data.code_mix, names, ready),
        "follow_ups": charts.follow_up_mix(data.report.variants),
        "savings": charts.savings(data.report.savings),
    }
    assert list(out) == [p.key for p in PANELS]
    return out


def _when(value: dt.datetime | None) -> str:
    return "–" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"95% {low:.1%} to {high:.1%}"


def _arm_card(arm: ArmStats | None, variant: str) -> str:
    if arm is None:
        return (f'<div class="card"><div class="label">{_e(variant)} arm</div><div class="value">–</div>'
                f'<div class="detail">no calls served {_e(variant)}</div></div>')
    return (f'<div class="card"><div class="label">loop rate, {_e(variant)} arm</div>'
            f'<div class="value {_e(variant)}">{_pct(arm.loop_rate)}</div>'
            f'<div class="detail">{arm.loops:,} loops after {arm.errors:,} errors; {_e(_ci(arm.ci_low, arm.ci_high))}'
            f"</div></div>")


def _header(data: DashboardData) -> str:
    r = data.report
    d = r.data_range
    scope = f" · tool {_e(r.filters.tool)}" if r.filters.tool else ""
    since = f" · since {_e(_when(r.filters.since))}" if r.filters.since else ""
    parts = [
        "<header>",
        f"<h1>Cutover dashboard{scope}</h1>",
        f'<p class="facts">Data from {_e(_when(d.first_call))} to {_e(_when(d.last_call))}{since} · '
        f"{d.calls:,} calls · {d.errors:,} errors · {d.sessions:,} sessions · generated "
        f"{_e(_when(data.generated_at))}</p>",
    ]
    if data.subtitle:
        parts.append(f'<p class="subtitle" role="note">{_e(data.subtitle)}</p>')
    parts += [f'<p class="notice">{_e(n)}</p>' for n in data.notices]
    arms = {v.variant: v for v in r.variants}
    c = r.comparison
    s = r.savings
    saved = "–" if s.round_trips_saved_per_1000_tasks is None else f"{s.round_trips_saved_per_1000_tasks:,.0f}"
    parts += [
        '<div class="cards">',
        _arm_card(arms.get("legacy"), "legacy"),
        _arm_card(arms.get("structured"), "structured"),
        f'<div class="card"><div class="label">structured minus legacy ({_e(c.scope)}, {_e(c.design)})</div>'
        f'<div class="value">{"–" if c.test.difference is None else f"{c.test.difference * 100:+.1f} pts"}</div>'
        f'<div class="detail">{_e(c.test.message)}</div></div>',
        f'<div class="card"><div class="label">round trips saved per 1,000 tasks</div>'
        f'<div class="value">{saved}</div><div class="detail">{_e(s.message)}</div></div>',
        "</div>",
        "</header>",
    ]
    return "\n".join(parts)


def _period_cell(tool: ToolReport, key: tuple[str, str]) -> str:
    p = next((p for p in tool.periods if (p.period, p.variant) == key), None)
    return "–" if p is None or p.loop_rate is None else f"{p.loop_rate:.1%} ({p.loops:,}/{p.errors:,})"


def _tool_rows(data: DashboardData) -> str:
    ready = {r.tool: r for r in data.readiness}
    rows = []
    for t in data.tools:
        gate = ready[t.tool]
        verdict = ('<span class="good">ready</span>' if gate.ready else
                   '<span class="bad">not ready</span>: ' + _e("; ".join(gate.reasons)))
        cells = "".join(f"<td class='num'>{_period_cell(t, key)}</td>"
                        for key in (("before", "legacy"), ("after", "legacy"), ("after", "structured")))
        rows.append(
            f"<tr><td>{_e(t.tool)}</td><td>{verdict}</td><td class='num'>{t.calls:,}</td>"
            f"<td class='num'>{t.errors:,}</td><td class='num'>{_e(_when(t.cutover_at))}</td>{cells}"
            f"<td>{_e(t.comparison.design)}: {_e(t.comparison.test.message)}</td></tr>")
    head = ("<tr><th>tool</th><th>readiness (count checks; <code>shadow ready TOOL</code> also scans for leaks)</th>"
            "<th>calls</th><th>errors</th><th>cutover</th><th>before (legacy)</th><th>after, legacy</th>"
            "<th>after, structured</th><th>two-arm test</th></tr>")
    return (f'<section class="panel wide"><h2>Per tool: readiness and the test</h2><table id="tools">{head}'
            f"{''.join(rows)}</table></section>")


def _flag_rows(data: DashboardData) -> str:
    if not data.flag_changes:
        return ('<section class="panel" id="panel-flags"><h2>Flag history</h2><p class="explains">No flag '
                "changes in the audit log: set flags with <code>shadow flags set</code> so cutovers are marked."
                "</p></section>")
    rows = []
    for f in reversed(data.flag_changes):
        old = "–" if f.old_mode is None else f"{f.old_mode}{f' {f.old_percent}%' if f.old_mode == 'cutover' else ''}"
        new = f"{f.new_mode}{f' {f.new_percent}%' if f.new_mode == 'cutover' else ''}"
        tool = "every tool (kill switch)" if f.tool == "*" else f.tool
        rows.append(f"<tr><td class='num'>{_e(_when(f.ts))}</td><td>{_e(tool)}</td><td>{_e(old)} → {_e(new)}"
                    f"{' <b>(cutover)</b>' if f.is_cutover else ''}</td><td>{_e(f.actor)}</td>"
                    f"<td>{_e(f.reason or '')}</td></tr>")
    return ('<section class="panel" id="panel-flags"><h2>Flag history (latest first)</h2><p class="explains">'
            "Who changed which flag, when and why, from the flag audit log.</p><div class=\"scroll\">"
            f"<table id=\"flags\"><tr><th>time</th><th>tool</th><th>change</th><th>actor</th><th>reason</th></tr>"
            f"{''.join(rows)}</table></div></section>")


def _csp(scripts: list[str]) -> str:
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    return (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:; "
            "font-src data:; base-uri 'none'; form-action 'none'")


def render(data: DashboardData) -> str:
    """The page for ``data``: plotly.js inline once, each figure as escaped JSON, no request to anywhere."""
    plotly_js = get_plotlyjs().replace("</script", "<\\/script")
    figs = figures(data)
    panels = []
    for i, panel in enumerate(PANELS):
        wide = " wide" if i == 0 else ""
        panels.append(
            f'<section class="panel{wide}" id="panel-{panel.key}"><h2>{_e(panel.title)}</h2>'
            f'<p class="explains">{_e(panel.explains)}</p><div class="chart" id="chart-{panel.key}"></div>'
            f'<script type="application/json" class="figure-data" data-target="chart-{panel.key}">'
            f"{script_json(figs[panel.key])}</script></section>")
    methods = data.report.methods
    footer = (
        "<footer><p><b>Definitions.</b> An error is followed by a loop when the next call in the same session (marks "
        "such as a user turn are skipped) goes to the same tool with an identical argument fingerprint. Loop rate = "
        "errors followed by a loop / errors. The arm of a call is the variant served to the model (legacy or "
        "structured).</p>"
        f"<p><b>Methods.</b> {_e(methods.get('interval', ''))} intervals per arm and bucket; the test: "
        f"{_e(methods.get('test', ''))}, {_e(methods.get('cluster_interval', ''))}. Readiness uses the gate's "
        f"thresholds: at least {data.thresholds.min_calls} calls and {data.thresholds.min_errors} errors, at most "
        f"{data.thresholds.max_unmapped_share:.0%} unmapped, at most {data.thresholds.max_schema_invalid} "
        "schema-invalid payloads.</p>"
        "<p>Generated by <code>shadow dashboard</code>. This file is self-contained: it loads nothing from the "
        "network.</p></footer>")
    body = "\n".join([
        _header(data),
        '<main><noscript><p class="notice">The charts need JavaScript; the tables below hold the numbers.</p>'
        "</noscript>",
        f'<div class="grid">{"".join(panels)}{_flag_rows(data)}{_tool_rows(data)}</div></main>',
        footer,
    ])
    title = "Cutover dashboard" + (f" · {data.report.filters.tool}" if data.report.filters.tool else "")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_csp([plotly_js, _LOADER]))}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(title)}</title>",
        f"<style>{_STYLE}</style>",
        f"<script>{plotly_js}</script>",
        "</head><body>",
        body,
        f"<script>{_LOADER}</script>",
        "</body></html>",
    ])


def build_dashboard(warehouse: Warehouse, *, tool: str | None = None, since: dt.datetime | None = None,
                    subtitle: str | None = None) -> str:
    """The dashboard's HTML from a synced warehouse (``tool`` and ``since`` as for the loop-rate report)."""
    return render(collect(warehouse, tool=tool, since=since, subtitle=subtitle))


def write_dashboard(warehouse: Warehouse, out: Path, *, tool: str | None = None, since: dt.datetime | None = None,
                    subtitle: str | None = None) -> Path:
    """Write the dashboard to ``out`` (replaced whole, never left half-written); returns the path written."""
    page = build_dashboard(warehouse, tool=tool, since=since, subtitle=subtitle)
    return write_page(page, out)


def write_page(page: str, out: Path) -> Path:
    """Write ``page`` to ``out`` atomically (a temporary file beside it, then a rename); ``OutputError`` when
    ``out`` is a directory or its folder does not exist."""
    target = Path(out)
    if target.is_dir():
        raise OutputError(f"{target} is a directory; give a file name, for example {target / 'cutover.html'}")
    if not target.parent.is_dir():
        raise OutputError(f"the folder {target.parent} does not exist; create it or choose another --out")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


# --- serving ------------------------------------------------------------------------------------------------------

PATHS: Final = ("/", "/index.html", "/cutover.html")


class DashboardServer:
    """Serves the page on ``host:port`` (default loopback only); rebuilt on a request at most every ``refresh``
    seconds (0: never), the last good page kept when a rebuild fails."""

    def __init__(self, build: Callable[[], str], *, host: str = "127.0.0.1", port: int = 8050,
                 refresh: float = 60.0, page: str | None = None) -> None:
        if refresh < 0:
            raise ValueError(f"refresh must be 0 (never) or a number of seconds, not {refresh}")
        self._build, self._refresh = build, refresh
        self._lock = threading.Lock()
        self._page: bytes | None = page.encode() if page is not None else None
        self._built = time.monotonic() if page is not None else 0.0
        self._csp: str = _header_csp(page) if page is not None else "default-src 'none'"
        handler = _handler(self)
        self.httpd = http.server.ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        """Where the page is served."""
        host, port = self.httpd.server_address[:2]
        shown = "localhost" if host in ("127.0.0.1", "::1") else host
        return f"http://{shown!s}:{port}/"

    def page(self) -> tuple[bytes, str]:
        """The current page and its CSP, rebuilt first when it is older than ``refresh`` seconds."""
        with self._lock:
            stale = self._page is None or (self._refresh > 0 and time.monotonic() - self._built >= self._refresh)
            if stale:
                try:
                    text = self._build()
                except Exception as exc:
                    log.warning("dashboard_rebuild_failed", error=f"{type(exc).__name__}: {exc}")
                    if self._page is None:
                        raise
                else:
                    self._page, self._csp = text.encode(), _header_csp(text)
                    self._built = time.monotonic()
            assert self._page is not None
            return self._page, self._csp

    def serve_forever(self) -> None:
        """Serve until ``shutdown()`` (or Ctrl-C in the caller)."""
        self.httpd.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop ``serve_forever`` and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()


def _header_csp(page: str) -> str:
    start = page.find('http-equiv="Content-Security-Policy" content="')
    if start < 0:
        return "default-src 'none'"
    start += len('http-equiv="Content-Security-Policy" content="')
    return html.unescape(page[start:page.index('"', start)]) + "; frame-ancestors 'none'"


def _handler(server: DashboardServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "shadow-dashboard"
        sys_version = ""

        def _send(self, status: int, body: bytes, content_type: str, csp: str, head: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", csp)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _answer(self, head: bool) -> None:
            path = self.path.split("?", 1)[0]
            if path not in PATHS:
                self._send(404, b"not found: the dashboard is at /\n", "text/plain; charset=utf-8",
                           "default-src 'none'", head)
                return
            try:
                body, csp = server.page()
            except Exception:
                self._send(503, b"the dashboard could not be built; see the server's log\n",
                           "text/plain; charset=utf-8", "default-src 'none'", head)
                return
            self._send(200, body, "text/html; charset=utf-8", csp, head)

        def do_GET(self) -> None:
            self._answer(head=False)

        def do_HEAD(self) -> None:
            self._answer(head=True)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("dashboard_request", client=self.client_address[0], line=format % args)

    return Handler


def serve(build: Callable[[], str], *, host: str = "127.0.0.1", port: int = 8050, refresh: float = 60.0,
          page: str | None = None) -> DashboardServer:
    """A server for the dashboard (not started: call ``serve_forever``); ``port=0`` picks a free port."""
    return DashboardServer(build, host=host, port=port, refresh=refresh, page=page)
