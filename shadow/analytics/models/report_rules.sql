-- report_rules: per tool and rules fingerprint (the rules that translated each call), its calls, errors, unmapped
-- errors and loops: how each version of a tool's rules did on the traffic it translated.
--
-- Reads:  calls, error_followups.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (tool, rules_fingerprint, calls, errors, unmapped_errors, loop_errors, loops, first_call, last_call):
-- rules_fingerprint NULL for calls logged before fingerprints were stored; loop_errors are the errors the loop
-- rate counts (those without a gap after them), loops those followed by an identical repeat.
SELECT
    c.tool,
    c.rules_fingerprint,
    count(*) AS calls,
    count(*) FILTER (WHERE c.outcome = 'error') AS errors,
    count(*) FILTER (WHERE c.outcome = 'error' AND c.unmapped) AS unmapped_errors,
    count(*) FILTER (WHERE e.follow_up IS NOT NULL AND e.follow_up <> 'unknown') AS loop_errors,
    count(*) FILTER (WHERE e.looped) AS loops,
    min(c.ts) AS first_call,
    max(c.ts) AS last_call
FROM calls AS c
LEFT JOIN error_followups AS e ON e.id = c.id
WHERE ($tool IS NULL OR c.tool = $tool)
  AND ($since IS NULL OR c.ts >= $since)
  AND ($until IS NULL OR c.ts < $until)
GROUP BY c.tool, c.rules_fingerprint
ORDER BY c.tool, first_call, c.rules_fingerprint
