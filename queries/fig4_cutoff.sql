-- Figure 4: conclusion score on papers published before vs after each model's training cutoff
-- (Sec. 4.4, #22). Cutoffs come from the model registry (trees/registry/models.json, seeded with
-- the paper's Table 3); a paper is post-cutoff when published after the cutoff. Level 0 only;
-- mean over papers of per-paper means. Trees without a publication date are left out.
WITH scored AS (
    SELECT e.agent, s.judge_id, e.tree_id, e.published, m.model AS registry_model, m.cutoff, s.q_norm
    FROM episodes e
    JOIN episode_scores s USING (episode_id)
    JOIN model_registry m ON m.alias = lower(e.agent)
    WHERE e.randomness = 0 AND e.status = 'done' AND e.published IS NOT NULL
), per_paper AS (
    SELECT agent, registry_model, cutoff, judge_id, tree_id,
           CASE WHEN published > cutoff THEN 'post-cutoff' ELSE 'pre-cutoff' END AS split, avg(q_norm) AS q_norm
    FROM scored GROUP BY ALL
)
SELECT agent, registry_model, cutoff, judge_id, split, avg(q_norm) AS conclusion_score, count(*) AS papers
FROM per_paper
GROUP BY ALL
ORDER BY agent, judge_id, split DESC;
