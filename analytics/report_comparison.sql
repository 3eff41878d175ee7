-- report_comparison: per-session error and loop counts of both arms, for the two-arm test, per tool and overall.
--
-- Reads:  error_followups, flag_periods.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         $randomised BOOLEAN: true keeps only errors made while their tool's flag split sessions between the
--         arms (mode 'cutover' with 0 < percent < 100): a randomised comparison. false keeps every error (an
--         observational comparison: the arms may differ in time, traffic and tools).
-- Returns (tool, all_tools, errors_a, loops_a, errors_b, loops_b, sessions): how many sessions had that shape;
-- arm a is legacy, arm b structured; all_tools rows pool every tool.
WITH filtered AS (
    SELECT e.tool, e.session_id, e.variant, e.looped
    FROM error_followups AS e
    WHERE ($tool IS NULL OR e.tool = $tool)
      AND ($since IS NULL OR e.ts >= $since)
      AND ($until IS NULL OR e.ts < $until)
      AND (NOT $randomised OR EXISTS (
          SELECT 1 FROM flag_periods AS p
          WHERE p.randomised AND p.tool = e.tool AND e.ts >= p.starts_at
            AND (p.ends_at IS NULL OR e.ts < p.ends_at)))
),
per_session AS (
    SELECT
        tool, session_id,
        GROUPING(tool) = 1 AS all_tools,
        count(*) FILTER (WHERE variant = 'legacy') AS errors_a,
        count(*) FILTER (WHERE variant = 'legacy' AND looped) AS loops_a,
        count(*) FILTER (WHERE variant = 'structured') AS errors_b,
        count(*) FILTER (WHERE variant = 'structured' AND looped) AS loops_b
    FROM filtered
    GROUP BY GROUPING SETS ((tool, session_id), (session_id))
)
SELECT tool, all_tools, errors_a, loops_a, errors_b, loops_b, count(*) AS sessions
FROM per_session
GROUP BY tool, all_tools, errors_a, loops_a, errors_b, loops_b
ORDER BY all_tools, tool, errors_a, loops_a, errors_b, loops_b
