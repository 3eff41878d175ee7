-- report_error_rate: each tool's recent errors per day (the last 7 days of the report's range), for the power's
-- "how many days".
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (tool, errors_per_day): errors in the window over its length in days (at least one hour).
WITH filtered AS NOT MATERIALIZED (
    SELECT tool, ts, outcome
    FROM calls
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
),
bounds AS (
    SELECT max(ts) AS last_ts, greatest(min(ts), max(ts) - INTERVAL 7 DAY) AS window_start FROM filtered
),
-- per tool, its errors in the window: counted per tool alone (the bounds joined to a few rows, not to every call)
per_tool AS (
    SELECT f.tool, count(*) FILTER (WHERE f.outcome = 'error' AND f.ts >= b.window_start) AS errors
    FROM filtered AS f, bounds AS b
    GROUP BY f.tool
)
SELECT t.tool,
       -- doubles throughout (and whole microseconds between the bounds), so DuckDB and Spark compute the same value
       CAST(t.errors AS DOUBLE)
           / greatest(CAST(date_diff('microsecond', b.window_start, b.last_ts) AS DOUBLE) / 86400000000.0,
                      CAST(1 AS DOUBLE) / 24) AS errors_per_day
FROM per_tool AS t, bounds AS b
ORDER BY t.tool
