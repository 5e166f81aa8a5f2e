-- Table 2 (model performance summary): coverage and conclusion score per agent and judge, at
-- randomness level 0, as the mean over papers of the per-paper mean over runs (#17).
-- The conclusion score is q_norm = Q / k (#15), comparable with the paper's numbers.
-- Intervals: boot_mean, warehouse/bootstrap.py: below 8 papers a t interval over the papers' means, else the cluster bootstrap (trees drawn with
-- replacement, each with its episodes; #25): *_se is the standard error, *_ci_low/*_ci_high the 95% interval;
-- papers and episodes count what the conclusion score rests on.
WITH per_episode AS (
    SELECT e.agent, s.judge_id, e.tree_id, e.episode_id, e.coverage, s.q_norm
    FROM episodes e JOIN episode_scores s USING (episode_id)
    WHERE e.randomness = 0 AND e.status = 'done'
), boot AS (
    SELECT agent, judge_id,
           boot_mean(list(tree_id ORDER BY episode_id), list(coverage ORDER BY episode_id)) AS c,
           boot_mean(list(tree_id ORDER BY episode_id), list(q_norm ORDER BY episode_id)) AS q
    FROM per_episode GROUP BY ALL
)
SELECT agent, judge_id,
       c.estimate AS coverage, c.se AS coverage_se, c.ci_low AS coverage_ci_low, c.ci_high AS coverage_ci_high,
       q.estimate AS conclusion_score, q.se AS conclusion_score_se,
       q.ci_low AS conclusion_score_ci_low, q.ci_high AS conclusion_score_ci_high,
       q.papers AS papers, q.episodes AS episodes, q.method AS interval_method
FROM boot
ORDER BY conclusion_score DESC NULLS LAST, agent, judge_id;
