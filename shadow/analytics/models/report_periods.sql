-- report_periods: each tool's loop rate before and after its cutover moment (from the flag history), by arm.
--
-- Reads:  error_followups, flag_periods.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (tool, period 'before' | 'after', variant, sessions, errors, loops, sum_ee, sum_ll, sum_el) for tools
-- that have a cutover moment; the sums feed the cluster-robust interval as in report_errors.
WITH cutovers AS (
    SELECT DISTINCT tool, first_cutover_at
    FROM flag_periods
    WHERE first_cutover_at IS NOT NULL
),
per_session AS (
    SELECT
        e.tool,
        CASE WHEN e.ts < c.first_cutover_at THEN 'before' ELSE 'after' END AS period,
        e.variant,
        e.session_id,
        count(*) AS errors,
        count(*) FILTER (WHERE e.looped) AS loops
    FROM error_followups AS e
    JOIN cutovers AS c ON c.tool = e.tool
    WHERE e.follow_up <> 'unknown'  -- records are missing after it: not in the loop rate
      AND ($tool IS NULL OR e.tool = $tool)
      AND ($since IS NULL OR e.ts >= $since)
      AND ($until IS NULL OR e.ts < $until)
    GROUP BY ALL
)
SELECT
    tool, period, variant,
    count(*) AS sessions,
    sum(errors) AS errors,
    sum(loops) AS loops,
    sum(errors * errors) AS sum_ee,
    sum(loops * loops) AS sum_ll,
    sum(errors * loops) AS sum_el
FROM per_session
GROUP BY tool, period, variant
ORDER BY tool, period DESC, variant
