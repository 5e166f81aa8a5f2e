-- The conclusion score (q_norm, by each judge) of the episodes that were shown a fake result and of
-- those that were not, by randomness level: whether conclusions drawn from a fake lose their credit.
SELECT e.randomness, e.fake_observations > 0 AS shown_a_fake, s.judge_id,
       count(*) AS episodes,
       round(avg(s.q_norm), 3) AS conclusion_score,
       sum((s.q_norm = 0)::INT) AS scored_0
FROM episodes e JOIN episode_scores s USING (episode_id)
GROUP BY ALL ORDER BY ALL
