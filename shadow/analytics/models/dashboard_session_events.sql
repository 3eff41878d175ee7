-- dashboard_session_events: one session's calls and marks in order, with what followed each error.
--
-- Reads:  calls, marks, error_followups.
-- Params: $session_id VARCHAR; $limit INTEGER: at most this many events, from the start of the session.
-- Returns one row per event, ordered as the loop definitions order them (epoch, seq, calls before marks, id):
-- kind is 'call' or the mark's kind; the call columns are NULL on marks. repeats_previous is true when a call
-- goes to the same tool with the same argument fingerprint as the call before it (marks skipped). follow_up,
-- looped and loop_length come from error_followups (errors only). args and payloads are as logged: redacted and
-- truncated JSON text.
WITH events AS (
    SELECT epoch, seq, 0 AS is_mark, id, ts, 'call' AS kind, tool, variant, mode, outcome, code, next_action,
           retryable, unmapped, fingerprint, latency_us,
           CAST(args AS VARCHAR) AS args,
           CAST(legacy_payload AS VARCHAR) AS legacy_payload,
           CAST(new_payload AS VARCHAR) AS new_payload
    FROM calls
    WHERE session_id = $session_id
    UNION ALL
    SELECT epoch, seq, 1 AS is_mark, id, ts, kind, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL
    FROM marks
    WHERE session_id = $session_id
),
ordered AS (
    SELECT *,
           LAG(tool) OVER calls_only AS previous_tool,
           LAG(fingerprint) OVER calls_only AS previous_fingerprint
    FROM events
    WINDOW calls_only AS (PARTITION BY is_mark ORDER BY epoch NULLS FIRST, seq, id)
)
SELECT
    o.seq, o.ts, o.kind, o.tool, o.variant, o.mode, o.outcome, o.code, o.next_action, o.retryable, o.unmapped,
    o.fingerprint, o.latency_us,
    o.is_mark = 0 AND o.previous_tool = o.tool AND o.previous_fingerprint = o.fingerprint AS repeats_previous,
    e.follow_up, e.looped, e.loop_length,
    o.args, o.legacy_payload, o.new_payload
FROM ordered AS o
LEFT JOIN error_followups AS e ON e.id = o.id AND o.is_mark = 0
ORDER BY o.epoch NULLS FIRST, o.seq, o.is_mark, o.id
LIMIT $limit
