"""Sections of the text report: recommendations, power, evidence, follow-up shifts, savings, log health, terms."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Sequence
from typing import Final

from shadow.analytics._report_types import LoopRateReport, iso, rules_note

#: One line under the tables saying what the loop and its variants are.
DEFINITIONS: Final = (
    "Loop: an error whose next call in the session is the identical call (same tool, same arguments); back to "
    "back: no user turn between them; justified retry: a loop after a retryable error; loop rate = loops / "
    "errors; arm = what the model was served (legacy or structured)."
)


#: A cell that reads as a number: a count, a rate, a signed change, an interval (``1.0%-2.0%``, ``-1 to +2``), "-".
_NUMBER: Final = re.compile(r"[-+]?[\d,.]+%?(?:(?:-| to )[-+]?[\d,.]+%?)?|-")


def table(header: Sequence[str], body: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """A text table: columns whose every cell is a number right-aligned (their header too), the others left."""
    columns = list(zip(header, *body, strict=True))
    widths = [max(len(str(x)) for x in col) for col in columns]
    right = [bool(body) and all(_NUMBER.fullmatch(str(x)) for x in col[1:]) for col in columns]

    def line(cells: Sequence[str]) -> str:
        return indent + "  ".join(str(c).rjust(w) if r else str(c).ljust(w)
                                  for c, w, r in zip(cells, widths, right, strict=True)).rstrip()

    return [line(header), indent + "  ".join("-" * w for w in widths), *(line(row) for row in body)]


def wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    """``text`` wrapped to ``width`` columns, continuation lines indented."""
    return textwrap.wrap(text, width=width, subsequent_indent=indent, break_on_hyphens=False) or [""]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def decisions(report: LoopRateReport, width: int, *, wide: bool) -> list[str]:
    """One line per tool with its recommended action and reasons; then power and the unmapped shapes."""
    tools = [t for t in report.by_tool if t.recommendation is not None]
    if not tools:
        return []
    name_w = min(22, max(len(t.tool) for t in tools))
    lines = ["Recommendation per tool (raise / hold / fix_rules / rollback / done):"]
    for t in tools:
        assert t.recommendation is not None
        name = _cut(t.tool, name_w).ljust(name_w)
        head = f"  {name}  {t.recommendation.action:<9} "
        lines += textwrap.wrap("; ".join(t.recommendation.reasons), width=width, initial_indent=head,
                               subsequent_indent=" " * len(head), break_on_hyphens=False)
    lines += wrap(rules_note(report), width)
    powered = [t for t in tools if t.power is not None and t.power.errors_per_arm_needed is not None]
    if powered:
        first = powered[0].power
        assert first is not None
        lines.append("")
        lines += wrap(f"Power: errors per arm to detect a {first.relative_reduction:.0%} drop of the legacy loop "
                      f"rate at {first.power:.0%} power (sessions as clusters):", width)
        rows = []
        for t in powered:
            p = t.power
            assert p is not None
            days = "-" if p.days_needed is None else f"{p.days_needed:,.1f}"
            rows.append([_cut(t.tool, name_w), _pct(p.baseline_rate), f"{p.design_effect:.2f}",
                         f"{p.errors_per_arm_needed:,}", f"{p.errors_legacy:,}", f"{p.errors_structured:,}",
                         f"{p.more_errors_per_arm or 0:,}", days])
        lines += table(["tool", "legacy rate", "design eff.", "needed/arm", "legacy", "structured", "more",
                         "days"], rows, "  ")
    shapes = [(t.tool, u) for t in tools if t.evidence is not None for u in t.evidence.unmapped[:3]]
    if shapes:
        lines += ["", "Most frequent unmapped legacy errors, by shape (add rules for these):"]
        for tool, u in shapes:
            lines.append(_cut(f"  {_cut(tool, name_w):<{name_w}}  {u.errors:>6,}  {u.shape}", width))
    if wide:
        for t in tools:
            if t.evidence is None or not t.evidence.codes:
                continue
            lines += ["", f"What the model saw, {t.tool} (legacy, then structured; redacted):"]
            for c in t.evidence.codes:
                lines.append(f"  {c.code} ({c.errors:,} errors)")
                for ex in c.examples:
                    lines.append(f"    legacy:     {json.dumps(ex.legacy, ensure_ascii=False)}")
                    lines.append(f"    structured: {json.dumps(ex.structured, ensure_ascii=False)}")
    lines.append("")
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _pts(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}"


def shifts(report: LoopRateReport, width: int) -> list[str]:
    """The change in each follow-up's share between the arms, with its interval."""
    s = report.follow_up_shifts
    if s is None or not s.shifts:
        return []
    label = "randomised" if s.design == "randomised" else "observational, not randomised"
    lines = ["", f"Follow-up shifts, structured minus legacy share of errors ({label}; points, 95% CI):"]
    rows = [[x.follow_up, _pct(x.legacy_share), _pct(x.structured_share), _pts(x.difference),
             f"{_pts(x.ci_low)} to {_pts(x.ci_high)}"] for x in s.shifts]
    return lines + table(["follow-up", "legacy", "structured", "change", "95% CI"], rows, "  ")


def savings(report: LoopRateReport, width: int, *, wide: bool) -> list[str]:
    """What the structured payload saves (randomised), in round trips, tool time and tokens; what it leaves out."""
    s = report.savings
    design = "" if s.design == "none" else f" ({s.design})"  # "none": the message says why nothing is claimed
    lines = wrap(f"Savings{design}: {s.message}", width)
    if s.round_trips_saved_per_1000_tasks is not None:
        extra = []
        if s.seconds_saved_per_1000_tasks is not None:
            extra.append(f"{s.seconds_saved_per_1000_tasks:,.2f} s of tool time at the median latency of "
                         f"{(s.median_latency_us or 0) / 1000:,.1f} ms")
        if s.tokens_saved_per_1000_tasks is not None and s.tokens_per_round_trip is not None:
            extra.append(f"{s.tokens_saved_per_1000_tasks:,.0f} tokens ({s.tokens_per_round_trip:,.0f} per round "
                         f"trip at {s.bytes_per_token:g} bytes per token)")
        if extra:
            lines += wrap("  per 1,000 tasks: " + "; ".join(extra), width, indent="    ")
        lines += wrap("  leaves out: " + "; ".join(s.leaves_out), width, indent="    ")
    lines.append("")
    return lines


def health(report: LoopRateReport, width: int, *, wide: bool) -> list[str]:
    """The log's health in a line or two (every process under ``wide``)."""
    h = report.health
    if h is None:
        return []
    lines = wrap(f"Log health (whole log): {h.message}", width)
    if h.writer_counters:
        lines += wrap(f"  writer counters (records: calls and marks): {h.written:,} written, {h.spooled:,} spooled, "
                      f"{h.replayed:,} replayed, "
                      f"{h.dropped:,} dropped", width, indent="    ")
    shown = h.processes if wide else h.processes[:3]
    for p in shown:
        lines.append(_cut(f"  process {p.process} on {p.host}: {p.calls:,} calls, last wrote {iso(p.last_write)}",
                          width))
    if len(h.processes) > len(shown) or h.processes_total > len(h.processes):
        lines.append(f"  ... {h.processes_total - len(shown)} more processes (--wide lists them)")
    lines.append("")
    return lines


def definitions(width: int) -> list[str]:
    """The one-line definition of the loop and its variants."""
    return wrap(DEFINITIONS, width)
