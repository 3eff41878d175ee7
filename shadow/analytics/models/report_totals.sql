-- report_totals: the size of the data a loop-rate report covers.
--
-- Reads:  calls, marks.
-- Params: $tool VARCHAR (NULL: every tool), $since TIMESTAMP (inclusive, NULL: no bound),
--         $until TIMESTAMP (exclusive, NULL: no bound). Times are UTC.
-- Returns one row: calls, errors, sessions (tasks), the first and last call, the median latency of a call, and
-- how many calls are simulated (source 'simulated': shadow demo's agents), how many were imported without a time
-- (source 'import-synthetic-time': the time is a stand-in), and sessions_with_gaps: sessions whose
-- seqs (calls and marks) are not consecutive from 1 within an epoch (each counter's), so records are missing.
WITH filtered AS (
    SELECT *
    FROM calls
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
),
used_seqs AS (
    SELECT DISTINCT session_id, epoch, seq
    FROM (SELECT session_id, epoch, seq FROM calls UNION ALL SELECT session_id, epoch, seq FROM marks) AS used
    WHERE session_id IN (SELECT session_id FROM filtered)
),
steps AS (
    SELECT session_id, seq, LAG(seq) OVER (PARTITION BY session_id, epoch ORDER BY seq) AS prev_seq
    FROM used_seqs
)
SELECT
    count(*) AS calls,
    count(*) FILTER (WHERE outcome = 'error') AS errors,
    count(DISTINCT session_id) AS sessions,
    min(ts) AS first_call,
    max(ts) AS last_call,
    median(latency_us) AS median_latency_us,
    count(*) FILTER (WHERE source = 'simulated') AS simulated_calls,
    count(*) FILTER (WHERE source = 'import-synthetic-time') AS synthetic_time_calls,
    (SELECT count(DISTINCT session_id) FROM steps
     WHERE seq > COALESCE(prev_seq, 0) + 1) AS sessions_with_gaps
FROM filtered
