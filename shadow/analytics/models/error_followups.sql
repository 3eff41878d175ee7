-- error_followups: one row per error call, with what the session did next.
--
-- Reads:  calls, marks, and sync_scope(session_id) (the sessions to compute when $all_sessions is false).
-- Params: $all_sessions BOOLEAN: true computes every session; false only the sessions listed in sync_scope
--         (shadow sync recomputes just the sessions that received new calls or marks).
-- Writes: nothing; shadow sync stores the result in the table error_followups.
--
-- Definitions (README, "Watching the loop rate"):
--   * A session's calls and marks share one sequence (seq) per counter epoch. Order: epoch (a counter started
--     anew after a restart comes later; rows without one first), seq, then calls before marks; rows that still
--     tie (a seq used twice, as when two processes share a session id) keep a fixed order: the id itself, which
--     every engine compares the same way (DuckDB and Spark hash differently; UUIDv7 ids also follow time).
--   * An error is a call whose outcome is 'error'.
--   * The error is followed by a loop when the next CALL in the session (marks skipped) goes to the same tool
--     with the same argument fingerprint. It is back to back when no mark lies between the two calls.
--   * Loop length: how many consecutive calls after the error repeat it exactly (same tool and fingerprint).
--   * Follow-up: the first EVENT after the error: repeat | repair (same tool, other arguments) | other_tool |
--     user_turn | end (a mark) | nothing (the session has no later event) | unknown: a gap follows the error.
--   * Gaps: within an epoch a session's seqs are consecutive from 1 (calls and marks of every kind, 'unlogged'
--     included); when the next position used after an error's is neither seq + 1 in its epoch nor seq 1 of a
--     later epoch (a counter started anew: a restart is no gap), records are missing (dropped, a crashed process)
--     and what followed the error is not known: follow_up is 'unknown', looped is false, and the report leaves
--     such errors out of the loop rate's denominator.
--   * Justified retry: a loop after an error that was retryable; it waited when the next call started at least
--     retry_after_ms after the error's call started.
--   * For a validation_error naming a field (error_field), a repair changed the field when the per-argument
--     fingerprint of that field differs. The field is looked up as named, else by its top-level part
--     ('items[0].date' and 'address.zip' name the arguments 'items' and 'address').
WITH scoped_calls AS NOT MATERIALIZED (
    SELECT id, session_id, epoch, seq, ts, tool, mode, variant, fingerprint, arg_hashes, outcome, code, retryable,
           next_action, retry_after_ms, error_field, unmapped, schema_valid, rules_fingerprint
    FROM calls
    WHERE $all_sessions OR session_id IN (SELECT session_id FROM sync_scope)
),
scoped_marks AS NOT MATERIALIZED (
    SELECT id, session_id, epoch, seq, kind
    FROM marks
    WHERE $all_sessions OR session_id IN (SELECT session_id FROM sync_scope)
),
-- Every position (epoch, seq) a session used: calls and marks of any kind.
used AS NOT MATERIALIZED (
    SELECT session_id, epoch, seq FROM scoped_calls
    UNION ALL
    SELECT session_id, epoch, seq FROM scoped_marks
),
-- Per epoch of a session: its last seq, and the first seq of the epoch after it (epochs order as events do:
-- rows without one first).
epochs AS (
    SELECT session_id, epoch, max_seq,
           LEAD(min_seq) OVER (PARTITION BY session_id ORDER BY epoch NULLS FIRST) AS next_epoch_first
    FROM (SELECT session_id, epoch, MAX(seq) AS max_seq, MIN(seq) AS min_seq FROM used GROUP BY session_id, epoch)
        AS per_epoch
),
-- A session's calls and the marks that count as events in one ordered stream, sorted once (the one window over
-- every call): for each call the next call (marks skipped: a mark's call columns are NULL, and so is its id taken
-- as a call's, which IGNORE NULLS passes over; the id is not carried through the sort twice) and the next event.
call_stream AS (
    SELECT session_id, epoch, seq, id, is_error, tool, is_ok,
           ROW_NUMBER() OVER w AS position,
           LEAD(CASE WHEN is_mark = 0 THEN id END IGNORE NULLS) OVER w AS next_call_id,
           LEAD(ts IGNORE NULLS) OVER w AS next_ts,
           LEAD(tool IGNORE NULLS) OVER w = tool AS next_same_tool,
           LEAD(tool IGNORE NULLS) OVER w = tool AND LEAD(fingerprint IGNORE NULLS) OVER w = fingerprint
               AS next_same_call,
           LEAD(is_mark) OVER w AS next_is_mark,
           LEAD(kind) OVER w AS next_kind,
           -- how many calls the session made after this one (marks not counted), from the same sort
           SUM(1 - is_mark) OVER (PARTITION BY session_id) - SUM(1 - is_mark) OVER w AS calls_after
    FROM (
        SELECT session_id, epoch, seq, 0 AS is_mark, id, NULL AS kind, ts, tool, fingerprint,
               outcome = 'error' AS is_error, outcome = 'ok' AS is_ok
        FROM scoped_calls
        UNION ALL
        SELECT session_id, epoch, seq, 1 AS is_mark, id, kind, NULL AS ts, NULL AS tool,
               NULL AS fingerprint, false AS is_error, false AS is_ok
        FROM scoped_marks
        WHERE kind IN ('user_turn', 'end')
    ) AS events
    WINDOW w AS (PARTITION BY session_id ORDER BY epoch NULLS FIRST, seq, is_mark, id)
),
-- Where in its session each tool last succeeded (an aggregate, no second sort): an error followed by a success of its
-- tool was got over, whatever the session did next.
last_ok AS (
    SELECT session_id, tool, MAX(position) AS position
    FROM call_stream
    WHERE is_ok
    GROUP BY session_id, tool
),
-- Runs of identical calls, from the few calls whose next call repeats them (the windows below sort only those): such
-- a call starts a run unless it is the next call of the one before it. From a call, run_left counts the run's calls
-- from it on, itself included: each is followed by one repeat, so that is the loop length after it.
repeats AS (
    SELECT session_id, epoch, seq, id,
           CASE WHEN LAG(next_call_id) OVER (PARTITION BY session_id ORDER BY epoch NULLS FIRST, seq, id) = id
                THEN 0 ELSE 1 END AS starts_run
    FROM call_stream
    WHERE next_same_call
),
numbered AS (
    SELECT session_id, epoch, seq, id,
           SUM(starts_run) OVER (PARTITION BY session_id ORDER BY epoch NULLS FIRST, seq, id
                                 ROWS UNBOUNDED PRECEDING) AS run
    FROM repeats
),
runs AS (
    SELECT id,
           COUNT(*) OVER (PARTITION BY session_id, run)
           - ROW_NUMBER() OVER (PARTITION BY session_id, run ORDER BY epoch NULLS FIRST, seq, id) + 1 AS run_left
    FROM numbered
),
-- Each error and whether a gap follows it: none when seq + 1 is used in its epoch (looked up for the errors only), or
-- when seq is the epoch's last and the next epoch starts at 1 (or none follows).
error_gaps AS (
    SELECT c.*,
           CASE WHEN nxt.seq IS NOT NULL THEN false
                WHEN c.seq < ep.max_seq THEN true
                ELSE COALESCE(ep.next_epoch_first > 1, false)
           END AS gap_after
    FROM scoped_calls AS c
    JOIN epochs AS ep ON ep.session_id = c.session_id AND ep.epoch IS NOT DISTINCT FROM c.epoch
    LEFT JOIN (SELECT DISTINCT u.session_id, u.epoch, u.seq
               FROM used AS u
               JOIN (SELECT session_id, epoch, seq FROM scoped_calls WHERE outcome = 'error') AS e
                 ON e.session_id = u.session_id AND e.epoch IS NOT DISTINCT FROM u.epoch AND u.seq = e.seq + 1
              ) AS nxt
        ON nxt.session_id = c.session_id AND nxt.epoch IS NOT DISTINCT FROM c.epoch AND nxt.seq = c.seq + 1
    WHERE c.outcome = 'error'
),
errors AS (
    SELECT c.*, s.next_is_mark, s.next_kind, s.next_call_id, s.next_ts, s.next_same_tool, s.calls_after,
           COALESCE(s.next_same_call, false) AND NOT c.gap_after AS looped,
           COALESCE(lo.position > s.position, false) AS ok_after,
           ru.run_left,
           CASE WHEN c.error_field IS NULL THEN NULL
                WHEN c.arg_hashes IS NOT NULL
                     AND map_contains(CAST(c.arg_hashes AS MAP(VARCHAR, VARCHAR)), c.error_field) THEN c.error_field
                ELSE regexp_extract(c.error_field, '^[^.\[]+')
           END AS field_key
    FROM call_stream AS s
    JOIN error_gaps AS c ON c.id = s.id
    LEFT JOIN runs AS ru ON ru.id = s.id
    LEFT JOIN last_ok AS lo ON lo.session_id = s.session_id AND lo.tool = s.tool
    WHERE s.is_error
),
-- A repair after a validation_error naming a field: the next call's per-argument fingerprints, to compare.
named_repairs AS (
    SELECT e.id, e.field_key, e.arg_hashes, n.arg_hashes AS next_arg_hashes
    FROM errors AS e
    JOIN scoped_calls AS n ON n.id = e.next_call_id
    WHERE e.code = 'validation_error' AND e.error_field IS NOT NULL AND e.next_is_mark = 0
      AND NOT e.looped AND e.next_same_tool AND NOT e.gap_after
)
SELECT
    e.id,
    e.session_id,
    e.seq,
    e.ts,
    e.tool,
    e.mode,
    e.variant,
    e.code,
    e.retryable,
    e.next_action,
    e.retry_after_ms,
    e.error_field,
    e.unmapped,
    e.schema_valid,
    CASE
        WHEN e.gap_after THEN 'unknown'
        WHEN e.next_is_mark IS NULL THEN 'nothing'
        WHEN e.next_is_mark = 1 THEN CASE WHEN e.next_kind = 'end' THEN 'end' ELSE 'user_turn' END
        WHEN e.looped THEN 'repeat'
        WHEN e.next_same_tool THEN 'repair'
        ELSE 'other_tool'
    END AS follow_up,
    e.looped,
    -- the next event is the next call exactly when no mark lies between the two
    e.looped AND e.next_is_mark = 0 AS back_to_back,
    CAST(CASE WHEN e.looped THEN e.run_left ELSE 0 END AS INTEGER)
        AS loop_length,
    e.looped AND COALESCE(e.retryable, false) AS justified_retry,
    CASE WHEN e.next_call_id IS NOT NULL THEN date_diff('microsecond', e.ts, e.next_ts) // 1000 END
        AS ms_to_next_call,
    CASE WHEN e.looped AND COALESCE(e.retryable, false) AND e.retry_after_ms IS NOT NULL
         THEN date_diff('microsecond', e.ts, e.next_ts) >= e.retry_after_ms * 1000
    END AS waited_retry_after,
    nr.field_key AS repair_field,
    CASE WHEN nr.arg_hashes IS NOT NULL AND nr.next_arg_hashes IS NOT NULL
         THEN CAST(nr.arg_hashes AS MAP(VARCHAR, VARCHAR))[nr.field_key]
              IS DISTINCT FROM CAST(nr.next_arg_hashes AS MAP(VARCHAR, VARCHAR))[nr.field_key]
    END AS repair_field_changed,
    e.next_call_id,
    e.rules_fingerprint,
    -- how many calls the session made after the error, and whether its tool succeeded later in the session: the
    -- give-up guard's "ended within N calls of an error, its tool never succeeding after it"
    CAST(e.calls_after AS INTEGER) AS calls_after,
    e.ok_after
FROM errors AS e
LEFT JOIN named_repairs AS nr ON nr.id = e.id
