-- report_follow_up_shifts: per arm, the per-session sums the cluster-robust interval of each follow-up's share
-- of errors needs; once over the errors made during a randomised split, once over all errors.
--
-- Reads:  error_followups, flag_periods.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (scope, variant, follow_up, sessions, errors, hits, sum_ee, sum_hh, sum_eh): scope 'randomised' or
-- 'all'; sessions = sessions with an error in the arm; hits = errors followed by follow_up; the sums run over
-- sessions of e = errors, h = hits.
WITH filtered AS (
    SELECT e.session_id, e.variant, e.follow_up,
           EXISTS (
               SELECT 1 FROM flag_periods AS p
               WHERE p.randomised AND p.tool = e.tool AND e.ts >= p.starts_at
                 AND (p.ends_at IS NULL OR e.ts < p.ends_at)
           ) AS in_split
    FROM error_followups AS e
    WHERE ($tool IS NULL OR e.tool = $tool)
      AND ($since IS NULL OR e.ts >= $since)
      AND ($until IS NULL OR e.ts < $until)
),
scoped AS (
    SELECT 'all' AS scope, session_id, variant, follow_up FROM filtered
    UNION ALL
    SELECT 'randomised', session_id, variant, follow_up FROM filtered WHERE in_split
),
kinds AS (
    SELECT unnest(['repeat', 'repair', 'other_tool', 'user_turn', 'end', 'nothing']) AS follow_up
),
per_session AS (
    SELECT s.scope, s.variant, s.session_id, k.follow_up, count(*) AS e,
           count(*) FILTER (WHERE s.follow_up = k.follow_up) AS h
    FROM scoped AS s, kinds AS k
    GROUP BY ALL
)
SELECT scope, variant, follow_up, count(*) AS sessions, sum(e) AS errors, sum(h) AS hits,
       sum(e * e) AS sum_ee, sum(h * h) AS sum_hh, sum(e * h) AS sum_eh
FROM per_session
GROUP BY ALL
ORDER BY ALL
