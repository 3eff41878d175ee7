"""The dashboard's charts of what follows an error: follow-up mix and shifts, savings, one session call by call."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from shadow.analytics._report import ArmStats, Savings
from shadow.analytics._report_types import FollowUpShifts
from shadow.dashboard._chart_kit import (
    ARM_COLOURS,
    FOLLOW_UP_COLOURS,
    FOLLOW_UP_LABELS,
    empty,
    figure,
    ordered_arms,
    text,
)
from shadow.dashboard._data import SessionEvent

# --- follow-ups, savings ------------------------------------------------------------------------------------------


def follow_up_mix(variants: Sequence[ArmStats]) -> go.Figure:
    """What came right after each error, per arm, as shares of that arm's errors."""
    arms = [v for v in variants if v.errors]
    fig = figure(200 + 60 * max(1, len(arms)), barmode="stack")
    if not arms:
        return empty(fig, "No errors in this range yet.")
    order = {name: i for i, name in enumerate(ordered_arms([v.variant for v in arms]))}
    arms.sort(key=lambda v: order[v.variant])
    labels = [f"{text(v.variant)} arm" for v in arms]
    for kind, label in FOLLOW_UP_LABELS.items():
        counts = [int(v.follow_ups.get(kind, 0)) for v in arms]
        if not any(counts):
            continue
        shares = [c / v.errors for c, v in zip(counts, arms, strict=True)]
        fig.add_trace(go.Bar(
            y=labels, x=shares, orientation="h", name=label, marker={"color": FOLLOW_UP_COLOURS[kind]},
            text=[f"{s:.0%}" if s >= 0.06 else "" for s in shares], textposition="inside", insidetextanchor="middle",
            customdata=[[c, v.errors] for c, v in zip(counts, arms, strict=True)],
            hovertemplate=f"{label}: %{{x:.1%}} (%{{customdata[0]}} of %{{customdata[1]}} errors)<extra></extra>",
        ))
    fig.update_xaxes(title_text="share of the arm's errors", tickformat=".0%", range=[0, 1])
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)), automargin=True)
    return fig


def savings(s: Savings) -> go.Figure:
    """Identical repeats per 1,000 tasks on each arm of the randomised comparison (errors per task times the arm's
    loop rate); the gap is the round trips the structured payload saves, headlined above the plot with its 95%
    interval, the tool time at the median call latency and the tokens."""
    fig = figure(360)
    if (s.errors_per_task is None or s.wasted_per_error_legacy is None or s.wasted_per_error_structured is None
            or s.round_trips_saved_per_1000_tasks is None):
        return empty(fig, s.message)
    per_k = [s.wasted_per_error_legacy * s.errors_per_task * 1000, s.wasted_per_error_structured * s.errors_per_task
             * 1000]
    fig.add_trace(go.Bar(
        x=["legacy arm", "structured arm"], y=per_k,
        marker={"color": [ARM_COLOURS["legacy"], ARM_COLOURS["structured"]]},
        text=[f"{v:,.0f}" for v in per_k], textposition="outside", name="identical repeats per 1,000 tasks",
        hovertemplate="%{x}: %{y:,.0f} wasted identical repeats per 1,000 tasks<extra></extra>",
    ))
    saved = s.round_trips_saved_per_1000_tasks or 0.0
    ci = ("" if s.round_trips_saved_ci_low is None or s.round_trips_saved_ci_high is None else
          f" (95% {s.round_trips_saved_ci_low:,.0f} to {s.round_trips_saved_ci_high:,.0f})")
    extra = []
    if s.seconds_saved_per_1000_tasks is not None:
        extra.append(f"≈ {_duration(s.seconds_saved_per_1000_tasks)} of tool time")
    else:
        extra.append("tool time not measured (median latency unknown or 0)")
    if s.tokens_saved_per_1000_tasks is not None:
        extra.append(f"≈ {s.tokens_saved_per_1000_tasks:,.0f} tokens")
    fig.add_annotation(text=f"<b>{saved:,.0f} round trips saved per 1,000 tasks</b>{ci}<br>{' · '.join(extra)}",
                       x=0, y=1.02, xref="paper", yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
                       align="left")
    fig.update_yaxes(title_text="identical repeats per 1,000 tasks", rangemode="tozero",
                     range=[0, max(per_k) * 1.18 + 1])
    fig.update_layout(showlegend=False, margin={"t": 60})
    return fig


def follow_up_shifts(shifts: FollowUpShifts) -> go.Figure:
    """Structured minus legacy share of errors for each follow-up, in points, with 95% intervals; the arms' shares
    are written under each follow-up's name, a solid line marks no change."""
    rows = [x for x in shifts.shifts if x.difference is not None and (x.legacy_share or x.structured_share)]
    fig = figure(140 + 48 * max(1, len(rows)))
    if not rows:
        return empty(fig, "No follow-up shifts yet: both arms need errors.")
    design = "randomised" if shifts.design == "randomised" else "observational, not randomised"
    labels = [f"{FOLLOW_UP_LABELS.get(x.follow_up, text(x.follow_up))}<br><span style='font-size:11px;"
              f"color:#6c757d'>legacy {x.legacy_share or 0:.0%} → structured {x.structured_share or 0:.0%}</span>"
              for x in rows]
    diffs = [(x.difference or 0.0) * 100 for x in rows]
    fig.add_trace(go.Scatter(
        y=labels, x=diffs, mode="markers", name=f"change in points ({design})",
        marker={"size": 11, "color": [FOLLOW_UP_COLOURS.get(x.follow_up, "#495057") for x in rows]},
        error_x={"type": "data", "symmetric": False, "color": "#495057", "thickness": 1.5, "width": 4,
                 "array": [((x.ci_high or 0) - (x.difference or 0)) * 100 for x in rows],
                 "arrayminus": [((x.difference or 0) - (x.ci_low or 0)) * 100 for x in rows]},
        customdata=[[(x.ci_low or 0) * 100, (x.ci_high or 0) * 100] for x in rows],
        hovertemplate="%{x:+.1f} points (95% %{customdata[0]:+.1f} to %{customdata[1]:+.1f})<extra></extra>",
    ))
    fig.add_vline(x=0, line={"color": "#495057", "width": 1})
    fig.update_xaxes(title_text="change in points (structured − legacy)", zeroline=False)
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)), automargin=True)
    fig.update_layout(showlegend=False)
    return fig


def _duration(seconds: float) -> str:
    if abs(seconds) < 120:
        return f"{seconds:,.1f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:,.1f} min"
    return f"{seconds / 3600:,.1f} h"


# --- one session (for the notebook) -------------------------------------------------------------------------------


def session_timeline(events: Sequence[SessionEvent]) -> go.Figure:
    """One session call by call: each call a marker on its tool's row (errors red), identical repeats ringed,
    hand-overs to the user and the end as dotted lines."""
    calls = [(i, e) for i, e in enumerate(events) if e.kind == "call"]
    tools = list(dict.fromkeys(text(e.tool) for _, e in calls))
    fig = figure(140 + 36 * max(1, len(tools)))
    if not calls:
        return empty(fig, "This session has no calls.")
    groups = (("ok", "call that succeeded", "#2a9d8f", "circle"), ("error", "error", "#c8553d", "x"))
    for outcome, name, colour, symbol in groups:
        mine = [(i, e) for i, e in calls if (e.outcome == "error") == (outcome == "error")]
        if mine:
            fig.add_trace(go.Scatter(
                x=[i + 1 for i, _ in mine], y=[text(e.tool) for _, e in mine], mode="markers", name=name,
                marker={"color": colour, "symbol": symbol, "size": 12},
                customdata=[[e.seq, text(e.variant or ""), text(e.code or "–"), text(e.next_action or "–"),
                             text(e.follow_up or "–")] for _, e in mine],
                hovertemplate=("seq %{customdata[0]} · %{customdata[1]}<br>code %{customdata[2]}, next_action "
                               "%{customdata[3]}<br>then: %{customdata[4]}<extra></extra>"),
            ))
    repeats = [(i, e) for i, e in calls if e.repeats_previous]
    if repeats:
        fig.add_trace(go.Scatter(
            x=[i + 1 for i, _ in repeats], y=[text(e.tool) for _, e in repeats], mode="markers",
            name="identical repeat of the call before", hoverinfo="skip",
            marker={"color": "rgba(0,0,0,0)", "size": 22, "line": {"color": "#c8553d", "width": 2}},
        ))
    for i, e in enumerate(events):
        if e.kind != "call":
            fig.add_vline(x=i + 1, line={"color": "#6c757d", "dash": "dot"},
                          annotation={"text": text(e.kind.replace("_", " ")), "font": {"color": "#6c757d"}})
    fig.update_xaxes(title_text="event in the session", dtick=1 if len(events) <= 40 else None)
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(tools)), automargin=True)
    return fig
