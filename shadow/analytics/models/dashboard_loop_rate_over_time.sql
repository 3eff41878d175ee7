-- dashboard_loop_rate_over_time: errors and loops per time bucket and arm, for the dashboard's loop-rate chart.
--
-- Reads:  error_followups.
-- Params: $unit VARCHAR: the bucket width, one of 'hour', 'day', 'week', 'month' (DuckDB date_trunc parts, UTC;
--         weeks start on Monday). $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive):
--         NULL means no filter.
-- Returns (bucket, variant, errors, loops), oldest bucket first: an error falls in the bucket of its own call's
-- time, whatever followed it. The dashboard draws the loop rate loops / errors with a Wilson 95% band.
-- The bucket is a TIMESTAMP for every unit (DuckDB before 2.0 truncates to a DATE for 'day' and longer units).
SELECT
    CAST(date_trunc($unit, ts) AS TIMESTAMP) AS bucket,
    variant,
    count(*) AS errors,
    count(*) FILTER (WHERE looped) AS loops
FROM error_followups
WHERE ($tool IS NULL OR tool = $tool)
  AND ($since IS NULL OR ts >= $since)
  AND ($until IS NULL OR ts < $until)
GROUP BY bucket, variant
ORDER BY bucket, variant
