-- known_tools: the tools the warehouse has calls of, with their call counts (to answer "no such tool").
--
-- Reads:  calls.
-- Params: none.
SELECT tool, count(*) AS calls
FROM calls
GROUP BY tool
ORDER BY tool
