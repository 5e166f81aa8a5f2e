-- Figure 3a: average conclusion score (q_norm) per agent, judge and randomness level a
-- (fake results with probability 10a%), as the mean over papers of per-paper means over runs.
-- Intervals: mean_ci (warehouse/intervals.py on inquitree.stats, docs/statistics.md): a score interval
-- for a mean in [0, 1] on the paper means (it follows their closeness to 0 or 1), widened by the
-- skew-corrected t interval unless a fifth of the papers sit at 0 or 1; none below 3 papers. *_se, *_ci_low, *_ci_high; interval_method and interval_warning say which and why.
WITH per_episode AS (
    SELECT e.agent, s.judge_id, e.randomness, e.tree_id, e.episode_id, s.q_norm, e.coverage
    FROM episodes e JOIN episode_scores s USING (episode_id)
    WHERE e.status = 'done'
), boot AS (
    SELECT agent, judge_id, randomness,
           mean_ci(list(tree_id ORDER BY episode_id), list(q_norm ORDER BY episode_id), 0, 1) AS q,
           mean_ci(list(tree_id ORDER BY episode_id), list(coverage ORDER BY episode_id), 0, 1) AS c
    FROM per_episode GROUP BY ALL
)
SELECT agent, judge_id, randomness,
       q.estimate AS conclusion_score, q.se AS conclusion_score_se,
       q.ci_low AS conclusion_score_ci_low, q.ci_high AS conclusion_score_ci_high,
       c.estimate AS coverage, c.se AS coverage_se, c.ci_low AS coverage_ci_low, c.ci_high AS coverage_ci_high,
       q.papers AS papers, q.episodes AS episodes, q.method AS interval_method,
       nullif(concat_ws('; ', 'conclusion score: ' || q.warning, 'coverage: ' || c.warning), '') AS interval_warning
FROM boot
ORDER BY agent, judge_id, randomness;
