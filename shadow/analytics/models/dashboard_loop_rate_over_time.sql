-- dashboard_loop_rate_over_time: errors and loops per time bucket and arm, for the dashboard's loop-rate chart.
--
-- Reads:  error_followups.
-- Params: $unit VARCHAR: the bucket width, one of 'hour', 'day', 'week', 'month' (DuckDB date_trunc parts, UTC;
--         weeks start on Monday). $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive):
--         NULL means no filter.
-- Returns (bucket, variant, errors, loops, first_ts, last_ts), oldest bucket first: an error falls in the bucket of
-- its own call's time, whatever followed it; first_ts and last_ts are its first and last error's times, so a point
-- is drawn where its errors are (a bucket's middle may lie past the last call). The dashboard draws the loop rate
-- loops / errors with a Wilson 95% band.
-- The bucket is a TIMESTAMP for every unit (DuckDB before 2.0 truncates to a DATE for 'day' and longer units).
SELECT
    CAST(date_trunc($unit, ts) AS TIMESTAMP) AS bucket,
    variant,
    count(*) AS errors,
    count(*) FILTER (WHERE looped) AS loops,
    min(ts) AS first_ts,
    max(ts) AS last_ts
FROM error_followups
WHERE ($tool IS NULL OR tool = $tool)
  AND ($since IS NULL OR ts >= $since)
  AND ($until IS NULL OR ts < $until)
GROUP BY bucket, variant
ORDER BY bucket, variant
