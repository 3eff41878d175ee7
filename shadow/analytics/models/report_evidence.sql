-- report_evidence: what the model saw, per tool and frequent code: example pairs of the legacy payload and the
-- structured payload of the same error call, distinct legacy payloads first, the latest of each.
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         $max_codes INTEGER: the most frequent codes per tool; $per_code INTEGER: examples per code.
-- Returns (tool, code, errors, example, legacy_payload, new_payload): errors = the code's errors in the tool;
-- example = 1, 2, ... Payloads are returned as stored (already redacted at write time); the report redacts and
-- caps them again before showing them.
WITH errs AS (
    SELECT id, ts, tool, code, CAST(legacy_payload AS VARCHAR) AS legacy_payload,
           CAST(new_payload AS VARCHAR) AS new_payload
    FROM calls
    WHERE outcome = 'error' AND code IS NOT NULL
      AND ($tool IS NULL OR tool = $tool)
      AND ($since IS NULL OR ts >= $since)
      AND ($until IS NULL OR ts < $until)
),
codes AS (
    SELECT tool, code, count(*) AS errors,
           row_number() OVER (PARTITION BY tool ORDER BY count(*) DESC, code) AS code_rank
    FROM errs
    GROUP BY tool, code
),
distinct_pairs AS (
    SELECT e.tool, e.code, e.legacy_payload, e.new_payload, e.ts, e.id
    FROM errs AS e
    JOIN codes AS c ON c.tool = e.tool AND c.code = e.code AND c.code_rank <= $max_codes
    QUALIFY row_number() OVER (PARTITION BY e.tool, e.code, e.legacy_payload ORDER BY e.ts DESC, e.id) = 1
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY tool, code ORDER BY ts DESC, id) AS example
    FROM distinct_pairs
)
SELECT r.tool, r.code, c.errors, r.example, r.legacy_payload, r.new_payload
FROM ranked AS r
JOIN codes AS c ON c.tool = r.tool AND c.code = r.code
WHERE r.example <= $per_code
ORDER BY r.tool, c.errors DESC, r.code, r.example
