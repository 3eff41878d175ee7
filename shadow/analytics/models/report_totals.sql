-- report_totals: the size of the data a loop-rate report covers.
--
-- Reads:  calls.
-- Params: $tool VARCHAR (NULL: every tool), $since TIMESTAMP (inclusive, NULL: no bound),
--         $until TIMESTAMP (exclusive, NULL: no bound). Times are UTC.
-- Returns one row: calls, errors, sessions (tasks), the first and last call, the median latency of a call, and
-- how many calls are simulated (source 'simulated': shadow demo's agents).
SELECT
    count(*) AS calls,
    count(*) FILTER (WHERE outcome = 'error') AS errors,
    count(DISTINCT session_id) AS sessions,
    min(ts) AS first_call,
    max(ts) AS last_call,
    median(latency_us) AS median_latency_us,
    count(*) FILTER (WHERE source = 'simulated') AS simulated_calls
FROM calls
WHERE ($tool IS NULL OR tool = $tool)
  AND ($since IS NULL OR ts >= $since)
  AND ($until IS NULL OR ts < $until)
