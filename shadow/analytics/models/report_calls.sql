-- report_calls: calls, errors and the cutover-readiness counts per arm and tool, and per arm and day.
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns one row per group; by_day says whether the row is grouped by day (else by tool). Every count is
-- additive, so per-arm and per-tool totals are sums of these rows.
--   unmapped_errors:      errors no rule mapped (they became internal_error); their share of errors tells a
--                         team the tool is not ready to cut over.
--   schema_invalid_calls: calls whose structured payload failed the published schema.
SELECT
    variant,
    tool,
    day,
    GROUPING(day) = 0 AS by_day,
    count(*) AS calls,
    count(*) FILTER (WHERE outcome = 'error') AS errors,
    count(*) FILTER (WHERE outcome = 'error' AND unmapped) AS unmapped_errors,
    count(*) FILTER (WHERE NOT schema_valid) AS schema_invalid_calls
FROM (
    SELECT variant, tool, CAST(ts AS DATE) AS day, outcome, unmapped, schema_valid
    FROM calls
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
) AS filtered
GROUP BY GROUPING SETS ((variant, tool), (variant, day))
