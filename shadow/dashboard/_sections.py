"""The dashboard's HTML besides the charts: header, recommendations, per-tool table, evidence, health, flags.

Every logged string is escaped; `code` spans become <code> elements.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from typing import Any, Final

from shadow.analytics._report import ArmStats, ToolReport
from shadow.analytics._report_types import rules_note, synthetic_time_note
from shadow.analytics._text import counted
from shadow.dashboard._data import DashboardData

_TICKS: Final = re.compile(r"`([^`\n]{1,200})`")
ACTION_WORDS: Final = {
    "raise": "raise the percentage", "hold": "hold", "fix_rules": "fix the rules", "rollback": "roll back",
    "done": "done",
}


def e(value: object) -> str:
    """``value`` escaped for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def md(value: object) -> str:
    """``value`` escaped, with `backtick spans` shown as code instead of literal backticks."""
    return _TICKS.sub(lambda m: f"<code>{m.group(1)}</code>", e(value))


def when(value: dt.datetime | None) -> str:
    return "–" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"95% {low:.1%} to {high:.1%}"


def _arm_card(arm: ArmStats | None, variant: str) -> str:
    if arm is None:
        return (f'<div class="card"><div class="label">{e(variant)} arm</div><div class="value">–</div>'
                f'<div class="detail">no calls served {e(variant)}</div></div>')
    return (f'<div class="card"><div class="label">loop rate, {e(variant)} arm, whole range</div>'
            f'<div class="value {e(variant)}">{_pct(arm.loop_rate)}</div>'
            f'<div class="detail">{arm.loops:,} loops after {arm.errors:,} errors; {e(_ci(arm.ci_low, arm.ci_high))}'
            f"</div></div>")


def recommendations(data: DashboardData) -> str:
    """One line per tool: the action and the reasons in words. The first section of the page."""
    shown = {t.tool for t in data.tools}
    items = []
    for t in data.report.by_tool:
        if t.tool not in shown or t.recommendation is None:
            continue
        r = t.recommendation
        items.append(f'<li class="rec"><span class="tool">{e(t.tool)}</span> <span class="action {e(r.action)}">'
                     f"{e(ACTION_WORDS.get(r.action, r.action))}</span> <span class=\"why\">"
                     f"{md('; '.join(r.reasons))}</span></li>")
    if not items:
        return ""
    return ('<section id="recommendations" aria-label="Recommendation per tool"><h2>What to do next, per tool</h2>'
            f'<p class="explains" id="rules-used">{e(rules_note(data.report))}</p>'
            f'<ul class="recs">{"".join(items)}</ul></section>')


def header(data: DashboardData) -> str:
    """Title, facts, recommendations (first), the subtitle and notices, then the headline cards."""
    r = data.report
    d = r.data_range
    scope = f" · tool {e(r.filters.tool)}" if r.filters.tool else ""
    since = f" · since {e(when(r.filters.since))}" if r.filters.since else ""
    parts = [
        "<header>",
        f"<h1>Cutover dashboard{scope}</h1>",
        f'<p class="facts">Data from {e(when(d.first_call))} to {e(when(d.last_call))}{since} · '
        f"{counted(d.calls, 'call')} · {counted(d.errors, 'error')} · {counted(d.sessions, 'session')} · generated "
        f"{e(when(data.generated_at))}</p>",
    ]
    if data.subtitle:
        parts.append(f'<p class="subtitle" role="note">{e(data.subtitle)}</p>')
    if (synthetic := synthetic_time_note(d)) is not None:
        parts.append(f'<p class="subtitle" id="synthetic-times" role="note">{e(synthetic)}</p>')
    parts.append(recommendations(data))
    parts += [f'<p class="notice">{md(n)}</p>' for n in data.notices]
    arms = {v.variant: v for v in r.variants}
    c = r.comparison
    s = r.savings
    compared = e(c.scope if c.design == "none" else f"{c.scope}, {c.design}")  # "none": the message says why
    saved_by = "" if s.design == "none" else f" ({e(s.design)})"
    saved = "–" if s.round_trips_saved_per_1000_tasks is None else f"{s.round_trips_saved_per_1000_tasks:,.0f}"
    parts += [
        '<div class="cards">',
        _arm_card(arms.get("legacy"), "legacy"),
        _arm_card(arms.get("structured"), "structured"),
        f'<div class="card"><div class="label">structured minus legacy ({compared})</div>'
        f'<div class="value">{"–" if c.test.difference is None else f"{c.test.difference * 100:+.1f} pts"}</div>'
        f'<div class="detail">{e(c.test.message)}</div></div>',
        f'<div class="card"><div class="label">round trips saved per 1,000 tasks{saved_by}</div>'
        f'<div class="value">{saved}</div><div class="detail">{e(s.message)}</div></div>',
        "</div>",
        "</header>",
    ]
    return "\n".join(p for p in parts if p)


def _period_cell(tool: ToolReport, key: tuple[str, str]) -> str:
    p = next((p for p in tool.periods if (p.period, p.variant) == key), None)
    return "–" if p is None or p.loop_rate is None else f"{p.loop_rate:.1%} ({p.loops:,}/{p.errors:,})"


def _power_cell(t: ToolReport) -> str:
    p = t.power
    if p is None or p.errors_per_arm_needed is None:
        return e(p.message) if p is not None else "–"
    days = "" if p.days_needed is None or not p.more_errors_per_arm else f", ≈ {p.days_needed:,.1f} days"
    return (f"{p.errors_per_arm_needed:,} per arm (design effect {p.design_effect:.2f}); "
            f"{p.more_errors_per_arm or 0:,} more{days}")


def tool_rows(data: DashboardData) -> str:
    """Per tool: readiness, before vs after, the two-arm test, and the power."""
    ready = {r.tool: r for r in data.readiness}
    rows = []
    for t in data.tools:
        gate = ready[t.tool]
        verdict = ('<span class="good">ready</span>' if gate.ready else
                   '<span class="bad">not ready</span>: ' + md("; ".join(gate.reasons)))
        cells = "".join(f"<td class='num'>{_period_cell(t, key)}</td>"
                        for key in (("before", "legacy"), ("after", "legacy"), ("after", "structured")))
        design = "" if t.comparison.design == "none" else f"{e(t.comparison.design)}: "
        rows.append(
            f"<tr><td>{e(t.tool)}</td><td>{verdict}</td><td class='num'>{t.calls:,}</td>"
            f"<td class='num'>{t.errors:,}</td><td class='num'>{e(when(t.cutover_at))}</td>{cells}"
            f"<td>{design}{e(t.comparison.test.message)}{_give_ups_cell(t)}</td><td>{_power_cell(t)}</td></tr>")
    reduction = next((t.power.relative_reduction for t in data.tools if t.power is not None), 0.3)
    head = ("<tr><th>tool</th><th>readiness (count checks; <code>shadow ready TOOL</code> also scans for leaks)</th>"
            "<th>calls</th><th>errors</th><th>cutover</th><th>before (legacy)</th><th>after, legacy</th>"
            f"<th>after, structured</th><th>two-arm test</th><th>errors per arm to see a {reduction:.0%} drop "
            "(80% power)</th></tr>")
    return ('<section class="panel wide" id="panel-tools"><h2>Per tool: readiness, the test and its power</h2>'
            '<p class="explains">One row per tool: is its log good enough, its loop rate before and after cutover, '
            'the randomised test, and how many more errors the test needs.</p>'
            f'<div class="table-wrap"><table id="tools">{head}{"".join(rows)}</table></div></section>')


def _json(value: Any) -> str:
    return e(json.dumps(value, ensure_ascii=False, indent=None))


def evidence(data: DashboardData) -> str:
    """Per tool: example pairs per frequent code (legacy, then structured; redacted) and unmapped shapes."""
    blocks = []
    for t in data.tools:
        ev = t.evidence
        if ev is None or (not ev.codes and not ev.unmapped):
            continue
        parts = [f"<details><summary><b>{e(t.tool)}</b>: examples of {counted(len(ev.codes), 'frequent code')}, "
                 f"{counted(ev.unmapped_shapes, 'unmapped shape')}</summary>"]
        for c in ev.codes:
            parts.append(f"<h3>{e(c.code)} <span class='muted'>({c.errors:,} errors)</span></h3>")
            for ex in c.examples:
                parts.append(f"<div class='pair'><div><span class='muted'>legacy</span><pre>{_json(ex.legacy)}</pre>"
                             f"</div><div><span class='muted'>structured</span><pre>{_json(ex.structured)}</pre>"
                             "</div></div>")
        if ev.unmapped:
            rows = "".join(f"<tr><td class='num'>{u.errors:,}</td><td><code>{e(u.shape)}</code></td></tr>"
                           for u in ev.unmapped)
            parts.append(f"<h3>Unmapped, by shape</h3><table class='shapes'><tr><th>errors</th><th>shape</th></tr>"
                         f"{rows}</table>")
        parts.append("</details>")
        blocks.append("".join(parts))
    if not blocks:
        return ""
    return ('<section class="panel wide" id="panel-evidence"><h2>Evidence: what the model saw</h2>'
            '<p class="explains">Open a tool to compare what the legacy tool returned with the structured payload, '
            "for its most frequent codes, and the unmapped errors grouped by shape (redacted, capped).</p>"
            f"{''.join(blocks)}</section>")


def follow_ups_unknown(data: DashboardData) -> str:
    """How many errors of this view have an unknown follow-up (records missing right after them) and sessions gaps."""
    d = data.report.data_range
    unknown = sum(v.follow_ups.get("unknown", 0) for v in data.report.variants)
    errors = sum(v.errors for v in data.report.variants) + unknown
    if not unknown and not d.sessions_with_gaps:
        return ("Every error's follow-up is known: no records are missing in the "
                f"{counted(d.sessions, 'session')} shown.")
    return (f"Missing records: {unknown:,} of {errors:,} errors have an unknown follow-up (records are missing "
            f"right after them) and are left out of the loop rate; {d.sessions_with_gaps:,} of {d.sessions:,} "
            "sessions shown have gaps in their sequence numbers.")


def health(data: DashboardData) -> str:
    """The log's health: errors with an unknown follow-up, sequence gaps, the writer's counters, the processes."""
    h = data.report.health
    shown = f"<p id='follow-ups-unknown'>{e(follow_ups_unknown(data))}</p>"
    if h is None:
        return f'<section class="panel" id="panel-health"><h2>Health of the log</h2>{shown}</section>'
    counters = ("" if not h.writer_counters else
                f"; writer counters: {h.written:,} written, {h.spooled:,} spooled, {h.replayed:,} replayed, "
                f"{h.dropped:,} dropped")
    rows = "".join(f"<tr><td>{e(p.process)}</td><td>{e(p.host)}</td><td class='num'>{p.calls:,}</td>"
                   f"<td class='num'>{e(when(p.last_write))}</td>"
                   f"<td class='num'>{'not recorded' if p.dropped is None else f'{p.dropped:,}'}</td></tr>"
                   for p in h.processes)
    return ('<section class="panel" id="panel-health"><h2>Health of the log</h2><p class="explains">'
            "Whether records went missing: errors whose follow-up is unknown, sessions whose sequence numbers "
            f"have holes, and when each writing process last wrote.</p>{shown}<p>Whole log: {e(h.message)}"
            f"{e(counters)}.</p><table id='processes'><tr><th>process</th><th>host</th><th>calls</th>"
            f"<th>last wrote</th><th>dropped</th></tr>{rows}</table></section>")


def flag_rows(data: DashboardData) -> str:
    """The flag history, latest first, in full (at most ``MAX_FLAG_CHANGES`` rows; no inner scroll box)."""
    if not data.flag_changes:
        return ('<section class="panel" id="panel-flags"><h2>Flag history</h2><p class="explains">No flag '
                "changes in the audit log: set flags with <code>shadow flags set</code> so cutovers are marked."
                "</p></section>")
    rows = []
    for f in reversed(data.flag_changes):
        old = "–" if f.old_mode is None else f"{f.old_mode}{f' {f.old_percent}%' if f.old_mode == 'cutover' else ''}"
        new = f"{f.new_mode}{f' {f.new_percent}%' if f.new_mode == 'cutover' else ''}"
        tool = "every tool (kill switch)" if f.tool == "*" else f.tool
        rows.append(f"<tr><td class='num'>{e(when(f.ts))}</td><td>{e(tool)}</td><td>{e(old)} → {e(new)}"
                    f"{' <b>(cutover)</b>' if f.is_cutover else ''}</td><td>{e(f.actor)}</td>"
                    f"<td>{e(f.reason or '')}</td></tr>")
    return ('<section class="panel" id="panel-flags"><h2>Flag history (latest first)</h2><p class="explains">'
            "Who changed which flag, when and why, from the flag audit log.</p>"
            f"<table id=\"flags\"><tr><th>time</th><th>tool</th><th>change</th><th>actor</th><th>reason</th></tr>"
            f"{''.join(rows)}</table></section>")


def _give_ups_cell(t: ToolReport) -> str:
    """The give-up shares next to the loop rate, arm against arm: sessions that ended right after an error, within
    a few calls of one, and after a ``stop``."""
    return "".join(f"<br><small>give-ups: {e(q.test.message)}</small>" for q in (t.give_ups, t.ended_soon,
                   t.stop_quits) if q is not None and q.test.difference is not None)
