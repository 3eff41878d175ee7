-- flag_periods: the flag history of each tool as consecutive periods, one per flag change.
--
-- Reads:  flag_audit (the global kill switch, tool '*', is left out: while it is on nothing is logged).
-- Params: none.
-- Writes: nothing; shadow sync stores the result in the table flag_periods.
--
-- A period starts at a flag change and ends at the tool's next change (ends_at NULL: still in force).
-- first_cutover_at is the tool's cutover moment: the first change into mode 'cutover' with a percentage above 0.
-- A period in mode 'cutover' with 0 < percent < 100 split sessions at random between the arms (a stable hash of
-- the session id), so errors in it give a randomised comparison.
SELECT
    tool,
    ts AS starts_at,
    LEAD(ts) OVER (PARTITION BY tool ORDER BY ts, id) AS ends_at,
    new_mode AS mode,
    new_percent AS percent,
    new_mode = 'cutover' AND new_percent > 0 AND new_percent < 100 AS randomised,
    MIN(ts) FILTER (WHERE new_mode = 'cutover' AND new_percent > 0) OVER (PARTITION BY tool) AS first_cutover_at
FROM flag_audit
WHERE tool <> '*'
