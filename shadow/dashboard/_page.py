"""The cutover dashboard: one self-contained HTML page (plotly.js inline, works offline), written 0644 or private."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from shadow.analytics._report_types import FollowUpShifts
from shadow.analytics._sql import ModelEngine
from shadow.contract._rules import Rules
from shadow.dashboard import _charts as charts
from shadow.dashboard import _sections as sections
from shadow.dashboard._data import DashboardData, collect
from shadow.dashboard._serve import PATHS, DashboardServer, serve
from shadow.dashboard._style import STYLE

__all__ = [
    "PANELS", "PATHS", "DashboardServer", "OutputError", "Panel", "build_dashboard", "figures", "render",
    "script_json", "serve", "write_dashboard", "write_page",
]


@dataclass(frozen=True, slots=True)
class Panel:
    """One chart on the page: its key (the element id is ``chart-<key>``), title and what it shows."""

    key: str
    title: str
    explains: str


PANELS: Final = (
    Panel("loop_rate", "Loop rate over time, per arm",
          "How often an error was followed by the identical call, per arm over time (bands: 95% intervals; "
          "vertical lines: flag changes, solid for a cutover; hover the triangles for who and why)."),
    Panel("before_after", "Per tool: before vs after cutover",
          "Each tool's loop rate before its cutover and after it in each arm (bars: 95% intervals); under the "
          "name, structured minus legacy in points with its interval and p-value."),
    Panel("readiness", "Cutover readiness: unmapped and schema-invalid",
          "How many of a tool's errors no rule mapped and how many payloads failed the schema; a bar past the "
          "dashed gate line means the tool is not ready."),
    Panel("code_mix", "Error code mix",
          "Which codes each tool's errors get in the structured payload (both arms); the hatched part matched no "
          "rule (served rejected, internal_error or the built-in phrase table's guess)."),
    Panel("follow_ups", "What the agent did after an error",
          "The first thing after each error, per arm, as a share of the arm's errors (whole range)."),
    Panel("follow_up_shifts", "Follow-up shifts between the arms",
          "How much each follow-up's share changed from legacy to structured, in points with 95% intervals; "
          "right of the line means more often on structured."),
    Panel("savings", "Savings per 1,000 tasks (randomised)",
          "Identical repeats per 1,000 tasks in each arm of the randomised split; the gap is the round trips the "
          "structured payload saves (tool time at the median latency, tokens at 4 bytes per token)."),
)

_LOADER: Final = """(function () {
  var config = {displayModeBar: false, displaylogo: false, responsive: true, showSendToCloud: false};
  var nodes = document.querySelectorAll("script.figure-data");
  for (var i = 0; i < nodes.length; i++) {
    var spec = JSON.parse(nodes[i].textContent);
    Plotly.newPlot(nodes[i].getAttribute("data-target"), spec.data, spec.layout, config);
  }
})();"""

class OutputError(ValueError):
    """The dashboard cannot be written where asked; the message says how to fix it."""


def script_json(value: Any) -> str:
    """JSON text safe inside a ``<script>`` element: ``<``, ``>``, ``&`` and the JS line separators escaped, so no
    logged string can close the element or start markup, whatever the encoder did."""
    text = value if isinstance(value, str) else pio.to_json(value, validate=False, pretty=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


_NO_SHIFTS: Final = FollowUpShifts("none", ())


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
        "follow_up_shifts": charts.follow_up_shifts(data.report.follow_up_shifts or _NO_SHIFTS),
        "savings": charts.savings(data.report.savings),
    }
    assert list(out) == [p.key for p in PANELS]
    return out


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
            f'<section class="panel{wide}" id="panel-{panel.key}"><h2>{sections.e(panel.title)}</h2>'
            f'<p class="explains">{sections.e(panel.explains)}</p><div class="chart" id="chart-{panel.key}"></div>'
            f'<script type="application/json" class="figure-data" data-target="chart-{panel.key}">'
            f"{script_json(figs[panel.key])}</script></section>")
    methods = data.report.methods
    footer = (
        "<footer><p><b>Definitions.</b> An error is followed by a loop when the next call in the same session (marks "
        "such as a user turn are skipped) goes to the same tool with an identical argument fingerprint. Loop rate = "
        "errors followed by a loop / errors. The arm of a call is the variant served to the model (legacy or "
        "structured).</p>"
        f"<p><b>Methods.</b> {sections.e(methods.get('interval', ''))} intervals per arm and bucket; the test: "
        f"{sections.e(methods.get('test', ''))}, {sections.e(methods.get('cluster_interval', ''))}. Readiness uses "
        f"the gate's thresholds: at least {data.thresholds.min_calls} calls and {data.thresholds.min_errors} "
        f"errors, at most {data.thresholds.max_unmapped_share:.0%} unmapped, at most "
        f"{data.thresholds.max_schema_invalid} schema-invalid payloads. Power: "
        f"{sections.e(methods.get('power', ''))}. Savings: {sections.e(methods.get('savings', ''))}; they leave "
        f"out {sections.e('; '.join(data.report.savings.leaves_out))}.</p>"
        "<p>Generated by <code>shadow dashboard</code>. This file is self-contained: it loads nothing from the "
        "network.</p></footer>")
    body = "\n".join([
        sections.header(data),
        '<main><noscript><p class="notice">The charts need JavaScript; the tables below hold the numbers.</p>'
        "</noscript>",
        f'<div class="grid">{sections.tool_rows(data)}{"".join(panels)}{sections.flag_rows(data)}'
        f"{sections.health(data)}{sections.evidence(data)}</div></main>",
        footer,
    ])
    title = "Cutover dashboard" + (f" · {data.report.filters.tool}" if data.report.filters.tool else "")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{sections.e(_csp([plotly_js, _LOADER]))}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{sections.e(title)}</title>",
        f"<style>{STYLE}</style>",
        f"<script>{plotly_js}</script>",
        "</head><body>",
        body,
        f"<script>{_LOADER}</script>",
        "</body></html>",
    ])


def build_dashboard(models: ModelEngine, *, tool: str | None = None, since: dt.datetime | None = None,
                    until: dt.datetime | None = None, subtitle: str | None = None, rules: Rules | None = None,
                    rules_name: str = "the given rules") -> str:
    """The dashboard's HTML from a synced warehouse or ``SparkModels`` (``tool``, ``since``, ``until``, ``rules``
    as for the report)."""
    return render(collect(models, tool=tool, since=since, until=until, subtitle=subtitle, rules=rules,
                          rules_name=rules_name))


def write_dashboard(models: ModelEngine, out: Path, *, tool: str | None = None, since: dt.datetime | None = None,
                    until: dt.datetime | None = None, subtitle: str | None = None, private: bool = False) -> Path:
    """Write the dashboard to ``out`` (replaced whole, never left half-written); returns the path written."""
    page = build_dashboard(models, tool=tool, since=since, until=until, subtitle=subtitle)
    return write_page(page, out, private=private)


def _mode(private: bool) -> int:
    """0600 when ``private``, else what a plain new file gets: 0666 less the umask (0644 under the usual 022)."""
    if private:
        return 0o600
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_page(page: str, out: Path, *, private: bool = False) -> Path:
    """Write ``page`` to ``out`` atomically (a temporary file beside it, then a rename), readable as an ordinary
    file (0644 under umask 022) or only by its owner when ``private``; ``OutputError`` when ``out`` is a directory
    or its folder does not exist."""
    target = Path(out)
    if target.is_dir():
        raise OutputError(f"{target} is a directory; give a file name, for example {target / 'cutover.html'}")
    if not target.parent.is_dir():
        raise OutputError(f"the folder {target.parent} does not exist; create it or choose another --out")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.chmod(tmp, _mode(private))  # mkstemp made it 0600
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
