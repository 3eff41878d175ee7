"""Statistics for loop rates: Wilson and cluster-robust intervals, a seeded session bootstrap, a two-arm test."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

import numpy as np

from shadow.analytics._defaults import DEFAULT_SEED

#: The normal quantile of a two-sided 95% interval.
Z95: Final = 1.959963984540054

#: Below these an arm is "too few errors": the comparison says so instead of giving a verdict.
MIN_ERRORS_PER_ARM: Final = 30
MIN_SESSIONS_PER_ARM: Final = 10

#: Bootstrap resamples; the seed makes every interval reproducible.
DEFAULT_RESAMPLES: Final = 2000

Verdict = Literal["structured_lower", "structured_higher", "no_significant_difference", "too_few_errors"]


@dataclass(frozen=True, slots=True)
class Interval:
    """A closed interval ``[low, high]``."""

    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Cluster:
    """One session's errors and loops in one arm (or several identical sessions: ``weight`` of them)."""

    errors: int
    loops: int
    weight: int = 1


@dataclass(frozen=True, slots=True)
class PairedCluster:
    """One session's errors and loops in arm A (legacy) and arm B (structured); ``weight`` identical sessions."""

    errors_a: int
    loops_a: int
    errors_b: int
    loops_b: int
    weight: int = 1


@dataclass(frozen=True, slots=True)
class ArmComparison:
    """Arm B minus arm A (structured minus legacy): the difference of loop rates, its interval and p-value."""

    errors_a: int
    loops_a: int
    sessions_a: int
    errors_b: int
    loops_b: int
    sessions_b: int
    rate_a: float | None
    rate_b: float | None
    difference: float | None
    ci_low: float | None  # cluster-robust (linearised) 95% interval of the difference
    ci_high: float | None
    p_value: float | None  # two-sided, cluster-robust Wald test of "no difference"
    bootstrap_ci_low: float | None  # seeded session bootstrap, percentile 95% interval
    bootstrap_ci_high: float | None
    verdict: Verdict
    message: str


class _Base(NamedTuple):
    errors_a: int
    loops_a: int
    sessions_a: int
    errors_b: int
    loops_b: int
    sessions_b: int
    rate_a: float | None
    rate_b: float | None


def wilson(successes: int, trials: int, z: float = Z95) -> Interval | None:
    """The Wilson score interval of ``successes / trials``; None when there are no trials."""
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return None
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)  # exact ends, not 1 - 1e-16
    return Interval(low, high)


def ratio_se(clusters: Iterable[Cluster]) -> tuple[float, float, int] | None:
    """Loop rate ``sum(loops) / sum(errors)`` and its cluster-robust standard error (linearisation, CR1).

    Returns ``(rate, se, sessions)``, or None when there are no errors.
    """
    n = e_sum = l_sum = ee = ll = el = 0
    for c in clusters:
        n += c.weight
        e_sum += c.weight * c.errors
        l_sum += c.weight * c.loops
        ee += c.weight * c.errors * c.errors
        ll += c.weight * c.loops * c.loops
        el += c.weight * c.errors * c.loops
    return ratio_se_from_sums(n, e_sum, l_sum, ee, ll, el)


def ratio_se_from_sums(
    sessions: int, errors: int, loops: int, sum_ee: float, sum_ll: float, sum_el: float
) -> tuple[float, float, int] | None:
    """Like ``ratio_se``, from per-session sums: sessions, Σe, Σl, Σe², Σl², Σe·l (what SQL can aggregate)."""
    if errors <= 0:
        return None
    rate = loops / errors
    # Σ (l_i - r e_i)² expanded, so that SQL need only return sums of squares and products.
    resid = max(0.0, sum_ll - 2 * rate * sum_el + rate * rate * sum_ee)
    if sessions <= 1:
        return rate, 0.0, sessions
    var = sessions / (sessions - 1) * resid / (errors * errors)
    return rate, math.sqrt(var), sessions


def cluster_interval(
    sessions: int, errors: int, loops: int, sum_ee: float, sum_ll: float, sum_el: float, z: float = Z95
) -> Interval | None:
    """A 95% interval of the loop rate that respects clustering by session (``rate_interval``)."""
    found = ratio_se_from_sums(sessions, errors, loops, sum_ee, sum_ll, sum_el)
    if found is None or sessions < 2:
        return None  # one session says nothing about the spread between sessions
    rate, se, _ = found
    return rate_interval(rate, se, loops, errors, z)


def clusters_interval(clusters: Iterable[Cluster], z: float = Z95) -> Interval | None:
    """``cluster_interval`` of per-session clusters: None without errors in at least two sessions."""
    with_errors = [c for c in clusters if c.errors > 0]
    found = ratio_se(with_errors)
    if found is None or sum(c.weight for c in with_errors) < 2:
        return None
    rate, se, _ = found
    return rate_interval(rate, se, sum(c.loops * c.weight for c in with_errors),
                         sum(c.errors * c.weight for c in with_errors), z)


def rate_interval(rate: float, se: float, hits: float, errors: float, z: float = Z95) -> Interval:
    """``rate ± z·se`` clipped to [0, 1]; when the sessions show no spread at all (``se`` 0: every session at the
    same rate, as when no session looped), the Wilson interval of ``hits / errors`` instead. A zero-width interval
    ("0.0%-0.0%") would claim a certainty the counts do not give: 0 loops in 60 errors still allows about 6%."""
    if se > 1e-12:
        return Interval(max(0.0, rate - z * se), min(1.0, rate + z * se))
    found = wilson(round(hits), round(errors), z) if errors >= 1 else None
    return found if found is not None else Interval(rate, rate)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _percentile(values: np.ndarray, level: float) -> Interval | None:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Interval(float(low), float(high))


def _draws(weights: Sequence[int], resamples: int, seed: int) -> np.ndarray:
    """Session counts per pattern in each bootstrap resample: multinomial over the distinct session patterns.

    Seeded, so the same weights always draw the same counts: a report asks for the same ones many times (every
    share of a tool is resampled over the same sessions), and they are drawn once (read-only).
    """
    return _draws_once(tuple(weights), resamples, seed)


@functools.lru_cache(maxsize=4)  # a few arrays of resamples x patterns: the repeats come together
def _draws_once(weights: tuple[int, ...], resamples: int, seed: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    total = int(w.sum())
    counts = _rng(seed).multinomial(total, w / w.sum(), size=resamples).astype(np.float64)
    counts.flags.writeable = False
    return counts


def bootstrap_rate(
    clusters: Sequence[Cluster], *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES, level: float = 0.95
) -> Interval | None:
    """Seeded session-level bootstrap interval (percentile) of ``sum(loops) / sum(errors)``.

    Sessions are resampled with replacement; identical sessions may be passed once with a ``weight``, which makes
    the cost depend on the number of distinct (errors, loops) patterns, not on the number of sessions.
    """
    items = sorted((c for c in clusters if c.weight > 0), key=lambda c: (c.errors, c.loops))
    if not items or sum(c.errors * c.weight for c in items) == 0:
        return None
    counts = _draws([c.weight for c in items], resamples, seed)
    errors = counts @ np.array([c.errors for c in items], dtype=np.float64)
    loops = counts @ np.array([c.loops for c in items], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.where(errors > 0, loops / errors, np.nan)
    return _percentile(rates, level)


def _sums(items: Sequence[PairedCluster]) -> dict[str, float]:
    out = {"n_a": 0.0, "n_b": 0.0, "e_a": 0.0, "l_a": 0.0, "e_b": 0.0, "l_b": 0.0}
    for c in items:
        out["n_a"] += c.weight if c.errors_a else 0
        out["n_b"] += c.weight if c.errors_b else 0
        out["e_a"] += c.weight * c.errors_a
        out["l_a"] += c.weight * c.loops_a
        out["e_b"] += c.weight * c.errors_b
        out["l_b"] += c.weight * c.loops_b
    return out


def _difference_se(items: Sequence[PairedCluster], e_a: float, l_a: float, e_b: float, l_b: float) -> float:
    """Cluster-robust se of r_b - r_a: sessions may hold errors of both arms, so each contributes one residual."""
    r_a, r_b = l_a / e_a, l_b / e_b
    n = sum(c.weight for c in items)
    total = 0.0
    for c in items:
        u = (c.loops_b - r_b * c.errors_b) / e_b - (c.loops_a - r_a * c.errors_a) / e_a
        total += c.weight * u * u
    if n <= 1:
        return 0.0
    return math.sqrt(n / (n - 1) * total)


def compare_arms(
    clusters: Sequence[PairedCluster],
    *,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    min_errors: int = MIN_ERRORS_PER_ARM,
    min_sessions: int = MIN_SESSIONS_PER_ARM,
    alpha: float = 0.05,
) -> ArmComparison:
    """Compare loop rates of arm B (structured) and arm A (legacy), respecting clustering by session.

    The difference is ``rate_b - rate_a``. Its interval and p-value come from the cluster-robust (linearised)
    variance of the two ratio estimators, sessions being the clusters; a seeded session bootstrap gives a second,
    distribution-free interval. With fewer than ``min_errors`` errors or ``min_sessions`` sessions with errors in
    either arm the verdict is ``too_few_errors`` and no test is reported.
    """
    items = sorted((c for c in clusters if c.weight > 0),
                   key=lambda c: (c.errors_a, c.loops_a, c.errors_b, c.loops_b))
    s = _sums(items)
    e_a, l_a, e_b, l_b = s["e_a"], s["l_a"], s["e_b"], s["l_b"]
    n_a, n_b = int(s["n_a"]), int(s["n_b"])
    rate_a = l_a / e_a if e_a else None
    rate_b = l_b / e_b if e_b else None
    base = _Base(int(e_a), int(l_a), n_a, int(e_b), int(l_b), n_b, rate_a, rate_b)
    short = [f"{name} has {int(e)} errors in {n} sessions"
             for name, e, n in (("legacy", e_a, n_a), ("structured", e_b, n_b))
             if e < min_errors or n < min_sessions]
    if short or rate_a is None or rate_b is None:
        message = (f"too few errors to compare: {'; '.join(short)}; a verdict needs at least {min_errors} errors "
                   f"in {min_sessions} sessions in each arm")
        return ArmComparison(*base, difference=None, ci_low=None, ci_high=None, p_value=None,
                             bootstrap_ci_low=None, bootstrap_ci_high=None, verdict="too_few_errors",
                             message=message)
    diff = rate_b - rate_a
    se = _difference_se(items, e_a, l_a, e_b, l_b)
    p_value = math.erfc(abs(diff) / se / math.sqrt(2)) if se > 0 else (1.0 if diff == 0 else 0.0)
    boot = _bootstrap_difference(items, seed=seed, resamples=resamples)
    if p_value >= alpha:
        verdict: Verdict = "no_significant_difference"
        message = (f"no significant difference: structured {rate_b:.1%} vs legacy {rate_a:.1%} "
                   f"(difference {diff:+.1%}, p = {p_value:.3g})")
    else:
        verdict = "structured_lower" if diff < 0 else "structured_higher"
        word = "lower" if diff < 0 else "higher"
        message = (f"the structured arm loops {word}: {rate_b:.1%} vs legacy {rate_a:.1%} "
                   f"(difference {diff:+.1%}, 95% CI {diff - Z95 * se:+.1%} to {diff + Z95 * se:+.1%}, "
                   f"p = {p_value:.3g})")
    return ArmComparison(
        *base, difference=diff, ci_low=diff - Z95 * se, ci_high=diff + Z95 * se, p_value=p_value,
        bootstrap_ci_low=boot.low if boot else None, bootstrap_ci_high=boot.high if boot else None,
        verdict=verdict, message=message,
    )


def _bootstrap_difference(items: Sequence[PairedCluster], *, seed: int, resamples: int) -> Interval | None:
    counts = _draws([c.weight for c in items], resamples, seed)

    def total(attr: str) -> np.ndarray:
        result: np.ndarray = counts @ np.array([getattr(c, attr) for c in items], dtype=np.float64)
        return result

    e_a, l_a, e_b, l_b = total("errors_a"), total("loops_a"), total("errors_b"), total("loops_b")
    with np.errstate(divide="ignore", invalid="ignore"):
        diffs = np.where((e_a > 0) & (e_b > 0), l_b / e_b - l_a / e_a, np.nan)
    return _percentile(diffs, 0.95)
