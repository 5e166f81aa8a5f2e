-- Costs: tokens of every agent call (input not cached, cached input, cache writes, output) and their
-- price from the price table (trees/registry/prices.json, USD per million tokens), per episode, per
-- campaign and model, and per model. `level` says which; cost is NULL where the model has no price.
-- Judge calls are not counted (their token usage is not recorded yet).
WITH calls AS (
    SELECT r.episode_id, split_part(r.episode_id, '.', 1) AS campaign, coalesce(r.model, e.agent) AS model,
           coalesce(r.input_tokens, 0) AS input_tokens, coalesce(r.cached_input_tokens, 0) AS cached_input_tokens,
           coalesce(r.cache_write_tokens, 0) AS cache_write_tokens, coalesce(r.output_tokens, 0) AS output_tokens
    FROM ev_agent_replied r JOIN episodes e USING (episode_id)
), priced AS (
    SELECT c.*, (c.input_tokens * p.input_per_mtok + c.cached_input_tokens * coalesce(p.cached_input_per_mtok, p.input_per_mtok)
                 + c.cache_write_tokens * coalesce(p.cache_write_per_mtok, p.input_per_mtok)
                 + c.output_tokens * p.output_per_mtok) / 1e6 AS cost_usd,
           p.model IS NOT NULL AS has_price
    FROM calls c LEFT JOIN prices p ON p.model = lower(c.model)
)
SELECT CASE WHEN grouping(episode_id) = 0 THEN 'episode' WHEN grouping(campaign) = 0 THEN 'campaign' ELSE 'model' END AS level,
       campaign, model, episode_id, count(*) AS calls,
       sum(input_tokens)::BIGINT AS input_tokens, sum(cached_input_tokens)::BIGINT AS cached_input_tokens,
       sum(cache_write_tokens)::BIGINT AS cache_write_tokens, sum(output_tokens)::BIGINT AS output_tokens,
       CASE WHEN bool_and(has_price) THEN sum(cost_usd) END AS cost_usd
FROM priced
GROUP BY GROUPING SETS ((model), (campaign, model), (campaign, model, episode_id))
ORDER BY level DESC, model, campaign, episode_id;
