-- report_calls: calls, errors and the cutover-readiness counts per arm, per arm and tool, per arm and day,
-- and per tool (both arms).
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns one row per group; by_variant / by_tool / by_day say which keys the row is grouped by
-- (a key that is not grouped is NULL).
--   unmapped_errors:      errors no rule mapped (they became internal_error); their share of errors tells a
--                         team the tool is not ready to cut over.
--   schema_invalid_calls: calls whose structured payload failed the published schema.
SELECT
    variant,
    tool,
    day,
    GROUPING(variant) = 0 AS by_variant,
    GROUPING(tool) = 0 AS by_tool,
    GROUPING(day) = 0 AS by_day,
    count(*) AS calls,
    count(*) FILTER (WHERE outcome = 'error') AS errors,
    count(*) FILTER (WHERE outcome = 'error' AND unmapped) AS unmapped_errors,
    count(*) FILTER (WHERE NOT schema_valid) AS schema_invalid_calls,
    count(DISTINCT session_id) AS sessions
FROM (
    SELECT variant, tool, CAST(ts AS DATE) AS day, outcome, unmapped, schema_valid, session_id
    FROM calls
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
) AS filtered
GROUP BY GROUPING SETS ((variant), (variant, tool), (variant, day), (tool))
