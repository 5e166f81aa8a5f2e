-- Figure 3b: redo_study frequency and its relative change to the same agent's level-0 baseline (#18).
-- Per episode f = redo decisions / Result observations; per agent and level, the mean over papers
-- of per-paper means; relative change = 100 (f_a - f_0) / f_0, NULL where f_0 = 0 (the absolute
-- values are beside it), 0 at level 0 itself.
-- Intervals (warehouse/intervals.py, docs/statistics.md): mean_ci for the frequency (a rate in [0, 1]);
-- change_ci for the relative change (stats.relative_change): Fieller's interval for the ratio of the
-- level's mean to the level-0 mean over papers, the two levels of a paper correlated as they come;
-- none below 3 papers, and none where the level-0 frequency's own interval reaches 0 (the change is
-- then unbounded, and the warning says so); interval_method and interval_warning say which and why.
WITH per_episode AS (
    SELECT agent, randomness, tree_id, episode_id, redo_decisions / result_observations AS f
    FROM episodes WHERE status = 'done' AND result_observations > 0
), levels AS (
    SELECT agent, randomness, mean_ci(list(tree_id ORDER BY episode_id), list(f ORDER BY episode_id), 0, 1) AS r
    FROM per_episode GROUP BY ALL
), changes AS (
    SELECT l.agent, l.randomness,
           change_ci(list(p.tree_id ORDER BY p.randomness, p.episode_id), list(p.f ORDER BY p.randomness, p.episode_id),
                       list(p.randomness = 0 ORDER BY p.randomness, p.episode_id)) AS c
    FROM levels l JOIN per_episode p ON p.agent = l.agent AND p.randomness IN (0, l.randomness)
    WHERE l.randomness > 0
    GROUP BY ALL
)
SELECT l.agent, l.randomness,
       l.r.estimate AS redo_frequency, l.r.se AS redo_frequency_se,
       l.r.ci_low AS redo_frequency_ci_low, l.r.ci_high AS redo_frequency_ci_high,
       -- the quantity the figure plots before the baseline beside it: the column an 80-column screen keeps
       CASE WHEN l.randomness = 0 THEN (CASE WHEN b.r.estimate > 0 THEN 0.0 END) ELSE c.c.estimate END
           AS relative_change_pct,
       c.c.se AS relative_change_pct_se, c.c.ci_low AS relative_change_pct_ci_low,
       c.c.ci_high AS relative_change_pct_ci_high,
       b.r.estimate AS redo_frequency_level0,
       l.r.papers AS papers, l.r.episodes AS episodes, l.r.method AS interval_method,
       nullif(concat_ws('; ', 'redo frequency: ' || l.r.warning, 'relative change: ' || c.c.warning), '') AS interval_warning
FROM levels l
LEFT JOIN levels b ON b.agent = l.agent AND b.randomness = 0
LEFT JOIN changes c ON c.agent = l.agent AND c.randomness = l.randomness
ORDER BY l.agent, l.randomness;
