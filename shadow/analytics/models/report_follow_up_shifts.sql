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
-- then per arm the sums of every follow-up at once: one pass over the sessions, unpivoted at the end (a row per
-- session and follow-up was six times the rows to group)
per_arm AS (
    SELECT scope, variant, count(*) AS sessions, sum(e) AS errors, sum(e * e) AS sum_ee,
           sum(h_repeat) AS hits_repeat, sum(h_repeat * h_repeat) AS hh_repeat, sum(e * h_repeat) AS eh_repeat,
           sum(h_repair) AS hits_repair, sum(h_repair * h_repair) AS hh_repair, sum(e * h_repair) AS eh_repair,
           sum(h_other_tool) AS hits_other_tool, sum(h_other_tool * h_other_tool) AS hh_other_tool,
           sum(e * h_other_tool) AS eh_other_tool,
           sum(h_user_turn) AS hits_user_turn, sum(h_user_turn * h_user_turn) AS hh_user_turn,
           sum(e * h_user_turn) AS eh_user_turn,
           sum(h_end) AS hits_end, sum(h_end * h_end) AS hh_end, sum(e * h_end) AS eh_end,
           sum(h_nothing) AS hits_nothing, sum(h_nothing * h_nothing) AS hh_nothing, sum(e * h_nothing) AS eh_nothing
    FROM per_session
    GROUP BY scope, variant
),
kinds AS (
    SELECT unnest(['repeat', 'repair', 'other_tool', 'user_turn', 'end', 'nothing']) AS follow_up
)
SELECT a.scope, a.variant, k.follow_up, a.sessions, a.errors,
       CASE k.follow_up WHEN 'repeat' THEN a.hits_repeat WHEN 'repair' THEN a.hits_repair
            WHEN 'other_tool' THEN a.hits_other_tool WHEN 'user_turn' THEN a.hits_user_turn
            WHEN 'end' THEN a.hits_end ELSE a.hits_nothing END AS hits,
       a.sum_ee,
       CASE k.follow_up WHEN 'repeat' THEN a.hh_repeat WHEN 'repair' THEN a.hh_repair
            WHEN 'other_tool' THEN a.hh_other_tool WHEN 'user_turn' THEN a.hh_user_turn
            WHEN 'end' THEN a.hh_end ELSE a.hh_nothing END AS sum_hh,
       CASE k.follow_up WHEN 'repeat' THEN a.eh_repeat WHEN 'repair' THEN a.eh_repair
            WHEN 'other_tool' THEN a.eh_other_tool WHEN 'user_turn' THEN a.eh_user_turn
            WHEN 'end' THEN a.eh_end ELSE a.eh_nothing END AS sum_eh
FROM per_arm AS a, kinds AS k
ORDER BY ALL
