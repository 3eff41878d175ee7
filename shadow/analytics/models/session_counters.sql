-- session_counters: per session and sequence counter (epoch), which sequence numbers its records used.
--
-- Reads:  calls, marks, and sync_scope(session_id) (the sessions to compute when $all_sessions is false).
-- Params: $all_sessions BOOLEAN: true computes every session; false only the sessions listed in sync_scope
--         (shadow sync recomputes just the sessions that received new calls or marks).
-- Writes: nothing; shadow sync stores the result in the table session_counters.
-- Returns (session_id, epoch, min_seq, max_seq, seqs): the lowest and highest seq of the counter's calls and
-- marks, and how many distinct seqs it used. Seqs are consecutive from 1 in a complete counter, so the report
-- reads holes from these three numbers (report_totals, report_log_health) without going over every record again.
SELECT session_id, epoch, MIN(seq) AS min_seq, MAX(seq) AS max_seq, COUNT(DISTINCT seq) AS seqs
FROM (
    SELECT session_id, epoch, seq
    FROM calls
    WHERE $all_sessions OR session_id IN (SELECT session_id FROM sync_scope)
    UNION ALL
    SELECT session_id, epoch, seq
    FROM marks
    WHERE $all_sessions OR session_id IN (SELECT session_id FROM sync_scope)
) AS used
GROUP BY session_id, epoch
