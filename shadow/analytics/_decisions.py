"""The report's decision layer per tool: the flag now, power, leaks, evidence and the recommendation."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from shadow.analytics import _evidence as ev
from shadow.analytics import _power as pw
from shadow.analytics import _stats as stats
from shadow.analytics._recommend import Facts, FlagNow, Policy, recommend
from shadow.analytics._report_types import Comparison, FlagChange, ToolReport


def flag_now(tool: str, changes: Sequence[FlagChange]) -> FlagNow:
    """The tool's flag as its latest audited change set it (the kill switch ``*`` counts when newer)."""
    own = [c for c in changes if c.tool == tool]
    switch = [c for c in changes if c.tool == "*"]
    last = max(own, key=lambda c: c.ts) if own else None
    killed = max(switch, key=lambda c: c.ts) if switch else None
    if killed is not None and killed.new_mode == "killed" and (last is None or killed.ts >= last.ts):
        return FlagNow("legacy", None)  # the kill switch serves every tool legacy
    return FlagNow(None, None) if last is None else FlagNow(last.new_mode, last.new_percent)


def _by_tool(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        out[str(r["tool"])].append(r)
    return out


def _test(found: Comparison | None) -> stats.ArmComparison | None:
    return found.test if found is not None else None


def decide(
    source: Any, params: Mapping[str, Any], tools: Sequence[ToolReport],
    legacy_clusters: Mapping[str, list[stats.Cluster]], changes: Sequence[FlagChange], policy: Policy, *,
    evidence: bool = True, unmapped_rows: Mapping[str, list[Mapping[str, Any]]] | None = None,
) -> tuple[list[ToolReport], dict[str, float]]:
    """Each tool with its flag, power, leak count, evidence and recommendation; and the mean bytes of a repeated
    call (arguments plus legacy error payload) per tool, for the token estimate. ``unmapped_rows``: per tool, the
    logged errors (legacy_payload, errors) today's rules leave unmapped, in place of those logged unmapped."""
    rate = {str(r["tool"]): float(r["errors_per_day"] or 0.0) for r in source.records("report_error_rate", params)}
    payloads = _by_tool(source.records("report_error_payloads", {**params, "limit": ev.MAX_LEAK_SCAN}))
    examples: dict[str, list[Mapping[str, Any]]] = {}
    unmapped: dict[str, list[Mapping[str, Any]]] = {}
    if evidence:
        examples = _by_tool(source.records("report_evidence", {**params, "max_codes": ev.MAX_CODES,
                                                             "per_code": ev.EXAMPLES_PER_CODE}))
        unmapped = (dict(unmapped_rows) if unmapped_rows is not None else
                    _by_tool(source.records("report_unmapped", {**params, "limit": ev.MAX_UNMAPPED_READ})))
    sizes: dict[str, float] = {}
    out = []
    for t in tools:
        mine = payloads.get(t.tool, [])
        if mine:
            sizes[t.tool] = float(mine[0]["args_bytes"] or 0) + float(mine[0]["legacy_bytes"] or 0)
        leaks = ev.count_leaks(mine)
        flag = flag_now(t.tool, changes)
        test = t.comparison.test
        legacy = next((v for v in t.variants if v.variant == "legacy"), None)
        baseline = test.rate_a if test.rate_a is not None else (legacy.loop_rate if legacy else None)
        power = pw.tool_power(
            baseline, test.errors_a, test.errors_b, legacy_clusters.get(t.tool, []),
            errors_per_day=rate.get(t.tool), structured_share=flag.split,
            reduction=policy.relative_reduction, power=policy.power, alpha=policy.alpha)
        facts = Facts(t.judged_errors, t.unmapped_errors, t.schema_invalid_calls, leaks, test, t.comparison.design,
                      flag, power, give_ups=_test(t.give_ups), ended_soon=_test(t.ended_soon),
                      stop_quits=_test(t.stop_quits))
        found = None
        if evidence:
            shapes, total = ev.unmapped_shapes(unmapped.get(t.tool, []))
            found = ev.Evidence(ev.code_evidence(examples.get(t.tool, [])), shapes, total)
        out.append(dataclasses.replace(t, flag=flag, power=power, leaks=leaks, evidence=found,
                                       recommendation=recommend(facts, policy)))
    return out, sizes
