"""Effects of the structured payload from the randomised comparison: follow-up shifts and the cost it saves."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from shadow.analytics import _stats as stats
from shadow.analytics._report_types import FOLLOW_UPS, Comparison, FollowUpShift, FollowUpShifts, Savings

#: The documented token estimator: bytes of JSON text per token (override with ``--bytes-per-token``).
DEFAULT_BYTES_PER_TOKEN: Final = 4.0

LEAVES_OUT: Final = (
    "loops longer than one repeat (each loop counts as one wasted round trip)",
    "the model's own context re-read on every round trip (only the call's arguments and the error payload are "
    "counted as tokens)",
    "tools with no randomised split yet (their errors are left out of the errors per task)",
    "what the model does instead of repeating (a repair or another tool also costs a round trip)",
)


def follow_up_shifts(rows: Sequence[Mapping[str, Any]]) -> FollowUpShifts:
    """Shifts from the rows of ``report_follow_up_shifts``: the randomised scope when both arms have errors there,
    else all errors (observational)."""
    by: dict[tuple[str, str, str], Mapping[str, Any]] = {
        (str(r["scope"]), str(r["variant"]), str(r["follow_up"])): r for r in rows}

    def has(scope: str, arm: str) -> bool:
        return any(k[0] == scope and k[1] == arm and int(r["errors"]) > 0 for k, r in by.items())

    if has("randomised", "legacy") and has("randomised", "structured"):
        scope, design = "randomised", "randomised"
    elif has("all", "legacy") and has("all", "structured"):
        scope, design = "all", "observational"
    else:
        return FollowUpShifts("none", ())
    out = []
    for kind in FOLLOW_UPS:
        if kind == "unknown":
            continue  # records are missing after those errors: no follow-up to compare
        a, b = by.get((scope, "legacy", kind)), by.get((scope, "structured", kind))
        ra, rb = _ratio(a), _ratio(b)
        diff = low = high = None
        if ra is not None and rb is not None:
            diff = rb[0] - ra[0]
            se = math.sqrt(ra[1] ** 2 + rb[1] ** 2)
            low, high = diff - stats.Z95 * se, diff + stats.Z95 * se
        out.append(FollowUpShift(kind, ra[0] if ra else None, rb[0] if rb else None, diff, low, high,
                                 int(a["errors"]) if a else 0, int(b["errors"]) if b else 0))
    return FollowUpShifts(design, tuple(out))


def _ratio(row: Mapping[str, Any] | None) -> tuple[float, float] | None:
    if row is None:
        return None
    found = stats.ratio_se_from_sums(int(row["sessions"]), int(row["errors"]), int(row["hits"]),
                                     float(row["sum_ee"]), float(row["sum_hh"]), float(row["sum_eh"]))
    return None if found is None else (found[0], found[1])


def savings(comparison: Comparison, *, tasks: int, calls: int, errors_in_split_tools: int,
            median_latency_us: float | None, bytes_per_round_trip: float | None,
            bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN) -> Savings:
    """Round trips, tool seconds and tokens saved per 1,000 tasks, from the randomised comparison of loop rates.

    Saved per task = (legacy - structured loop rate, randomised) x errors per task of the tools that had a split;
    the interval is the comparison's 95% interval scaled the same way. Without a randomised comparison with a
    verdict-free difference, nothing is claimed.
    """
    if bytes_per_token <= 0:
        raise ValueError(f"bytes per token must be above 0, for example 4, not {bytes_per_token!r}")
    t = comparison.test
    per_task = errors_in_split_tools / tasks if tasks else None
    calls_per_task = calls / tasks if tasks else None
    tokens_rt = bytes_per_round_trip / bytes_per_token if bytes_per_round_trip else None
    base: dict[str, Any] = {
        "tasks": tasks, "calls_per_task": calls_per_task, "errors_per_task": per_task,
        "wasted_per_error_legacy": t.rate_a, "wasted_per_error_structured": t.rate_b,
        "median_latency_us": median_latency_us, "design": comparison.design, "bytes_per_token": bytes_per_token,
        "tokens_per_round_trip": tokens_rt, "leaves_out": LEAVES_OUT,
    }
    if comparison.design != "randomised" or t.difference is None or per_task is None:
        why = ("savings come only from a randomised split with errors in both arms (whole-range arm rates mix in "
               "pre-cutover traffic and tools never cut over); run a cutover at a percentage between 1 and 99")
        if comparison.design == "randomised":
            why = f"savings need a verdict-ready randomised comparison: {t.message}"
        return Savings(**base, round_trips_saved_per_task=None, round_trips_saved_per_1000_tasks=None,
                       round_trips_saved_ci_low=None, round_trips_saved_ci_high=None,
                       seconds_saved_per_1000_tasks=None, tokens_saved_per_1000_tasks=None, message=why)
    k = per_task * 1000
    saved = -t.difference * per_task + 0.0  # + 0.0: no difference reads "0", never "-0"
    low = None if t.ci_high is None else -t.ci_high * k + 0.0
    high = None if t.ci_low is None else -t.ci_low * k + 0.0
    seconds = saved * 1000 * median_latency_us / 1e6 if median_latency_us else None
    tokens = saved * 1000 * tokens_rt if tokens_rt else None
    ci = "" if low is None or high is None else f" (95% {low:,.0f} to {high:,.0f})"
    message = (f"{saved * 1000:,.0f} round trips saved per 1,000 tasks{ci}: loop rate "
               f"{t.rate_a or 0:.1%} legacy vs {t.rate_b or 0:.1%} structured, {per_task:.2f} errors per task in "
               "the tools with a split")
    return Savings(**base, round_trips_saved_per_task=saved, round_trips_saved_per_1000_tasks=saved * 1000,
                   round_trips_saved_ci_low=low, round_trips_saved_ci_high=high,
                   seconds_saved_per_1000_tasks=seconds, tokens_saved_per_1000_tasks=tokens, message=message)
