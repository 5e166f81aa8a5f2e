-- Figure 3a: average conclusion score (q_norm) per agent, judge and randomness level a
-- (fake results with probability 10a%), as the mean over papers of per-paper means over runs.
WITH per_paper AS (
    SELECT e.agent, s.judge_id, e.randomness, e.tree_id, avg(s.q_norm) AS q_norm, avg(e.coverage) AS coverage,
           count(*) AS runs
    FROM episodes e JOIN episode_scores s USING (episode_id)
    WHERE e.status = 'done'
    GROUP BY ALL
)
SELECT agent, judge_id, randomness, avg(q_norm) AS conclusion_score, avg(coverage) AS coverage,
       count(*) AS papers, sum(runs) AS episodes
FROM per_paper
GROUP BY ALL
ORDER BY agent, judge_id, randomness;
