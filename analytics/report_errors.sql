-- report_errors: loop statistics of errors per arm, and per arm and tool, code or day.
--
-- Reads:  error_followups.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         The filters pick errors by their own tool and time; what followed an error is looked up in all data.
-- Returns one row per group; by_tool / by_code / by_day say which key besides variant the row is grouped by.
-- Errors cluster within sessions, so the row also carries the per-session sums that a cluster-robust interval
-- needs: sessions (with an error in the group), sum_ee = Σ errors², sum_ll = Σ loops², sum_el = Σ errors·loops.
-- For per-day rows a cluster is a session's errors of that day.
WITH filtered AS (
    SELECT *, CAST(ts AS DATE) AS day
    FROM error_followups
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
),
per_session AS (
    SELECT
        variant, tool, code, day, session_id,
        GROUPING(tool) = 0 AS by_tool,
        GROUPING(code) = 0 AS by_code,
        GROUPING(day) = 0 AS by_day,
        count(*) AS errors,
        count(*) FILTER (WHERE looped) AS loops,
        count(*) FILTER (WHERE back_to_back) AS back_to_back_loops,
        sum(loop_length) FILTER (WHERE looped) AS loop_length_sum,
        count(*) FILTER (WHERE justified_retry) AS justified_retries,
        count(*) FILTER (WHERE justified_retry AND retry_after_ms IS NOT NULL) AS justified_retries_with_hint,
        count(*) FILTER (WHERE waited_retry_after) AS justified_retries_waited,
        count(*) FILTER (WHERE unmapped) AS unmapped_errors,
        count(*) FILTER (WHERE follow_up = 'repeat') AS follow_repeat,
        count(*) FILTER (WHERE follow_up = 'repair') AS follow_repair,
        count(*) FILTER (WHERE follow_up = 'other_tool') AS follow_other_tool,
        count(*) FILTER (WHERE follow_up = 'user_turn') AS follow_user_turn,
        count(*) FILTER (WHERE follow_up = 'end') AS follow_end,
        count(*) FILTER (WHERE follow_up = 'nothing') AS follow_nothing,
        count(*) FILTER (WHERE repair_field IS NOT NULL AND repair_field_changed) AS field_repair_changed,
        count(*) FILTER (WHERE repair_field IS NOT NULL AND NOT repair_field_changed) AS field_repair_unchanged,
        count(*) FILTER (WHERE repair_field IS NOT NULL AND repair_field_changed IS NULL) AS field_repair_unknown
    FROM filtered
    GROUP BY GROUPING SETS ((variant, session_id), (variant, tool, session_id), (variant, code, session_id),
                            (variant, day, session_id))
)
SELECT
    variant, tool, code, day, by_tool, by_code, by_day,
    count(*) AS sessions,
    sum(errors) AS errors,
    sum(loops) AS loops,
    sum(errors * errors) AS sum_ee,
    sum(loops * loops) AS sum_ll,
    sum(errors * loops) AS sum_el,
    sum(back_to_back_loops) AS back_to_back_loops,
    COALESCE(sum(loop_length_sum), 0) AS loop_length_sum,
    sum(justified_retries) AS justified_retries,
    sum(justified_retries_with_hint) AS justified_retries_with_hint,
    sum(justified_retries_waited) AS justified_retries_waited,
    sum(unmapped_errors) AS unmapped_errors,
    sum(follow_repeat) AS follow_repeat,
    sum(follow_repair) AS follow_repair,
    sum(follow_other_tool) AS follow_other_tool,
    sum(follow_user_turn) AS follow_user_turn,
    sum(follow_end) AS follow_end,
    sum(follow_nothing) AS follow_nothing,
    sum(field_repair_changed) AS field_repair_changed,
    sum(field_repair_unchanged) AS field_repair_unchanged,
    sum(field_repair_unknown) AS field_repair_unknown
FROM per_session
GROUP BY variant, tool, code, day, by_tool, by_code, by_day
