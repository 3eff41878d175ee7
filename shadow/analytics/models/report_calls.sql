-- report_calls: calls, errors and the cutover-readiness counts per arm and tool, and per arm and day.
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns one row per group; by_day says whether the row is grouped by day (else by tool). Every count is
-- additive, so per-arm and per-tool totals are sums of these rows.
--   unmapped_errors:      errors no rule mapped (served rejected, internal_error or a phrase's guess); their share
--                         of errors tells a team the tool is not ready to cut over.
--   schema_invalid_calls: calls whose structured payload failed the published schema.
-- The calls are read once, into one row per arm, tool and day; both groupings are sums of those few rows (GROUPING
-- SETS over the calls themselves ran on one thread, at about three times the cost).
WITH fine AS (
    SELECT
        variant,
        tool,
        CAST(ts AS DATE) AS day,
        count(*) AS calls,
        count(*) FILTER (WHERE outcome = 'error') AS errors,
        count(*) FILTER (WHERE outcome = 'error' AND unmapped) AS unmapped_errors,
        count(*) FILTER (WHERE NOT schema_valid) AS schema_invalid_calls
    FROM calls
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
    GROUP BY variant, tool, CAST(ts AS DATE)
)
SELECT variant, tool, day,
       GROUPING(day) = 0 AS by_day,
       CAST(sum(calls) AS BIGINT) AS calls, CAST(sum(errors) AS BIGINT) AS errors,
       CAST(sum(unmapped_errors) AS BIGINT) AS unmapped_errors,
       CAST(sum(schema_invalid_calls) AS BIGINT) AS schema_invalid_calls
FROM fine
GROUP BY GROUPING SETS ((variant, tool), (variant, day))
