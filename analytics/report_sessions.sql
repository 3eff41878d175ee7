-- report_sessions: the distinct shapes of sessions per arm, for the seeded session-level bootstrap.
--
-- Reads:  error_followups.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (variant, errors, loops, sessions): how many sessions had exactly that many errors and loops in that
-- arm. Resampling these patterns is the same as resampling sessions, at a cost that does not grow with traffic.
WITH per_session AS (
    SELECT variant, session_id, count(*) AS errors, count(*) FILTER (WHERE looped) AS loops
    FROM error_followups
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
    GROUP BY variant, session_id
)
SELECT variant, errors, loops, count(*) AS sessions
FROM per_session
GROUP BY variant, errors, loops
ORDER BY variant, errors, loops
