-- report_sessions: the shapes of sessions: how many errors and loops each had in each arm, per tool and pooled,
-- over all its errors and over those made during a randomised split.
--
-- Reads:  error_followups, flag_periods.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         $within INTEGER: how many calls after an error a session may still make and count as ended by it.
-- Returns (tool, all_tools, errors_a, loops_a, errors_b, loops_b, split_errors_a, split_loops_a, split_errors_b,
-- split_loops_b, gives_a, gives_b, split_gives_a, split_gives_b, ends_a, ends_b, split_ends_a, split_ends_b,
-- stops_a, stops_b, split_stops_a, split_stops_b, sessions): how many sessions had exactly that shape.
-- Three ways of giving up after an error, each counted per arm like the loops:
--   * gives: the session ended right after the error (follow-up 'end' or 'nothing'): the task was dropped;
--   * ends: the session made at most $within more calls after the error (of any tool), then had no more, and the
--     erring tool never succeeded after it (a session that got past the error and ended was done, not given up:
--     an arm that stops looping ends sooner after its errors);
--   * stops: the error's reply said next_action 'stop' (served in the structured arm; in the legacy arm what the
--     shadow translation would have said) and the session ended within $within calls of it, likewise.
-- Arm a is legacy, arm b structured;
-- all_tools rows pool every tool (a session is then one cluster across tools). "split" counts only errors made
-- while the tool's flag split sessions between the arms (mode 'cutover' with 0 < percent < 100): a randomised
-- comparison. Errors cluster within sessions; these shapes are what the cluster-robust intervals, the seeded
-- session bootstrap (resampling shapes is resampling sessions) and the two-arm test need.
WITH filtered AS (
    SELECT e.id, e.tool, e.session_id, e.variant = 'structured' AS in_b, e.looped,
           e.follow_up IN ('end', 'nothing') AS gave_up, e.calls_after, e.ok_after, e.next_action,
           p.tool IS NOT NULL AS in_split
    FROM error_followups AS e
    -- a tool's flag periods do not overlap (each ends where the next starts), so an error is in one at most
    LEFT JOIN flag_periods AS p
        ON p.randomised AND p.tool = e.tool AND e.ts >= p.starts_at AND (p.ends_at IS NULL OR e.ts < p.ends_at)
    WHERE e.follow_up <> 'unknown'  -- records are missing after it: not in the loop rate
      AND ($tool IS NULL OR e.tool = $tool)
      AND ($since IS NULL OR e.ts >= $since)
      AND ($until IS NULL OR e.ts < $until)
),
marked AS (
    SELECT tool, session_id, in_b, looped, gave_up, in_split,
           calls_after <= $within AND NOT ok_after AS ended,
           calls_after <= $within AND NOT ok_after AND COALESCE(next_action = 'stop', false) AS stopped
    FROM filtered
),
per_session AS (
    SELECT
        tool, session_id,
        GROUPING(tool) = 1 AS all_tools,
        count(*) FILTER (WHERE NOT in_b) AS errors_a,
        count(*) FILTER (WHERE NOT in_b AND looped) AS loops_a,
        count(*) FILTER (WHERE in_b) AS errors_b,
        count(*) FILTER (WHERE in_b AND looped) AS loops_b,
        count(*) FILTER (WHERE in_split AND NOT in_b) AS split_errors_a,
        count(*) FILTER (WHERE in_split AND NOT in_b AND looped) AS split_loops_a,
        count(*) FILTER (WHERE in_split AND in_b) AS split_errors_b,
        count(*) FILTER (WHERE in_split AND in_b AND looped) AS split_loops_b,
        count(*) FILTER (WHERE NOT in_b AND gave_up) AS gives_a,
        count(*) FILTER (WHERE in_b AND gave_up) AS gives_b,
        count(*) FILTER (WHERE in_split AND NOT in_b AND gave_up) AS split_gives_a,
        count(*) FILTER (WHERE in_split AND in_b AND gave_up) AS split_gives_b,
        count(*) FILTER (WHERE NOT in_b AND ended) AS ends_a,
        count(*) FILTER (WHERE in_b AND ended) AS ends_b,
        count(*) FILTER (WHERE in_split AND NOT in_b AND ended) AS split_ends_a,
        count(*) FILTER (WHERE in_split AND in_b AND ended) AS split_ends_b,
        count(*) FILTER (WHERE NOT in_b AND stopped) AS stops_a,
        count(*) FILTER (WHERE in_b AND stopped) AS stops_b,
        count(*) FILTER (WHERE in_split AND NOT in_b AND stopped) AS split_stops_a,
        count(*) FILTER (WHERE in_split AND in_b AND stopped) AS split_stops_b
    FROM marked
    GROUP BY GROUPING SETS ((tool, session_id), (session_id))
)
SELECT tool, all_tools, errors_a, loops_a, errors_b, loops_b, split_errors_a, split_loops_a, split_errors_b,
       split_loops_b, gives_a, gives_b, split_gives_a, split_gives_b, ends_a, ends_b, split_ends_a, split_ends_b,
       stops_a, stops_b, split_stops_a, split_stops_b, count(*) AS sessions
FROM per_session
GROUP BY ALL
ORDER BY ALL
