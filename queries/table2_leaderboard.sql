-- Table 2 (model performance summary): coverage and conclusion score per agent and judge, at
-- randomness level 0, as the mean over papers of the per-paper mean over runs (#17).
-- The conclusion score is q_norm = Q / k (#15), comparable with the paper's numbers.
WITH per_paper AS (
    SELECT e.agent, s.judge_id, e.tree_id, avg(e.coverage) AS coverage, avg(s.q_norm) AS q_norm, count(*) AS runs
    FROM episodes e JOIN episode_scores s USING (episode_id)
    WHERE e.randomness = 0 AND e.status = 'done'
    GROUP BY ALL
)
SELECT agent, judge_id, avg(coverage) AS coverage, avg(q_norm) AS conclusion_score,
       count(*) AS papers, sum(runs) AS episodes
FROM per_paper
GROUP BY ALL
ORDER BY conclusion_score DESC NULLS LAST, agent, judge_id;
