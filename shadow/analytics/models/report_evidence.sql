-- report_evidence: what the model saw, per tool and frequent code: example pairs of the legacy payload and the
-- structured payload of the same error call, distinct legacy payloads first, the latest of each.
--
-- Reads:  calls.
-- Params: $tool VARCHAR, $since TIMESTAMP (inclusive), $until TIMESTAMP (exclusive); NULL means no filter.
--         $max_codes INTEGER: the most frequent codes per tool; $per_code INTEGER: examples per code.
-- Returns (tool, code, errors, example, legacy_payload, new_payload): errors = the code's errors in the tool;
-- example = 1, 2, ... Payloads are returned as stored (already redacted at write time); the report redacts and
-- caps them again before showing them.
WITH errs AS NOT MATERIALIZED (
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
picked AS NOT MATERIALIZED (
    SELECT e.*
    FROM errs AS e
    JOIN codes AS c ON c.tool = e.tool AND c.code = e.code AND c.code_rank <= $max_codes
),
-- the latest error of each distinct legacy payload (ties: the smallest id), found by aggregates, not by sorting
-- every error: its time, then the smallest id at that time
latest AS (
    SELECT tool, code, legacy_payload, max(ts) AS ts
    FROM picked
    GROUP BY tool, code, legacy_payload
),
distinct_pairs AS (
    SELECT p.tool, p.code, p.legacy_payload, arg_min(p.new_payload, p.id) AS new_payload, l.ts, min(p.id) AS id
    FROM picked AS p
    JOIN latest AS l ON l.tool = p.tool AND l.code = p.code
        AND l.legacy_payload IS NOT DISTINCT FROM p.legacy_payload AND l.ts IS NOT DISTINCT FROM p.ts
    GROUP BY p.tool, p.code, p.legacy_payload, l.ts
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
