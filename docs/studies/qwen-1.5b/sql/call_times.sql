-- The agent's calls by state: how many, their wall time (median, 90th percentile, longest) and
-- the tokens the server reported (median prompt, median and longest reply).
SELECT state,
       count(*) AS calls,
       round(median(latency_ms) / 1000, 1) AS median_s,
       round(quantile_cont(latency_ms, 0.9) / 1000, 1) AS p90_s,
       round(max(latency_ms) / 1000, 1) AS max_s,
       median(input_tokens) AS median_prompt_tokens,
       median(output_tokens) AS median_reply_tokens,
       max(output_tokens) AS max_reply_tokens
FROM ev_agent_replied
GROUP BY ALL ORDER BY median_s
