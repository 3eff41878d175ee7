"""Wilson and cluster-robust intervals, the seeded session bootstrap and the two-arm test."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shadow.analytics import _stats as stats
from shadow.analytics._stats import Cluster, PairedCluster


def test_wilson_matches_published_values() -> None:
    # Reference values: Newcombe (1998), Table I, and the closed form.
    five = stats.wilson(5, 10)
    assert five is not None
    assert five.low == pytest.approx(0.2366, abs=1e-4)
    assert five.high == pytest.approx(0.7634, abs=1e-4)
    zero = stats.wilson(0, 10)
    assert zero is not None
    assert zero.low == pytest.approx(0.0)
    assert zero.high == pytest.approx(0.2775, abs=1e-4)
    full = stats.wilson(10, 10)
    assert full is not None
    assert (full.low, full.high) == (pytest.approx(0.7225, abs=1e-4), pytest.approx(1.0))


def test_wilson_has_no_interval_without_trials_and_rejects_impossible_counts() -> None:
    assert stats.wilson(0, 0) is None
    with pytest.raises(ValueError, match="successes <= trials"):
        stats.wilson(3, 2)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_interval_contains_the_rate_and_stays_in_bounds(k: int, n: int) -> None:
    k = min(k, n)
    found = stats.wilson(k, n)
    assert found is not None
    assert 0.0 <= found.low <= k / n <= found.high <= 1.0


def test_ratio_se_from_sums_equals_the_direct_residual_formula() -> None:
    rng = random.Random(7)
    clusters = [Cluster(e, rng.randint(0, e)) for e in (rng.randint(1, 9) for _ in range(40))]
    rate, se, n = stats.ratio_se(clusters) or (0.0, 0.0, 0)
    e_sum = sum(c.errors for c in clusters)
    r = sum(c.loops for c in clusters) / e_sum
    direct = math.sqrt(n / (n - 1) * sum((c.loops - r * c.errors) ** 2 for c in clusters) / e_sum**2)
    assert rate == pytest.approx(r)
    assert se == pytest.approx(direct)


def test_weights_stand_for_identical_sessions() -> None:
    weighted = [Cluster(3, 1, weight=4), Cluster(1, 0, weight=2)]
    expanded = [Cluster(3, 1)] * 4 + [Cluster(1, 0)] * 2
    assert stats.ratio_se(weighted) == pytest.approx(stats.ratio_se(expanded))


def test_clustered_errors_widen_the_interval_beyond_wilson() -> None:
    # Ten sessions that loop on every error and ten that never do: far less information than 200 independent errors.
    clusters = [Cluster(10, 10, weight=10), Cluster(10, 0, weight=10)]
    rate, se, _ = stats.ratio_se(clusters) or (0.0, 0.0, 0)
    wilson = stats.wilson(100, 200)
    assert wilson is not None and rate == 0.5
    assert 2 * stats.Z95 * se > 2 * (wilson.high - wilson.low)
    boot = stats.bootstrap_rate(clusters, seed=1)
    assert boot is not None
    assert boot.high - boot.low > wilson.high - wilson.low


def test_bootstrap_is_reproducible_with_a_seed_and_varies_without_it() -> None:
    clusters = [Cluster(e, min(e, e // 2 + (e % 3 == 0)), weight=w) for e, w in ((1, 30), (2, 12), (5, 4), (9, 2))]
    a = stats.bootstrap_rate(clusters, seed=42)
    b = stats.bootstrap_rate(clusters, seed=42)
    c = stats.bootstrap_rate(clusters, seed=43)
    assert a == b
    assert a != c


def test_bootstrap_interval_covers_the_point_estimate() -> None:
    clusters = [Cluster(2, 1, weight=50), Cluster(4, 0, weight=20), Cluster(1, 1, weight=30)]
    rate = (50 * 1 + 30 * 1) / (50 * 2 + 20 * 4 + 30)
    boot = stats.bootstrap_rate(clusters, seed=3)
    assert boot is not None
    assert boot.low < rate < boot.high


def test_bootstrap_needs_errors() -> None:
    assert stats.bootstrap_rate([]) is None
    assert stats.bootstrap_rate([Cluster(0, 0, weight=5)]) is None


def _arms(rate_a: float, rate_b: float, sessions: int, errors: int, seed: int) -> list[PairedCluster]:
    rng = random.Random(seed)
    out = []
    for i in range(sessions):
        in_b = i % 2 == 1
        rate = rate_b if in_b else rate_a
        loops = sum(rng.random() < rate for _ in range(errors))
        out.append(PairedCluster(0, 0, errors, loops) if in_b else PairedCluster(errors, loops, 0, 0))
    return out


def test_a_large_drop_in_loop_rate_is_significant_and_its_interval_excludes_zero() -> None:
    result = stats.compare_arms(_arms(0.45, 0.10, sessions=200, errors=4, seed=1), seed=5)
    assert result.verdict == "structured_lower"
    assert result.difference is not None and result.difference < 0
    assert result.ci_high is not None and result.ci_high < 0
    assert result.p_value is not None and result.p_value < 0.001
    assert result.bootstrap_ci_high is not None and result.bootstrap_ci_high < 0


def test_equal_arms_give_no_significant_difference() -> None:
    result = stats.compare_arms(_arms(0.3, 0.3, sessions=200, errors=3, seed=11), seed=5)
    assert result.verdict == "no_significant_difference"
    assert result.ci_low is not None and result.ci_high is not None
    assert result.ci_low < 0 < result.ci_high


def test_too_few_errors_gives_no_verdict_and_says_why() -> None:
    result = stats.compare_arms(_arms(0.9, 0.0, sessions=8, errors=2, seed=2))
    assert result.verdict == "too_few_errors"
    assert result.p_value is None and result.difference is None
    assert "too few errors" in result.message and "legacy has 8 errors in 4 sessions" in result.message


def test_the_test_holds_its_level_under_clustering() -> None:
    # A/A simulation: sessions differ a lot in how loop-prone they are; the clustered test should reject about 5%.
    rejections = 0
    trials = 200
    for t in range(trials):
        rng = random.Random(1000 + t)
        clusters = []
        for i in range(60):
            propensity = rng.choice([0.05, 0.9])
            errors = rng.randint(1, 8)
            loops = sum(rng.random() < propensity for _ in range(errors))
            clusters.append(PairedCluster(errors, loops, 0, 0) if i % 2 else PairedCluster(0, 0, errors, loops))
        result = stats.compare_arms(clusters, resamples=10)
        rejections += result.verdict in ("structured_lower", "structured_higher")
    assert rejections / trials < 0.10


def test_sessions_with_errors_in_both_arms_are_one_cluster() -> None:
    both = [PairedCluster(2, 1, 3, 0, weight=40), PairedCluster(1, 1, 1, 0, weight=40)]
    result = stats.compare_arms(both, seed=1)
    assert result.sessions_a == result.sessions_b == 80
    assert result.difference == pytest.approx(0 / 160 - 80 / 120)
    assert result.verdict == "structured_lower"


def test_an_interval_over_sessions_that_all_share_one_rate_is_wilsons_not_a_point() -> None:
    # 60 sessions with one error each and no loop: the cluster-robust spread is 0, and "0.0%-0.0%" would claim a
    # certainty that 60 errors do not give; the interval falls back to the Wilson interval of 0 / 60
    interval = stats.cluster_interval(60, 60, 0, 60.0, 0.0, 0.0)
    assert interval == stats.wilson(0, 60)
    assert interval is not None and interval.low == 0.0 and 0.05 < interval.high < 0.07
    every_session_looped = stats.cluster_interval(40, 80, 80, 160.0, 160.0, 160.0)
    assert every_session_looped == stats.wilson(80, 80) and every_session_looped.high == 1.0
    assert every_session_looped.low < 0.96


def test_an_interval_over_sessions_that_differ_stays_cluster_robust() -> None:
    sums = (3, 6, 3, 14.0, 5.0, 8.0)  # sessions (1 error, 0 loops), (2, 1), (3, 2)
    rate, se, _ = stats.ratio_se_from_sums(*sums) or (0.0, 0.0, 0)
    assert se > 0
    assert stats.cluster_interval(*sums) == stats.Interval(max(0.0, rate - stats.Z95 * se),
                                                           min(1.0, rate + stats.Z95 * se))
