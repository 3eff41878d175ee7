"""Giving up after an error, arm against arm: three shares, each with its interval, tested as the loop rate is."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Final

from shadow.analytics import _stats as stats
from shadow.analytics._report_types import Comparison
from shadow.analytics._shapes import Quit, Shape, comparison

#: What each share counts, as the report words it; ``{n}`` is the number of calls (``report_sessions``' $within).
_WHAT: Final[dict[Quit, str]] = {
    "gives": "sessions ended right after an error",
    "ends": "sessions ended within {n} calls of an error, without a later success of the tool,",
    "stops": "errors answered with next_action stop after which the session ended within {n} calls, without a "
             "later success of the tool,",
}


def give_up(kind: Quit, scope: str, shapes: Sequence[Shape], opts: Mapping[str, int], within: int) -> Comparison:
    """One give-up share, structured minus legacy, tested as the loop rate is (on the randomised split when
    there is one), its message naming each arm's share with its cluster-robust 95% interval."""
    quitting = [s.giving_up(kind) for s in shapes]
    found = comparison(scope, quitting, opts)
    t = found.test
    if t.difference is None or t.rate_a is None or t.rate_b is None:
        return found
    randomised = found.design == "randomised"
    arms = [(s.split if randomised else s.paired) for s in quitting]
    word = {"structured_higher": "significantly more often", "structured_lower": "significantly less often"}.get(
        t.verdict, "about as often")
    what = _WHAT[kind].format(n=within)
    legacy = _interval([stats.Cluster(c.errors_a, c.loops_a, c.weight) for c in arms])
    structured = _interval([stats.Cluster(c.errors_b, c.loops_b, c.weight) for c in arms])
    message = (f"{what} {word} in the structured arm: {t.rate_b:.1%}{structured} vs legacy {t.rate_a:.1%}{legacy}"
               f" (difference {t.difference:+.1%}, 95% CI {t.ci_low:+.1%} to {t.ci_high:+.1%})")
    return dataclasses.replace(found, test=dataclasses.replace(t, message=message))


def _interval(clusters: Sequence[stats.Cluster]) -> str:
    """`` (95% CI low-high)`` of one arm's share, sessions as clusters; empty when it cannot be estimated."""
    ci = stats.clusters_interval(clusters)
    return "" if ci is None else f" (95% CI {ci.low:.1%}-{ci.high:.1%})"
