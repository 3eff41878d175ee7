-- dashboard_code_mix: how many errors of each code each tool returned, and how many of them no rule mapped.
--
-- Reads:  error_followups.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive): NULL means no filter.
-- Returns (tool, code, errors, unmapped), both arms together: the code is what the structured payload says, in
-- shadow mode as in cutover. code is NULL for an error logged without one.
SELECT
    tool,
    code,
    count(*) AS errors,
    count(*) FILTER (WHERE unmapped) AS unmapped
FROM error_followups
WHERE ($tool IS NULL OR tool = $tool)
  AND ($since IS NULL OR ts >= $since)
  AND ($until IS NULL OR ts < $until)
GROUP BY tool, code
ORDER BY tool, errors DESC, code
