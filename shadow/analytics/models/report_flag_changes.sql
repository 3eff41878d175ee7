-- report_flag_changes: every flag change of the report's tools, oldest first (the cutover moments to mark).
--
-- Reads:  flag_audit.
-- Params: $tool VARCHAR (NULL: every tool; the global kill switch '*' is always included).
SELECT
    tool, ts, old_mode, old_percent, new_mode, new_percent, actor, reason,
    new_mode = 'cutover' AND new_percent > 0
        AND NOT (COALESCE(old_mode, '') = 'cutover' AND COALESCE(old_percent, 0) > 0) AS is_cutover
FROM flag_audit
WHERE $tool IS NULL OR tool = $tool OR tool = '*'
ORDER BY ts, id
