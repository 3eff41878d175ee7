-- dashboard_looped_sessions: the sessions with the most errors followed by a loop (the ones worth reading).
--
-- Reads:  error_followups.
-- Params: $tool VARCHAR (NULL: every tool), $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive): NULL
--         means no filter; $limit INTEGER: how many sessions to return.
-- Returns (session_id, variants, tools, errors, loops, longest_loop, first_error_at), the most loops first, then
-- the longest loop, then the session id (a stable order). variants and tools list what the looping errors had,
-- comma-separated and sorted.
SELECT
    session_id,
    string_agg(DISTINCT variant, ', ' ORDER BY variant) FILTER (WHERE looped) AS variants,
    string_agg(DISTINCT tool, ', ' ORDER BY tool) FILTER (WHERE looped) AS tools,
    count(*) AS errors,
    count(*) FILTER (WHERE looped) AS loops,
    max(loop_length) AS longest_loop,
    min(ts) AS first_error_at
FROM error_followups
WHERE ($tool IS NULL OR tool = $tool)
  AND ($since IS NULL OR ts >= $since)
  AND ($until IS NULL OR ts < $until)
GROUP BY session_id
HAVING count(*) FILTER (WHERE looped) > 0
ORDER BY loops DESC, longest_loop DESC, session_id
LIMIT $limit
