-- error_followups: one row per error call, with what the session did next.
--
-- Reads:  calls, marks, and sync_scope(session_id) (the sessions to compute when $all_sessions is false).
-- Params: $all_sessions BOOLEAN: true computes every session; false only the sessions listed in sync_scope
--         (shadow sync recomputes just the sessions that received new calls or marks).
-- Writes: nothing; shadow sync stores the result in the table error_followups.
--
-- Definitions (README, "Watching the loop rate"):
--   * A session's calls and marks share one sequence (seq). Order: seq, then calls before marks, then id.
--   * An error is a call whose outcome is 'error'.
--   * The error is followed by a loop when the next CALL in the session (marks skipped) goes to the same tool
--     with the same argument fingerprint. It is back to back when no mark lies between the two calls.
--   * Loop length: how many consecutive calls after the error repeat it exactly (same tool and fingerprint).
--   * Follow-up: the first EVENT after the error: repeat | repair (same tool, other arguments) | other_tool |
--     user_turn | end (a mark) | nothing (the session has no later event).
--   * Justified retry: a loop after an error that was retryable; it waited when the next call started at least
--     retry_after_ms after the error's call started.
--   * For a validation_error naming a field (error_field), a repair changed the field when the per-argument
--     fingerprint of that field differs. The field is looked up as named, else by its top-level part
--     ('items[0].date' and 'address.zip' name the arguments 'items' and 'address').
WITH scoped_calls AS (
    SELECT id, session_id, seq, ts, tool, mode, variant, fingerprint, arg_hashes, outcome, code, retryable,
           retry_after_ms, error_field, unmapped, schema_valid
    FROM calls
    WHERE $all_sessions OR session_id IN (SELECT session_id FROM sync_scope)
),
scoped_marks AS (
    SELECT id, session_id, seq, kind
    FROM marks
    WHERE kind IN ('user_turn', 'end')
      AND ($all_sessions OR session_id IN (SELECT session_id FROM sync_scope))
),
-- Calls and marks as one ordered stream per session (marks carry no call columns).
events AS (
    SELECT session_id, seq, 0 AS is_mark, id, NULL AS kind, ts, tool, mode, variant, fingerprint, arg_hashes,
           outcome, code, retryable, retry_after_ms, error_field, unmapped, schema_valid
    FROM scoped_calls
    UNION ALL
    SELECT session_id, seq, 1 AS is_mark, id, kind, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM scoped_marks
),
-- For each event: the first event after it, and how many marks came up to it (to find marks between two calls).
stream AS (
    SELECT *,
           LEAD(is_mark) OVER w AS next_is_mark,
           LEAD(kind) OVER w AS next_kind,
           SUM(is_mark) OVER w AS marks_so_far
    FROM events
    WINDOW w AS (PARTITION BY session_id ORDER BY seq, is_mark, id)
),
-- Calls only, in order, with the next call and runs of identical calls (same tool and fingerprint).
call_order AS (
    SELECT *,
           ROW_NUMBER() OVER w AS pos,
           COUNT(*) OVER (PARTITION BY session_id) AS n_calls,
           LEAD(id) OVER w AS next_id,
           LEAD(tool) OVER w AS next_tool,
           LEAD(fingerprint) OVER w AS next_fingerprint,
           LEAD(ts) OVER w AS next_ts,
           LEAD(arg_hashes) OVER w AS next_arg_hashes,
           LEAD(marks_so_far) OVER w AS next_marks_so_far,
           -- a run of identical calls starts where the call differs from the one before it
           CASE WHEN LAG(tool) OVER w IS NOT DISTINCT FROM tool
                 AND LAG(fingerprint) OVER w IS NOT DISTINCT FROM fingerprint
                THEN 0 ELSE 1 END AS starts_run
    FROM stream
    WHERE is_mark = 0
    WINDOW w AS (PARTITION BY session_id ORDER BY seq, id)
),
runs AS (
    SELECT *,
           -- position of the next call that starts a new run (the end of this call's run)
           MIN(CASE WHEN starts_run = 1 THEN pos END) OVER (
               PARTITION BY session_id ORDER BY pos ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING
           ) AS next_run_start
    FROM call_order
),
errors AS (
    SELECT *,
           next_id IS NOT NULL AND next_tool = tool AND next_fingerprint = fingerprint AS looped,
           CASE WHEN error_field IS NULL THEN NULL
                WHEN arg_hashes IS NOT NULL
                     AND map_contains(CAST(arg_hashes AS MAP(VARCHAR, VARCHAR)), error_field) THEN error_field
                ELSE regexp_extract(error_field, '^[^.\[]+')
           END AS field_key
    FROM runs
    WHERE outcome = 'error'
)
SELECT
    id,
    session_id,
    seq,
    ts,
    tool,
    mode,
    variant,
    code,
    retryable,
    retry_after_ms,
    error_field,
    unmapped,
    schema_valid,
    CASE
        WHEN next_is_mark IS NULL THEN 'nothing'
        WHEN next_is_mark = 1 THEN CASE WHEN next_kind = 'end' THEN 'end' ELSE 'user_turn' END
        WHEN looped THEN 'repeat'
        WHEN next_tool = tool THEN 'repair'
        ELSE 'other_tool'
    END AS follow_up,
    looped,
    looped AND next_marks_so_far = marks_so_far AS back_to_back,
    CAST(CASE WHEN looped THEN COALESCE(next_run_start, n_calls + 1) - pos - 1 ELSE 0 END AS INTEGER)
        AS loop_length,
    looped AND COALESCE(retryable, false) AS justified_retry,
    CASE WHEN next_id IS NOT NULL THEN date_diff('microsecond', ts, next_ts) // 1000 END AS ms_to_next_call,
    CASE WHEN looped AND COALESCE(retryable, false) AND retry_after_ms IS NOT NULL
         THEN date_diff('microsecond', ts, next_ts) >= retry_after_ms * 1000
    END AS waited_retry_after,
    CASE WHEN code = 'validation_error' AND error_field IS NOT NULL AND next_is_mark = 0
              AND NOT looped AND next_tool = tool
         THEN field_key
    END AS repair_field,
    CASE WHEN code = 'validation_error' AND error_field IS NOT NULL AND next_is_mark = 0
              AND NOT looped AND next_tool = tool
              AND arg_hashes IS NOT NULL AND next_arg_hashes IS NOT NULL
         THEN CAST(arg_hashes AS MAP(VARCHAR, VARCHAR))[field_key]
              IS DISTINCT FROM CAST(next_arg_hashes AS MAP(VARCHAR, VARCHAR))[field_key]
    END AS repair_field_changed,
    next_id AS next_call_id
FROM errors
