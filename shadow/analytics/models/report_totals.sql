-- report_totals: the size of the data a loop-rate report covers.
--
-- Reads:  calls, session_counters.
-- Params: $tool VARCHAR (NULL: every tool), $since TIMESTAMP (inclusive, NULL: no bound),
--         $until TIMESTAMP (exclusive, NULL: no bound). Times are UTC.
-- Returns one row: calls, errors, sessions (tasks), the first and last call, the median latency of a call, and
-- how many calls are simulated (source 'simulated': shadow demo's agents), how many were imported without a time
-- (source 'import-synthetic-time': the time is a stand-in), and sessions_with_gaps: sessions whose
-- seqs (calls and marks) are not consecutive from 1 within an epoch (each counter's), so records are missing.
WITH filtered AS NOT MATERIALIZED (
    SELECT session_id, ts, outcome, latency_us, source
    FROM calls
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
),
-- A counter's distinct seqs s1 < ... < sk have a hole when s1 > 1 or two neighbours differ by more than one:
-- exactly when they span more numbers (from the lower of s1 and 1 to sk) than there are of them.
gapped AS (
    SELECT DISTINCT session_id
    FROM session_counters
    WHERE max_seq - LEAST(min_seq, 1) + 1 > seqs
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
    (SELECT count(DISTINCT f.session_id) FROM filtered AS f
     JOIN gapped AS g ON g.session_id = f.session_id) AS sessions_with_gaps
FROM filtered
