"""Text and CSV renderings of the loop-rate report (``shadow report loop-rate --format table|csv``)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Final

from shadow.analytics._report_types import FOLLOW_UPS, ArmStats, By, LoopRateReport, iso

CSV_COLUMNS: Final = (
    "dimension", "key", "variant", "calls", "sessions", "errors", "loops", "loop_rate", "ci_low", "ci_high",
    "cluster_ci_low", "cluster_ci_high", "back_to_back_loops", "loops_after_mark", "mean_loop_length",
    "justified_retries", "justified_retries_waited", "unjustified_loops", "unmapped_errors",
    *(f"follow_{k}" for k in FOLLOW_UPS),
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.1%}-{high:.1%}"


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).rjust(w) if i >= 2 else str(c).ljust(w) for i, (c, w) in
                      enumerate(zip(row, widths, strict=True))).rstrip() for row in body]
    return out


def _arm_cells(s: ArmStats) -> list[str]:
    return [s.variant, str(s.calls), str(s.errors), str(s.loops), _pct(s.loop_rate), _ci(s.ci_low, s.ci_high),
            _ci(s.cluster_ci_low, s.cluster_ci_high), str(s.back_to_back_loops),
            "-" if s.mean_loop_length is None else f"{s.mean_loop_length:.2f}", str(s.justified_retries)]


def render_table(report: LoopRateReport, by: By = "tool") -> str:
    """The report as text tables for a terminal."""
    d = report.data_range
    lines = [
        f"Loop rate: {d.calls} calls, {d.errors} errors, {d.sessions} sessions, "
        f"{iso(d.first_call) or '-'} to {iso(d.last_call) or '-'}"
        + (f", tool {report.filters.tool}" if report.filters.tool else ""),
        "",
    ]
    arm_head = ["variant", "calls", "errors", "loops", "loop rate", "95% CI (Wilson)", "95% CI (sessions)",
                "back to back", "mean length", "justified retries"]
    lines += _table(arm_head, [_arm_cells(v) for v in report.variants])
    lines.append("")
    fu_head = ["variant", *FOLLOW_UPS, "field repaired", "field unchanged"]
    lines.append("Follow-up of each error:")
    lines += _table(fu_head, [[v.variant, *(str(v.follow_ups[k]) for k in FOLLOW_UPS),
                               str(v.field_repairs["changed"]), str(v.field_repairs["unchanged"])]
                              for v in report.variants])
    lines.append("")
    lines.append(f"By {by}:")
    lines += _table([by, *arm_head], [[r.key, *_arm_cells(r.stats)] for r in report.rows(by)])
    lines.append("")
    lines.append(f"Comparison ({report.comparison.scope}, {report.comparison.design}): "
                 f"{report.comparison.test.message}")
    for t in report.by_tool:
        if t.cutover_at is not None or t.comparison.design == "randomised":
            lines.append(f"  {t.tool}: cutover {iso(t.cutover_at) or '-'}; {t.comparison.test.message}")
    lines.append(f"Savings: {report.savings.message}")
    if report.savings.seconds_saved_per_1000_tasks is not None:
        lines.append(f"  at a median call latency of {report.savings.median_latency_us or 0:.0f} us: "
                     f"{report.savings.seconds_saved_per_1000_tasks:.2f} s of tool time per 1,000 tasks")
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
