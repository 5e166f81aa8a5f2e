-- How long an episode took, per randomness level: from its start to the conclusion it submitted
-- (play only; the same-model judge's verdicts came hours later and are left out), in minutes.
-- An episode cut by a stop and resumed counts the time it waited.
WITH started AS (
    SELECT episode_id, min(recorded_at) AS at FROM ev_episode_started GROUP BY ALL
), concluded AS (
    SELECT episode_id, max(recorded_at) AS at FROM ev_conclusion_submitted GROUP BY ALL
), timed AS (
    SELECT e.randomness, epoch(c.at - s.at) / 60 AS minutes
    FROM episodes e JOIN started s USING (episode_id) JOIN concluded c USING (episode_id)
)
SELECT randomness,
       count(*) AS episodes,
       round(median(minutes), 1) AS median_min,
       round(avg(minutes), 1) AS mean_min,
       round(min(minutes), 1) AS shortest_min,
       round(max(minutes), 1) AS longest_min
FROM timed
GROUP BY ALL ORDER BY randomness
