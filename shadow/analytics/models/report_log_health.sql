-- report_log_health: is the call log complete? Per writing process, how much it wrote and when it last wrote;
-- and over every session, how many have holes in their sequence numbers.
--
-- Reads:  calls, marks, session_counters. Covers the whole log (no filters): a tool or time filter would cut
--         sessions apart.
-- Params: none.
-- Returns rows of two kinds: kind 'process' (process, host, calls, marks, first_write, last_write) and kind
-- 'sessions' (calls = sessions, marks = sessions with a gap, missing = sequence numbers missing in them).
-- Sequence numbers start at 1 in every session's counter (each epoch: a counter started anew restarts at 1) and
-- calls and marks share them, so a counter whose highest number exceeds the distinct numbers it holds lost a
-- record (or its writer has not flushed it yet).
WITH events AS (
    SELECT ts, process, host, 1 AS is_call FROM calls
    UNION ALL
    SELECT ts, process, host, 0 AS is_call FROM marks
),
per_session AS (
    SELECT session_id, sum(max_seq - seqs) AS missing FROM session_counters GROUP BY session_id
)
SELECT 'process' AS kind, process, host, sum(is_call) AS calls, count(*) - sum(is_call) AS marks,
       min(ts) AS first_write, max(ts) AS last_write, 0 AS missing
FROM events
GROUP BY process, host
UNION ALL
SELECT 'sessions', NULL, NULL, count(*), count(*) FILTER (WHERE missing > 0), NULL, NULL,
       COALESCE(sum(missing) FILTER (WHERE missing > 0), 0)
FROM per_session
ORDER BY kind, last_write DESC NULLS LAST, process, host
