-- report_unmapped: the legacy payloads of errors no rule mapped, per tool, with how often each occurred.
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         $limit INTEGER: the most frequent distinct payloads per tool (the report groups them by shape).
-- Returns (tool, legacy_payload, errors).
SELECT tool, legacy_payload, errors
FROM (
    SELECT tool, CAST(legacy_payload AS VARCHAR) AS legacy_payload, count(*) AS errors
    FROM calls
    WHERE outcome = 'error' AND unmapped
      AND ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
    GROUP BY tool, CAST(legacy_payload AS VARCHAR)
)
QUALIFY row_number() OVER (PARTITION BY tool ORDER BY errors DESC, legacy_payload) <= $limit
ORDER BY tool, errors DESC, legacy_payload
