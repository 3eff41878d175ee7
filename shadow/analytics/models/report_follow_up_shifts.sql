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
           p.tool IS NOT NULL AS in_split
    FROM error_followups AS e
    -- a tool's flag periods do not overlap (each ends where the next starts), so an error is in one at most
    LEFT JOIN flag_periods AS p
        ON p.randomised AND p.tool = e.tool AND e.ts >= p.starts_at AND (p.ends_at IS NULL OR e.ts < p.ends_at)
    WHERE ($tool IS NULL OR e.tool = $tool)
      AND ($since IS NULL OR e.ts >= $since)
      AND ($until IS NULL OR e.ts < $until)
),
scoped AS (
    SELECT 'all' AS scope, session_id, variant, follow_up FROM filtered
    UNION ALL
    SELECT 'randomised', session_id, variant, follow_up FROM filtered WHERE in_split
),
-- one row per session: its errors and the hits of every follow-up, counted in one pass
per_session AS (
    SELECT scope, variant, session_id, count(*) AS e,
           count(*) FILTER (WHERE follow_up = 'repeat') AS h_repeat,
           count(*) FILTER (WHERE follow_up = 'repair') AS h_repair,
           count(*) FILTER (WHERE follow_up = 'other_tool') AS h_other_tool,
           count(*) FILTER (WHERE follow_up = 'user_turn') AS h_user_turn,
           count(*) FILTER (WHERE follow_up = 'end') AS h_end,
           count(*) FILTER (WHERE follow_up = 'nothing') AS h_nothing
    FROM scoped
    GROUP BY scope, variant, session_id
),
kinds AS (
    SELECT unnest(['repeat', 'repair', 'other_tool', 'user_turn', 'end', 'nothing']) AS follow_up
),
-- then one row per session and follow-up
per_kind AS (
    SELECT s.scope, s.variant, k.follow_up, s.e,
           CASE k.follow_up WHEN 'repeat' THEN s.h_repeat WHEN 'repair' THEN s.h_repair
                WHEN 'other_tool' THEN s.h_other_tool WHEN 'user_turn' THEN s.h_user_turn
                WHEN 'end' THEN s.h_end ELSE s.h_nothing END AS h
    FROM per_session AS s, kinds AS k
)
SELECT scope, variant, follow_up, count(*) AS sessions, sum(e) AS errors, sum(h) AS hits,
       sum(e * e) AS sum_ee, sum(h * h) AS sum_hh, sum(e * h) AS sum_eh
FROM per_kind
GROUP BY ALL
ORDER BY ALL
