"""Text and CSV renderings of the loop-rate report (``shadow report loop-rate --format table|csv``)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Final

from shadow.analytics._render_sections import decisions, definitions, health, savings, shifts, table, wrap
from shadow.analytics._report_types import FOLLOW_UPS, ArmStats, By, Filters, LoopRateReport, synthetic_time_note
from shadow.analytics._text import counted

CSV_COLUMNS: Final = (
    "dimension", "key", "variant", "calls", "sessions", "errors", "loops", "loop_rate", "ci_low", "ci_high",
    "cluster_ci_low", "cluster_ci_high", "back_to_back_loops", "loops_after_mark", "mean_loop_length",
    "justified_retries", "justified_retries_waited", "unjustified_loops", "unmapped_errors",
    *(f"follow_{k}" for k in FOLLOW_UPS),
)
#: The width the default table fits (``--wide`` drops the limit and adds columns).
WIDTH: Final = 100
#: Characters of a key (a tool name, a code) shown in the narrow table.
_KEY_CHARS: Final = 22
#: Said when the range has no calls: without a flag a tool is legacy, and a legacy call is not logged.
NO_CALLS: Final = "No calls logged yet: a tool's calls are logged only while its flag is shadow or cutover"
SIMULATED_NOTE: Final = "SIMULATED TRAFFIC: {n:,} of these calls were made by shadow's simulated agents (shadow demo)."


def _when(value: dt.datetime | None) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.1%}-{high:.1%}"


def _short(key: str, wide: bool) -> str:
    return key if wide or len(key) <= _KEY_CHARS else key[: _KEY_CHARS - 1] + "…"


def _arm_head(wide: bool) -> list[str]:
    head = ["variant", "calls", "errors", "loops", "loop rate", "95% CI (sessions)"]
    return [*head, "95% CI (Wilson)", "back to back", "mean length", "justified retries"] if wide else head


def _arm_cells(s: ArmStats, wide: bool) -> list[str]:
    cells = [s.variant, f"{s.calls:,}", f"{s.errors:,}", f"{s.loops:,}", _pct(s.loop_rate),
             _ci(s.cluster_ci_low, s.cluster_ci_high)]
    if wide:
        cells += [_ci(s.ci_low, s.ci_high), str(s.back_to_back_loops),
                  "-" if s.mean_loop_length is None else f"{s.mean_loop_length:.2f}", str(s.justified_retries)]
    return cells


def _by_rules(report: LoopRateReport, wide: bool) -> list[str]:
    """Per tool and version of its rules (the fingerprint stored with each call): errors, unmapped, loop rate."""
    if not report.by_rules:
        return []
    rows = [[_short(r.tool, wide), r.rules_fingerprint or "(before)", f"{r.calls:,}", f"{r.errors:,}",
             _pct(r.unmapped_share), _pct(r.loop_rate), _when(r.first_call)] for r in report.by_rules]
    return ["", "By rules version (the fingerprint stored with each call; (before): logged without one):",
            *table(["tool", "rules", "calls", "errors", "unmapped", "loop rate", "first call"], rows, "  ")]


def render_table(report: LoopRateReport, by: By = "tool", *, wide: bool = False, banner: bool = True) -> str:
    """The report as text for a terminal: within ``WIDTH`` columns unless ``wide`` (more columns and detail).

    ``banner=False`` leaves out the simulated-traffic line (a caller that printed it already).
    """
    width = 10_000 if wide else WIDTH
    d = report.data_range
    lines: list[str] = []
    if banner and d.simulated_calls:
        lines += [*wrap(SIMULATED_NOTE.format(n=d.simulated_calls), width), ""]
    lines += wrap(f"Loop rate: {counted(d.calls, 'call')}, {counted(d.errors, 'error')}, "
                  f"{counted(d.sessions, 'session')}, "
                  f"{_when(d.first_call)} to {_when(d.last_call)} UTC"
                  + (f", tool {report.filters.tool}" if report.filters.tool else ""), width)
    if not d.calls and report.filters == Filters():  # a filter that matches nothing is not an empty log
        lines += wrap(f"{NO_CALLS} (for example `shadow flags set TOOL shadow`, or SHADOW_FLAGS='TOOL=shadow').", width)
    if (synthetic := synthetic_time_note(d)) is not None:
        lines += wrap(synthetic, width)
    unknown = sum(v.follow_ups.get("unknown", 0) for v in report.variants)
    if d.sessions_with_gaps or unknown:
        lines += wrap(f"Missing records: {d.sessions_with_gaps} sessions have gaps in their sequence; {unknown} "
                      "errors with an unknown follow-up are left out of the loop rate.", width)
    lines.append("")
    lines += decisions(report, width, wide=wide)
    lines.append("Per arm, whole range (every error, the shadow phase and tools never cut over included):")
    lines += table(_arm_head(wide), [_arm_cells(v, wide) for v in report.variants], "  ")
    lines.append("")
    lines.append("What followed each error, whole range (counts):")
    kinds = [k for k in FOLLOW_UPS if k != "unknown" or any(v.follow_ups.get(k) for v in report.variants)]
    fu_head = ["variant", *kinds, "field repaired", "field unchanged"]
    lines += table(fu_head, [[v.variant, *(str(v.follow_ups[k]) for k in kinds),
                               str(v.field_repairs["changed"]), str(v.field_repairs["unchanged"])]
                              for v in report.variants], "  ")
    lines += shifts(report, width)
    lines.append("")
    lines.append(f"By {by}, whole range:")
    lines += table([by, *_arm_head(wide)], [[_short(r.key, wide), *_arm_cells(r.stats, wide)]
                                             for r in report.rows(by)], "  ")
    lines += _by_rules(report, wide)
    lines.append("")
    c = report.comparison
    design = "" if c.design == "none" else f", {c.design}"  # "none": no comparison could be made, the message says why
    lines += wrap(f"Two-arm comparison{design} ({c.scope}): {c.test.message}", width)
    for t in report.by_tool:
        if t.cutover_at is not None or t.comparison.design == "randomised":
            lines += wrap(f"  {t.tool} ({t.comparison.design}, cutover {_when(t.cutover_at)} UTC): "
                          f"{t.comparison.test.message}", width, indent="      ")
            for quits in (t.give_ups, t.ended_soon, t.stop_quits):
                if quits is not None and quits.test.difference is not None:
                    lines += wrap(f"    give-ups: {quits.test.message}", width, indent="      ")
    lines.append("")
    lines += savings(report, width, wide=wide)
    lines += health(report, width, wide=wide)
    lines += definitions(width)
    return "\n".join(lines) + "\n"


def csv_rows(report: LoopRateReport, by: By = "tool") -> list[list[object]]:
    """Rows for CSV: every arm overall (dimension ``all``), then the ``by`` breakdown."""
    def cells(dimension: str, key: str, s: ArmStats) -> list[object]:
        values = [dimension, key, s.variant, s.calls, s.sessions, s.errors, s.loops, s.loop_rate, s.ci_low,
                  s.ci_high, s.cluster_ci_low, s.cluster_ci_high, s.back_to_back_loops, s.loops_after_mark,
                  s.mean_loop_length, s.justified_retries, s.justified_retries_waited, s.unjustified_loops,
                  s.unmapped_errors, *(s.follow_ups[k] for k in FOLLOW_UPS)]
        return ["" if v is None else v for v in values]

    out: list[list[object]] = [list(CSV_COLUMNS)]
    out += [cells("all", "", v) for v in report.variants]
    out += [cells(r.dimension, r.key, r.stats) for r in report.rows(by)]
    return out


def render_csv(report: LoopRateReport, by: By = "tool") -> str:
    """The report as CSV text (header row first)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[_cell(v) for v in row] for row in csv_rows(report, by)])
    return buf.getvalue()


_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    """A text cell a spreadsheet would run as a formula gets a leading ``'`` (tool names come from model output)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
