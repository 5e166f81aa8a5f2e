-- Costs: tokens of every model call (agent turns, judge verdicts, control answers: `role`), split
-- into input not cached, cached input, cache writes and output, and their price from the price
-- table (trees/registry/prices.json, USD per million tokens), per episode, per campaign and model,
-- and per model. `level` says which; cost is NULL where the model has no price. A model served
-- by the lab itself may be priced per hour of its server (usd_per_hour): a call then costs its
-- seconds at that rate, shared among the `serves` requests the server answers at once; `seconds`
-- is the calls' summed latency. A call answered
-- from InquiTree's call cache (cache_hit) cost nothing: it is counted in `cache_hits`, and its
-- tokens are left out of the paid columns. reasoning_tokens: a reasoning model's thinking, shown
-- apart but already inside output_tokens (and priced with them), as endpoints count it. A call is
-- priced by the model asked for (a price entry's aliases name its dated spellings), never by the name
-- the endpoint answered with (OpenAI answers gpt-4o-2024-08-06 to gpt-4o).
WITH calls AS (
    SELECT 'agent' AS role, r.episode_id, coalesce(e.agent_model, r.model, e.agent) AS model, r.input_tokens,
           r.cached_input_tokens,
           r.cache_write_tokens, r.output_tokens, r.reasoning_tokens, coalesce(r.cache_hit, false) AS cache_hit,
           r.latency_ms
    FROM ev_agent_replied r JOIN episodes e USING (episode_id)
    UNION ALL
    SELECT 'judge', v.episode_id, coalesce(v.judge_model, v.model), v.input_tokens, v.cached_input_tokens,
           v.cache_write_tokens, v.output_tokens, NULL, coalesce(v.cache_hit, false), v.latency_ms
    FROM ev_judge_verdict v WHERE v.judge_kind <> 'embedding'
    UNION ALL
    SELECT 'control', c.episode_id, c.agent_model, c.input_tokens, c.cached_input_tokens, c.cache_write_tokens,
           c.output_tokens, NULL, coalesce(c.cache_hit, false), c.latency_ms
    FROM ev_control_answered c WHERE c.agent_kind = 'openai'
), paid AS (
    SELECT role, episode_id, split_part(episode_id, '.', 1) AS campaign, model, cache_hit,
           CASE WHEN cache_hit THEN 0 ELSE coalesce(input_tokens, 0) END AS input_tokens,
           CASE WHEN cache_hit THEN 0 ELSE coalesce(cached_input_tokens, 0) END AS cached_input_tokens,
           CASE WHEN cache_hit THEN 0 ELSE coalesce(cache_write_tokens, 0) END AS cache_write_tokens,
           CASE WHEN cache_hit THEN 0 ELSE coalesce(output_tokens, 0) END AS output_tokens,
           CASE WHEN cache_hit THEN 0 ELSE coalesce(reasoning_tokens, 0) END AS reasoning_tokens,
           CASE WHEN cache_hit THEN 0 ELSE latency_ms / 1000 END AS seconds
    FROM calls
), priced AS (
    SELECT c.*,
           CASE WHEN p.usd_per_hour IS NOT NULL THEN c.seconds * p.usd_per_hour / 3600 / p.serves
                ELSE (c.input_tokens * p.input_per_mtok
                      + c.cached_input_tokens * coalesce(p.cached_input_per_mtok, p.input_per_mtok)
                      + c.cache_write_tokens * coalesce(p.cache_write_per_mtok, p.input_per_mtok)
                      + c.output_tokens * p.output_per_mtok) / 1e6 END AS cost_usd,
           p.model IS NOT NULL AS has_price
    FROM paid c LEFT JOIN prices p ON p.model = lower(c.model)
)
SELECT CASE WHEN grouping(episode_id) = 0 THEN 'episode' WHEN grouping(campaign) = 0 THEN 'campaign' ELSE 'model' END AS level,
       campaign, model, episode_id, count(*) FILTER (WHERE NOT cache_hit) AS calls,
       count(*) FILTER (WHERE cache_hit) AS cache_hits,
       count(*) FILTER (WHERE role = 'agent' AND NOT cache_hit) AS agent_calls,
       count(*) FILTER (WHERE role = 'judge' AND NOT cache_hit) AS judge_calls,
       count(*) FILTER (WHERE role = 'control' AND NOT cache_hit) AS control_calls,
       sum(input_tokens)::BIGINT AS input_tokens, sum(cached_input_tokens)::BIGINT AS cached_input_tokens,
       sum(cache_write_tokens)::BIGINT AS cache_write_tokens, sum(output_tokens)::BIGINT AS output_tokens,
       sum(reasoning_tokens)::BIGINT AS reasoning_tokens, round(sum(seconds), 3) AS seconds,
       CASE WHEN bool_and(has_price) THEN sum(cost_usd) END AS cost_usd
FROM priced
GROUP BY GROUPING SETS ((model), (campaign, model), (campaign, model, episode_id))
ORDER BY level DESC, model, campaign, episode_id;
