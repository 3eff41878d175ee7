-- report_errors: what followed the errors, counted per arm and tool, per arm and code, and per arm and day.
--
-- Reads:  error_followups.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         The filters pick errors by their own tool and time; what followed an error is looked up in all data.
-- Returns one row per group; by_code / by_day say which key besides variant the row is grouped by (else tool).
-- Every count is additive: an arm's totals are the sums of its tool rows. errors counts the errors whose follow-up
-- is known (the loop rate's denominator); follow_unknown those left out because records are missing after them.
-- The errors are read once, into one row per arm, tool, code and day; the three groupings are sums of those rows
-- (GROUPING SETS over the errors themselves ran on one thread).
WITH fine AS (
    SELECT
        variant, tool, code, CAST(ts AS DATE) AS day,
        count(*) FILTER (WHERE follow_up <> 'unknown') AS errors,
        count(*) FILTER (WHERE looped) AS loops,
        count(*) FILTER (WHERE back_to_back) AS back_to_back_loops,
        COALESCE(sum(loop_length) FILTER (WHERE looped), 0) AS loop_length_sum,
        count(*) FILTER (WHERE justified_retry) AS justified_retries,
        count(*) FILTER (WHERE justified_retry AND retry_after_ms IS NOT NULL) AS justified_retries_with_hint,
        count(*) FILTER (WHERE waited_retry_after) AS justified_retries_waited,
        count(*) FILTER (WHERE unmapped AND follow_up <> 'unknown') AS unmapped_errors,
        count(*) FILTER (WHERE follow_up = 'repeat') AS follow_repeat,
        count(*) FILTER (WHERE follow_up = 'repair') AS follow_repair,
        count(*) FILTER (WHERE follow_up = 'other_tool') AS follow_other_tool,
        count(*) FILTER (WHERE follow_up = 'user_turn') AS follow_user_turn,
        count(*) FILTER (WHERE follow_up = 'end') AS follow_end,
        count(*) FILTER (WHERE follow_up = 'nothing') AS follow_nothing,
        count(*) FILTER (WHERE follow_up = 'unknown') AS follow_unknown,
        count(*) FILTER (WHERE repair_field IS NOT NULL AND repair_field_changed) AS field_repair_changed,
        count(*) FILTER (WHERE repair_field IS NOT NULL AND NOT repair_field_changed) AS field_repair_unchanged,
        count(*) FILTER (WHERE repair_field IS NOT NULL AND repair_field_changed IS NULL) AS field_repair_unknown
    FROM error_followups
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
    GROUP BY variant, tool, code, CAST(ts AS DATE)
)
SELECT variant, tool, code, day,
       GROUPING(code) = 0 AS by_code,
       GROUPING(day) = 0 AS by_day,
       CAST(sum(errors) AS BIGINT) AS errors, CAST(sum(loops) AS BIGINT) AS loops,
       CAST(sum(back_to_back_loops) AS BIGINT) AS back_to_back_loops,
       CAST(sum(loop_length_sum) AS BIGINT) AS loop_length_sum,
       CAST(sum(justified_retries) AS BIGINT) AS justified_retries,
       CAST(sum(justified_retries_with_hint) AS BIGINT) AS justified_retries_with_hint,
       CAST(sum(justified_retries_waited) AS BIGINT) AS justified_retries_waited,
       CAST(sum(unmapped_errors) AS BIGINT) AS unmapped_errors, CAST(sum(follow_repeat) AS BIGINT) AS follow_repeat,
       CAST(sum(follow_repair) AS BIGINT) AS follow_repair,
       CAST(sum(follow_other_tool) AS BIGINT) AS follow_other_tool,
       CAST(sum(follow_user_turn) AS BIGINT) AS follow_user_turn, CAST(sum(follow_end) AS BIGINT) AS follow_end,
       CAST(sum(follow_nothing) AS BIGINT) AS follow_nothing, CAST(sum(follow_unknown) AS BIGINT) AS follow_unknown,
       CAST(sum(field_repair_changed) AS BIGINT) AS field_repair_changed,
       CAST(sum(field_repair_unchanged) AS BIGINT) AS field_repair_unchanged,
       CAST(sum(field_repair_unknown) AS BIGINT) AS field_repair_unknown
FROM fine
GROUP BY GROUPING SETS ((variant, tool), (variant, code), (variant, day))
