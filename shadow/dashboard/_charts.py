"""The dashboard's charts: one function per chart, aggregates in, a plotly Figure out; no I/O.

This module holds the loop rate over time, before vs after, the code mix and readiness, and re-exports the rest
(``_charts_more``) and the shared kit (``_chart_kit``), so ``_charts.<chart>`` names every chart.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from shadow.analytics._report import FlagChange, ToolReport
from shadow.analytics._thresholds import Thresholds
from shadow.contract._codes import CODE_TABLE
from shadow.dashboard._chart_kit import (
    ARM_COLOURS,
    CODE_COLOURS,
    FOLLOW_UP_COLOURS,
    FOLLOW_UP_LABELS,
    FONT,
    OTHER_COLOURS,
    PERIOD_NAMES,
    PERIOD_STYLE,
    UNIT_FORMAT,
    arm_colour,
    empty,
    figure,
    ordered_arms,
    pct,
    rgba,
    text,
)
from shadow.dashboard._charts_more import follow_up_mix, follow_up_shifts, savings, session_timeline
from shadow.dashboard._data import NO_CODE, OTHER_CODES, Bucket, CodeCount, LoopSeries, ToolReadiness

__all__ = [
    "ARM_COLOURS", "CODE_COLOURS", "FOLLOW_UP_COLOURS", "FOLLOW_UP_LABELS", "FONT", "OTHER_COLOURS", "arm_colour",
    "before_after", "code_mix", "follow_up_mix", "follow_up_shifts", "loop_rate_over_time", "readiness", "savings",
    "session_timeline", "text", "tool_label",
]

# --- loop rate over time ----------------------------------------------------------------------------------------


def _change_line(change: FlagChange) -> str:
    old = "new" if change.old_mode is None else f"{change.old_mode}{_percent(change.old_mode, change.old_percent)}"
    new = f"{change.new_mode}{_percent(change.new_mode, change.new_percent)}"
    who = f" by {text(change.actor)}" if change.actor else ""
    why = f": {text(change.reason)}" if change.reason else ""
    name = "every tool (kill switch)" if change.tool == "*" else text(change.tool)
    return f"{name}: {text(old)} → {text(new)}{who}{why}"


def _percent(mode: str | None, percent: int | None) -> str:
    return f" {percent}%" if mode == "cutover" and percent is not None else ""


def loop_rate_over_time(series: LoopSeries, changes: Sequence[FlagChange], *, max_listed: int = 6) -> go.Figure:
    """Loop rate per arm and time bucket with Wilson 95% bands; flag changes marked as vertical lines
    (solid: a cutover, dotted: any other change), their details in the hover of the markers on top."""
    fig = figure(420, hovermode="closest")
    points = [b for b in series.buckets if b.loop_rate is not None]
    if not points:
        return empty(fig, "No errors in this range yet: the loop rate needs errors.")
    arms = ordered_arms([b.variant for b in points])
    for i, arm in enumerate(arms):
        mine = sorted((b for b in points if b.variant == arm), key=lambda b: b.start)
        colour, name = arm_colour(arm, i), text(arm)
        xs = [_where(series, b) for b in mine]  # where its errors are, not at the bucket's start
        fig.add_trace(go.Scatter(x=xs, y=[b.ci_high for b in mine], mode="lines", line={"width": 0},
                                 legendgroup=name, showlegend=False, hoverinfo="skip", name=f"{name} 95% high"))
        fig.add_trace(go.Scatter(x=xs, y=[b.ci_low for b in mine], mode="lines", line={"width": 0}, fill="tonexty",
                                 fillcolor=rgba(colour, 0.18), legendgroup=name, hoverinfo="skip",
                                 name=f"{name}: 95% interval (Wilson)"))
        fig.add_trace(go.Scatter(
            x=xs, y=[b.loop_rate for b in mine], mode="lines+markers", name=f"{name} arm", legendgroup=name,
            line={"color": colour, "width": 2.5}, marker={"size": 6},
            customdata=[[_bucket_label(series, b), b.loops, b.errors, pct(b.ci_low), pct(b.ci_high)]
                        for b in mine],
            hovertemplate=("%{customdata[0]}<br>loop rate %{y:.1%} (95% %{customdata[3]} to %{customdata[4]})"
                           f"<br>%{{customdata[1]}} loops after %{{customdata[2]}} errors<extra>{name}</extra>"),
        ))
    top = min(1.0, max(b.ci_high or 0.0 for b in points) * 1.15 + 0.05)
    first, last = min(b.start for b in points), max(b.start for b in points)
    moments: dict[dt.datetime, list[FlagChange]] = {}
    for change in changes:
        if first - _unit_span(series) <= change.ts <= last + _unit_span(series):
            moments.setdefault(change.ts, []).append(change)
    xs, hover = [], []
    for ts, group in sorted(moments.items()):
        cutover = any(c.is_cutover for c in group)
        fig.add_vline(x=ts, line={"color": "#495057", "width": 1.5 if cutover else 1,
                                  "dash": "solid" if cutover else "dot"})
        lines = [_change_line(c) for c in group[:max_listed]]
        if len(group) > max_listed:
            lines.append(f"and {len(group) - max_listed} more")
        xs.append(ts)
        hover.append(f"{ts:%Y-%m-%d %H:%M} UTC · {'cutover' if cutover else 'flag change'}<br>" + "<br>".join(lines))
    if xs:
        fig.add_trace(go.Scatter(
            x=xs, y=[top * 0.97] * len(xs), mode="markers", name="flag changes (hover for who and why)",
            marker={"symbol": "triangle-down", "size": 11, "color": "#495057"}, hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
        ))
    fig.update_yaxes(title_text="loop rate", tickformat=".0%", range=[0, top],
                     rangemode="tozero")
    fig.update_xaxes(title_text=f"{series.unit} (UTC)")
    return fig


def _where(series: LoopSeries, bucket: Bucket) -> dt.datetime:
    """A bucket's point: midway between its first and last error (an hour's errors of two minutes sit in those two
    minutes, not half an hour later, past the last call and the cutover), else the bucket's middle."""
    if bucket.first is not None and bucket.last is not None:
        return bucket.first + (bucket.last - bucket.first) / 2
    return _middle(series, bucket.start)


def _middle(series: LoopSeries, start: dt.datetime) -> dt.datetime:
    if series.unit == "month":
        following = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1, day=1)
        return start + (following - start) / 2
    return start + _unit_span(series) / 2


def _unit_span(series: LoopSeries) -> dt.timedelta:
    return {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1), "week": dt.timedelta(weeks=1),
            "month": dt.timedelta(days=31)}[series.unit]


def _bucket_label(series: LoopSeries, bucket: Bucket) -> str:
    return bucket.start.strftime(UNIT_FORMAT[series.unit]) + " UTC"


# --- per tool, before vs after ------------------------------------------------------------------------------------


def _verdict(tool: ToolReport) -> str:
    t = tool.comparison.test
    if tool.comparison.design == "none":
        return "no two-arm comparison yet"
    if t.verdict == "too_few_errors" or t.difference is None:
        return "too few errors for a verdict"
    p = "p < 0.001" if t.p_value is not None and t.p_value < 0.001 else f"p = {t.p_value:.3f}"
    ci = "" if t.ci_low is None or t.ci_high is None else f" (95% {t.ci_low * 100:+.1f} to {t.ci_high * 100:+.1f})"
    kind = "randomised" if tool.comparison.design == "randomised" else "observational"
    return f"{t.difference * 100:+.1f} pts{ci}, {p}, {kind}"


def tool_label(tool: str, ready: bool | None) -> str:
    """A tool's axis label (escaped); a tool that is not ready is marked in red."""
    if ready is False:
        return f"<span style='color:#b00020'>{text(tool)} ⚠ not ready</span>"
    return text(tool)


def _rows_of(tool: ToolReport) -> list[tuple[tuple[str, str], int, int, float | None, float | None, float | None]]:
    """(period, arm) rows of a tool: its periods around the cutover, else its arms over the whole range."""
    if tool.periods:
        return [((p.period, p.variant), p.errors, p.loops, p.loop_rate, p.ci_low, p.ci_high) for p in tool.periods]
    return [(("none", v.variant), v.errors, v.loops, v.loop_rate, v.ci_low, v.ci_high) for v in tool.variants]


def before_after(tools: Sequence[ToolReport], readiness: Mapping[str, ToolReadiness] | None = None) -> go.Figure:
    """Per tool: the loop rate before its cutover, and after it in each arm, with Wilson 95% intervals; under each
    tool's name the two-arm test (difference in points, its interval, p-value); tools not ready marked."""
    ready = readiness or {}
    fig = figure(170 + 78 * max(1, len(tools)), scattermode="group", scattergap=0.45)
    if not tools:
        return empty(fig, "No tool calls in this range.")
    labels = {t.tool: f"{tool_label(t.tool, ready[t.tool].ready if t.tool in ready else None)}"
                      f"<br><span style='font-size:11px;color:#6c757d'>{text(_verdict(t))}</span>"
              for t in tools}
    series: dict[tuple[str, str], list[tuple[str, int, int, float, float, float]]] = {}
    for t in tools:
        for key, errors, loops, rate, low, high in _rows_of(t):
            if rate is None or low is None or high is None or key not in PERIOD_NAMES:
                continue
            series.setdefault(key, []).append((labels[t.tool], errors, loops, rate, low, high))
    for key in reversed(PERIOD_NAMES):  # grouped markers stack upwards: "before" ends up on top
        rows = series.get(key)
        if not rows:
            continue
        colour, symbol = PERIOD_STYLE[key]
        fig.add_trace(go.Scatter(
            y=[r[0] for r in rows], x=[r[3] for r in rows], orientation="h", mode="markers",
            name=PERIOD_NAMES[key], marker={"color": colour, "symbol": symbol, "size": 10, "line": {"width": 2}},
            error_x={"type": "data", "symmetric": False, "array": [r[5] - r[3] for r in rows],
                     "arrayminus": [r[3] - r[4] for r in rows], "color": colour, "thickness": 1.5, "width": 4},
            customdata=[[r[2], r[1], pct(r[4]), pct(r[5])] for r in rows],
            hovertemplate=(f"{PERIOD_NAMES[key]}<br>loop rate %{{x:.1%}} (95% %{{customdata[2]}} to "
                           "%{customdata[3]})<br>%{customdata[0]} loops after %{customdata[1]} errors<extra></extra>"),
        ))
    if not fig.data:
        return empty(fig, "No errors in this range yet: the loop rate needs errors.")
    fig.update_yaxes(categoryorder="array", categoryarray=[labels[t.tool] for t in reversed(tools)],
                     automargin=True)
    highest = max(r[5] for rows in series.values() for r in rows)
    fig.update_xaxes(title_text="loop rate", tickformat=".0%", range=[-0.02, min(1.02, highest + 0.05)])
    fig.update_layout(legend={"traceorder": "reversed"})
    return fig


# --- error codes, readiness ---------------------------------------------------------------------------------------


def _code_order(codes: set[str]) -> list[str]:
    known = [c.value for c in CODE_TABLE if c.value in codes]
    rest = sorted(c for c in codes if c not in known and c not in (OTHER_CODES, NO_CODE))
    return known + rest + [c for c in (OTHER_CODES, NO_CODE) if c in codes]


def code_mix(counts: Sequence[CodeCount], tools: Sequence[str],
             readiness: Mapping[str, ToolReadiness] | None = None) -> go.Figure:
    """Errors per tool, stacked by the code the structured payload gives (both arms); the errors no rule mapped
    (served rejected, internal_error or the phrase table's guess) are their own hatched segment."""
    ready = readiness or {}
    fig = figure(200 + 40 * max(1, len(tools)), barmode="stack")
    if not any(c.errors for c in counts):
        return empty(fig, "No errors in this range yet.")
    labels = {t: tool_label(t, ready[t].ready if t in ready else None) for t in tools}
    order = _code_order({c.code for c in counts})
    colours = {code: CODE_COLOURS[i % len(CODE_COLOURS)] for i, code in enumerate(order)}
    for code in order:
        rows = [(labels[c.tool], c.errors - c.unmapped) for c in counts if c.code == code and c.tool in labels
                and c.errors - c.unmapped > 0]
        if rows:
            fig.add_trace(go.Bar(y=[r[0] for r in rows], x=[r[1] for r in rows], orientation="h", name=text(code),
                                 marker={"color": colours[code]},
                                 hovertemplate=f"{text(code)}: %{{x}} errors<extra></extra>"))
    unmapped: dict[str, int] = {}
    for c in counts:
        if c.unmapped and c.tool in labels:
            unmapped[labels[c.tool]] = unmapped.get(labels[c.tool], 0) + c.unmapped
    if unmapped:
        fig.add_trace(go.Bar(y=list(unmapped), x=list(unmapped.values()), orientation="h",
                             name="unmapped (no rule matched: internal_error)",
                             marker={"color": "#ffffff", "line": {"color": "#b00020", "width": 1.5},
                                     "pattern": {"shape": "/", "fgcolor": "#b00020", "size": 6}},
                             hovertemplate="unmapped: %{x} errors<extra></extra>"))
    fig.update_yaxes(categoryorder="array", categoryarray=[labels[t] for t in reversed(tools)], automargin=True)
    fig.update_xaxes(title_text="errors")
    return fig


def readiness(rows: Sequence[ToolReadiness], thresholds: Thresholds) -> go.Figure:
    """Cutover readiness per tool: the share of errors no rule mapped, and of calls whose payload failed the
    schema; the gate's limit on the unmapped share drawn as a dashed line, tools not ready marked. The figures
    are written under each tool's name, not on the bars, so no label can sit on the gate's line."""
    fig = figure(150 + 66 * max(1, len(rows)), barmode="group")
    if not rows:
        return empty(fig, "No tool calls in this range.")
    labels = [f"{tool_label(r.tool, r.ready)}<br><span style='font-size:11px;color:#6c757d'>unmapped "
              f"{pct(r.unmapped_share)} · schema-invalid {pct(r.schema_invalid_share)}</span>" for r in rows]
    hover = ["<br>".join(text(reason) for reason in r.reasons) or "passes the count checks" for r in rows]
    fig.add_trace(go.Bar(
        y=labels, x=[r.unmapped_share or 0.0 for r in rows], orientation="h", name="unmapped, share of errors",
        marker={"color": "#c8553d"},
        customdata=[[r.unmapped_errors, r.errors, h] for r, h in zip(rows, hover, strict=True)],
        hovertemplate="%{customdata[0]} of %{customdata[1]} errors unmapped<br>%{customdata[2]}<extra></extra>",
    ))
    fig.add_trace(go.Bar(
        y=labels, x=[r.schema_invalid_share or 0.0 for r in rows], orientation="h",
        name="schema-invalid, share of calls", marker={"color": "#6a4c93"},
        customdata=[[r.schema_invalid_calls, r.calls, h] for r, h in zip(rows, hover, strict=True)],
        hovertemplate=("%{customdata[0]} of %{customdata[1]} payloads failed the schema<br>%{customdata[2]}"
                       "<extra></extra>"),
    ))
    limit = thresholds.max_unmapped_share
    highest = max([limit, *(r.unmapped_share or 0.0 for r in rows), *(r.schema_invalid_share or 0.0 for r in rows)])
    fig.add_vline(x=limit, line={"color": "#b00020", "dash": "dash", "width": 1.5})
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", hoverinfo="skip",  # the line's legend entry
                             line={"color": "#b00020", "dash": "dash", "width": 1.5},
                             name=f"gate: at most {limit:.0%} unmapped"))
    fig.update_xaxes(title_text="share", tickformat=".0%", range=[0, min(1.05, highest * 1.15 + 0.02)])
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)), automargin=True)
    return fig
