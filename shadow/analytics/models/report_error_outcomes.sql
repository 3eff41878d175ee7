-- report_error_outcomes: each distinct legacy outcome of the logged errors per tool, with how many errors hold it,
-- for translating them again with today's rules (report and dashboard with --rules).
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
-- Returns (tool, legacy_payload, errors): the payload as JSON text (a returned value, or {"exception": TYPE,
-- "message": TEXT} for a raised exception, scrubbed as logged).
SELECT tool, CAST(legacy_payload AS VARCHAR) AS legacy_payload, count(*) AS errors
FROM calls
WHERE outcome = 'error'
  AND ($tool IS NULL OR tool = $tool)
  AND ($since IS NULL OR ts >= $since)
  AND ($until IS NULL OR ts < $until)
GROUP BY tool, CAST(legacy_payload AS VARCHAR)
ORDER BY tool, errors DESC, legacy_payload
