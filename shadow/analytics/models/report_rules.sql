-- report_rules: per tool and rules fingerprint (the rules that translated each call), its calls, errors, unmapped
-- errors and loops: how each version of a tool's rules did on the traffic it translated.
--
-- Reads:  calls, error_followups.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (tool, rules_fingerprint, calls, errors, unmapped_errors, loop_errors, loops, first_call, last_call):
-- rules_fingerprint NULL for calls logged before fingerprints were stored; loop_errors are the errors the loop
-- rate counts (those without a gap after them), loops those followed by an identical repeat.
WITH per_call AS (
    SELECT tool, rules_fingerprint,
           count(*) AS calls,
           count(*) FILTER (WHERE outcome = 'error') AS errors,
           count(*) FILTER (WHERE outcome = 'error' AND unmapped) AS unmapped_errors,
           min(ts) AS first_call,
           max(ts) AS last_call
    FROM calls
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
    GROUP BY tool, rules_fingerprint
),
-- error_followups carries each error call's tool, time and rules fingerprint: no join of every call by id
per_error AS (
    SELECT tool, rules_fingerprint,
           count(*) FILTER (WHERE follow_up <> 'unknown') AS loop_errors,
           count(*) FILTER (WHERE looped) AS loops
    FROM error_followups
    WHERE ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
    GROUP BY tool, rules_fingerprint
)
SELECT c.tool, c.rules_fingerprint, c.calls, c.errors, c.unmapped_errors,
       COALESCE(e.loop_errors, 0) AS loop_errors, COALESCE(e.loops, 0) AS loops, c.first_call, c.last_call
FROM per_call AS c
LEFT JOIN per_error AS e ON e.tool = c.tool AND e.rules_fingerprint IS NOT DISTINCT FROM c.rules_fingerprint
ORDER BY c.tool, c.first_call, c.rules_fingerprint
