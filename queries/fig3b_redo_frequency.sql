-- Figure 3b: redo_study frequency and its relative change to the same agent's level-0 baseline (#18).
-- Per episode f = redo decisions / Result observations; per agent and level, the mean over papers
-- of per-paper means; relative change = 100 (f_a - f_0) / f_0, NULL where f_0 = 0 (the absolute
-- values are beside it).
WITH per_episode AS (
    SELECT agent, randomness, tree_id, redo_decisions / result_observations AS f
    FROM episodes WHERE status = 'done' AND result_observations > 0
), per_level AS (
    SELECT agent, randomness, avg(f) AS redo_frequency, count(*) AS papers, sum(runs) AS episodes
    FROM (SELECT agent, randomness, tree_id, avg(f) AS f, count(*) AS runs FROM per_episode GROUP BY ALL)
    GROUP BY ALL
)
SELECT l.agent, l.randomness, l.redo_frequency, b.redo_frequency AS redo_frequency_level0,
       CASE WHEN b.redo_frequency > 0 THEN 100 * (l.redo_frequency - b.redo_frequency) / b.redo_frequency END
           AS relative_change_pct,
       l.papers, l.episodes
FROM per_level l LEFT JOIN per_level b ON b.agent = l.agent AND b.randomness = 0
ORDER BY l.agent, l.randomness;
