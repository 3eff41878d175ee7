-- report_error_payloads: the distinct structured error payloads per tool (for the leak scan) and the mean sizes of
-- what a repeated call sends and gets back (for the token estimate of a wasted round trip).
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         $limit INTEGER: the most frequent distinct structured payloads per tool that are returned.
-- Returns (tool, new_payload, errors, legacy_payload, args_bytes, legacy_bytes): errors with that payload, one
-- legacy payload that gave it (what the model read, for the leak scan); args_bytes and legacy_bytes are the tool's
-- mean sizes in bytes of the arguments and of the legacy error payload (JSON text).
WITH errs AS (
    SELECT tool, CAST(new_payload AS VARCHAR) AS new_payload, CAST(legacy_payload AS VARCHAR) AS legacy_payload, id,
           octet_length(encode(COALESCE(CAST(args AS VARCHAR), ''))) AS args_bytes,
           octet_length(encode(COALESCE(CAST(legacy_payload AS VARCHAR), ''))) AS legacy_bytes
    FROM calls
    WHERE outcome = 'error'
      AND ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
),
sizes AS (
    SELECT tool, avg(args_bytes) AS args_bytes, avg(legacy_bytes) AS legacy_bytes FROM errs GROUP BY tool
),
payloads AS (
    SELECT tool, new_payload, count(*) AS errors, arg_min(legacy_payload, id) AS legacy_payload
    FROM errs GROUP BY tool, new_payload
    QUALIFY row_number() OVER (PARTITION BY tool ORDER BY count(*) DESC, new_payload) <= $limit
)
SELECT p.tool, p.new_payload, p.errors, p.legacy_payload, s.args_bytes, s.legacy_bytes
FROM payloads AS p JOIN sizes AS s ON s.tool = p.tool
ORDER BY p.tool, p.errors DESC
