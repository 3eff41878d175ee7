"""Power of the two-arm test: how many errors per arm it takes to see a given drop in the loop rate, and how long."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

from shadow.analytics import _stats as stats

#: The relative drop of the loop rate the test should be able to see (30%: 40% of errors looping becomes 28%).
DEFAULT_RELATIVE_REDUCTION: Final = 0.30
#: The chance of seeing that drop when it is real.
DEFAULT_POWER: Final = 0.80
#: Two-sided significance level, as in the two-arm test.
DEFAULT_ALPHA: Final = 0.05


@dataclass(frozen=True, slots=True)
class Power:
    """Errors per arm needed to detect ``relative_reduction`` of ``baseline_rate`` at ``power``, and how far off.

    ``errors_per_arm_needed`` is the two-proportion sample size (normal approximation, unpooled variances) times
    the design effect of errors clustered in sessions; ``more_errors_per_arm`` subtracts what the arm with fewer
    errors already has; ``days_needed`` divides that by the arm's errors per day at the recent error rate.
    """

    baseline_rate: float | None  # the legacy loop rate the target is relative to
    target_rate: float | None  # baseline_rate * (1 - relative_reduction)
    relative_reduction: float
    power: float
    alpha: float
    design_effect: float  # variance with sessions as clusters / variance if every error were independent (>= 1)
    errors_per_arm_needed: int | None
    errors_legacy: int  # errors so far in each arm of the comparison
    errors_structured: int
    more_errors_per_arm: int | None
    errors_per_day_per_arm: float | None  # of the slower arm, at the recent rate and the current split
    days_needed: float | None
    message: str


def errors_needed(baseline: float, reduction: float, *, power: float = DEFAULT_POWER, alpha: float = DEFAULT_ALPHA,
                  design_effect: float = 1.0) -> int | None:
    """Errors per arm for a two-sided test of ``baseline`` vs ``baseline * (1 - reduction)`` to reach ``power``.

    n = deff * (z(1 - alpha/2) + z(power))^2 * (p1(1 - p1) + p2(1 - p2)) / (p1 - p2)^2, rounded up; None when the
    baseline is 0 (nothing to reduce). Matches statsmodels' ``NormalIndPower`` with the effect size
    ``(p1 - p2) / sqrt((p1(1 - p1) + p2(1 - p2)) / 2)`` when ``design_effect`` is 1.
    """
    _check(reduction, power, alpha)
    if not 0 <= baseline <= 1:
        raise ValueError(f"baseline must be a loop rate from 0 to 1, not {baseline!r}")
    if design_effect < 1:
        raise ValueError(f"design_effect must be at least 1, not {design_effect!r}")
    target = baseline * (1 - reduction)
    if baseline - target <= 0:
        return None
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    variance = baseline * (1 - baseline) + target * (1 - target)
    return math.ceil(design_effect * z * z * variance / (baseline - target) ** 2 - 1e-9)


def design_effect(clusters: Sequence[stats.Cluster]) -> float:
    """How much clustering in sessions inflates the variance of a loop rate: the cluster-robust variance over the
    binomial variance p(1 - p) / errors; at least 1 (and 1 when it cannot be estimated)."""
    with_errors = [c for c in clusters if c.errors > 0]
    found = stats.ratio_se(with_errors)
    if found is None:
        return 1.0
    rate, se, sessions = found
    errors = sum(c.errors * c.weight for c in with_errors)
    if sessions < 2 or not 0 < rate < 1:
        return 1.0
    return max(1.0, se * se / (rate * (1 - rate) / errors))


def _check(reduction: float, power: float, alpha: float) -> None:
    if not 0 < reduction < 1:
        raise ValueError(f"the relative reduction must be a fraction between 0 and 1, for example 0.3, "
                         f"not {reduction!r}")
    if not 0 < power < 1:
        raise ValueError(f"power must be a fraction between 0 and 1, for example 0.8, not {power!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be a fraction between 0 and 1, for example 0.05, not {alpha!r}")


def tool_power(
    baseline: float | None, errors_legacy: int, errors_structured: int, clusters: Sequence[stats.Cluster], *,
    errors_per_day: float | None, structured_share: float | None,
    reduction: float = DEFAULT_RELATIVE_REDUCTION, power: float = DEFAULT_POWER, alpha: float = DEFAULT_ALPHA,
) -> Power:
    """A tool's power figures. ``errors_per_day`` is the tool's recent error rate (both arms); ``structured_share``
    the share of sessions the flag serves structured now (None when no split runs: a 50% split is assumed)."""
    _check(reduction, power, alpha)
    deff = design_effect(clusters)
    share = 0.5 if structured_share is None or not 0 < structured_share < 1 else structured_share
    per_day = None if not errors_per_day else errors_per_day * min(share, 1 - share)
    if baseline is None:
        return Power(None, None, reduction, power, alpha, deff, None, errors_legacy, errors_structured, None,
                     per_day, None, "no legacy errors yet: the power needs the legacy loop rate")
    target = baseline * (1 - reduction)
    needed = errors_needed(baseline, reduction, power=power, alpha=alpha, design_effect=deff)
    if needed is None:
        return Power(baseline, target, reduction, power, alpha, deff, None, errors_legacy, errors_structured, None,
                     per_day, None, "the legacy arm has no loops: there is no loop rate to reduce")
    more = max(0, needed - min(errors_legacy, errors_structured))
    days = None if per_day is None else (0.0 if more == 0 else more / per_day)
    when = "" if days is None else (" (reached)" if more == 0 else f", about {_days(days)} at the current rate")
    split = "" if structured_share is not None and 0 < structured_share < 1 else " with a 50% split"
    message = (f"{needed:,} errors per arm detect a {reduction:.0%} drop ({baseline:.1%} to {target:.1%}) with "
               f"{power:.0%} power (design effect {deff:.2f}); {more:,} more per arm needed{when}{split}")
    return Power(baseline, target, reduction, power, alpha, deff, needed, errors_legacy, errors_structured, more,
                 per_day, days, message)


def _days(days: float) -> str:
    if days < 1:
        return f"{days * 24:.0f} hours" if days * 24 >= 1.5 else "1 hour"
    return f"{days:,.0f} days" if days >= 1.5 else "1 day"
