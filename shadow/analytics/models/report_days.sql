-- report_days: per arm and day, the per-session sums a cluster-robust interval of the daily loop rate needs.
--
-- Reads:  error_followups.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (variant, day, sessions, errors, loops, sum_ee, sum_ll, sum_el): a cluster is a session's errors of
-- that day; sessions counts those with an error that day, sum_ee = Σ errors², sum_ll = Σ loops²,
-- sum_el = Σ errors·loops over them.
WITH per_session AS (
    SELECT variant, CAST(ts AS DATE) AS day, session_id,
           count(*) AS errors, count(*) FILTER (WHERE looped) AS loops
    FROM error_followups
    WHERE follow_up <> 'unknown'  -- records are missing after it: not in the loop rate
      AND ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
    GROUP BY ALL
)
SELECT variant, day,
       count(*) AS sessions,
       sum(errors) AS errors,
       sum(loops) AS loops,
       sum(errors * errors) AS sum_ee,
       sum(loops * loops) AS sum_ll,
       sum(errors * loops) AS sum_el
FROM per_session
GROUP BY variant, day
ORDER BY day, variant
