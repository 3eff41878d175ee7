"""What every dashboard chart shares: colours, labels, ``text()`` escaping, the base figure and the empty state.

Plotly renders titles, tick labels, legend names, hover text and annotations as a small subset of HTML, so every
string that came from the log (tool names, codes, variants, actors, reasons) passes through ``text()`` first.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, Final

import plotly.graph_objects as go

ARM_COLOURS: Final = {"legacy": "#c8553d", "structured": "#2a6f97"}
OTHER_COLOURS: Final = ("#7b6d8d", "#8a9a5b", "#b08d57", "#5b7b7a")
CODE_COLOURS: Final = (
    "#2a6f97", "#61a5c2", "#a9d6e5", "#468faf", "#c8553d", "#f28f3b", "#ffd5c2", "#588b8b", "#93b7be",
    "#6a4c93", "#b5838d", "#e5989b", "#8a9a5b", "#d4a373", "#9c6644", "#495057",
)
FOLLOW_UP_LABELS: Final = {
    "repeat": "identical repeat (a loop)",
    "repair": "repair (same tool, changed arguments)",
    "other_tool": "another tool",
    "user_turn": "handed over to the user",
    "end": "ended the task",
    "nothing": "nothing after it",
}
FOLLOW_UP_COLOURS: Final = {
    "repeat": "#c8553d", "repair": "#2a6f97", "other_tool": "#93b7be", "user_turn": "#f2c14e", "end": "#8a9a5b",
    "nothing": "#ced4da",
}
FONT: Final = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
UNIT_FORMAT: Final = {"hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d", "week": "week of %Y-%m-%d", "month": "%Y-%m"}
PERIOD_NAMES: Final = {
    ("before", "legacy"): "before cutover (legacy)",
    ("after", "legacy"): "after cutover, legacy arm",
    ("after", "structured"): "after cutover, structured arm",
    ("none", "legacy"): "no cutover in the flag history, legacy arm",
    ("none", "structured"): "no cutover in the flag history, structured arm",
}
PERIOD_STYLE: Final = {
    ("before", "legacy"): ("#9c9c9c", "circle-open"),
    ("after", "legacy"): (ARM_COLOURS["legacy"], "circle"),
    ("after", "structured"): (ARM_COLOURS["structured"], "diamond"),
    ("none", "legacy"): (ARM_COLOURS["legacy"], "square-open"),
    ("none", "structured"): (ARM_COLOURS["structured"], "square-open"),
}


def text(value: object) -> str:
    """``value`` as plotly text that shows literally: ``<``, ``>`` and ``&`` escaped (plotly decodes them back)."""
    return html.escape(str(value), quote=False)


def arm_colour(variant: str, index: int = 0) -> str:
    """The colour of an arm: fixed for legacy and structured, from a small palette for anything else."""
    return ARM_COLOURS.get(variant, OTHER_COLOURS[index % len(OTHER_COLOURS)])


def rgba(colour: str, alpha: float) -> str:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}%}"


def figure(height: int, **layout: Any) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        template="plotly_white", height=height, font={"family": FONT, "size": 13, "color": "#212529"},
        margin={"l": 10, "r": 20, "t": 10, "b": 10}, hoverlabel={"align": "left"},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "xanchor": "left"},
        **layout,
    )
    return fig


def empty(fig: go.Figure, message: str) -> go.Figure:
    fig.add_annotation(text=text(message), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font={"size": 14, "color": "#6c757d"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def ordered_arms(variants: Sequence[str]) -> list[str]:
    known = [v for v in ("legacy", "structured") if v in variants]
    return known + sorted(v for v in set(variants) if v not in known)
