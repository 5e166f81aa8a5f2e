-- Figure 3a: average conclusion score (q_norm) per agent, judge and randomness level a
-- (fake results with probability 10a%), as the mean over papers of per-paper means over runs.
-- Intervals: boot_mean, warehouse/bootstrap.py: below 8 papers a t interval over the papers' means, else the cluster bootstrap (trees drawn with
-- replacement, each with its episodes; #25): *_se, *_ci_low and *_ci_high; papers and episodes beside them.
WITH per_episode AS (
    SELECT e.agent, s.judge_id, e.randomness, e.tree_id, e.episode_id, s.q_norm, e.coverage
    FROM episodes e JOIN episode_scores s USING (episode_id)
    WHERE e.status = 'done'
), boot AS (
    SELECT agent, judge_id, randomness,
           boot_mean(list(tree_id ORDER BY episode_id), list(q_norm ORDER BY episode_id)) AS q,
           boot_mean(list(tree_id ORDER BY episode_id), list(coverage ORDER BY episode_id)) AS c
    FROM per_episode GROUP BY ALL
)
SELECT agent, judge_id, randomness,
       q.estimate AS conclusion_score, q.se AS conclusion_score_se,
       q.ci_low AS conclusion_score_ci_low, q.ci_high AS conclusion_score_ci_high,
       c.estimate AS coverage, c.se AS coverage_se, c.ci_low AS coverage_ci_low, c.ci_high AS coverage_ci_high,
       q.papers AS papers, q.episodes AS episodes, q.method AS interval_method
FROM boot
ORDER BY agent, judge_id, randomness;
