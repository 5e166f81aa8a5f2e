-- Figure 3a: average conclusion score (q_norm) per agent, judge and randomness level a
-- (fake results with probability 10a%), as the mean over papers of per-paper means over runs.
-- Every cell of the level counts (cell_scores, #33): one that did not finish scores 0; `cells` says
-- how many did not and on which papers, and --complete-case keeps the finished ones alone.
-- conclusion_score_corrected (with its interval) and labelled_items: where a person read some of the
-- episodes' conclusion items (inquitree label conclusions), the score corrected for the judge's error,
-- as the leaderboard's (stats.prediction_powered; docs/statistics.md); NULL where none was read.
-- Intervals: mean_ci (warehouse/intervals.py on inquitree.stats, docs/statistics.md): a score interval
-- for a mean in [0, 1] on the paper means (it follows their closeness to 0 or 1), widened by the
-- skew-corrected t interval unless a fifth of the papers sit at 0 or 1; none below 3 papers. *_se, *_ci_low, *_ci_high; interval_method and interval_warning say which and why.
-- Independence: a row warns when its episodes were drawn under draw rule 1 (shared_draws_said), when
-- episodes of one paper share a seed (suites pooled with the same seeds: shared_seeds_said), and when
-- its runs differ beyond what the papers allow (run_effect_p, stats.run_effect; NULL with one run).
WITH per_episode AS (  -- every cell, a floor where it did not finish (cell_scores, #33)
    SELECT agent, judge_id, randomness, tree_id, cell_id AS episode_id, q_norm, coverage, floored, draw_rule, seed,
           suite || '/' || run AS run_key
    FROM kept_cells
), corrected AS (  -- the conclusion score corrected by a person's readings, where some items were read
    SELECT agent, judge_id, randomness, count(i.labelled) AS labelled_items,
           ppi_ci(list(tree_id ORDER BY episode_id, item_id), list(predicted ORDER BY episode_id, item_id),
                  list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                  list(predicted ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                  list(labelled ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL)) AS cq
    FROM per_episode JOIN scored_items i USING (episode_id, judge_id)
    WHERE q_norm IS NOT NULL AND NOT floored GROUP BY ALL HAVING count(i.labelled) > 0
), boot AS (
    SELECT agent, judge_id, randomness,
           mean_ci(list(tree_id ORDER BY episode_id), list(q_norm ORDER BY episode_id), 0, 1) AS q,
           mean_ci(list(tree_id ORDER BY episode_id), list(coverage ORDER BY episode_id), 0, 1) AS c,
           shared_draws_said(randomness, list(draw_rule) FILTER (WHERE NOT floored),
                             list(seed) FILTER (WHERE NOT floored)) AS shared_draws,
           shared_seeds_said(list(tree_id) FILTER (WHERE NOT floored),
                             list(seed) FILTER (WHERE NOT floored)) AS shared_seeds,
           run_effect(list(tree_id ORDER BY episode_id), list(run_key ORDER BY episode_id),
                      list(q_norm ORDER BY episode_id)) AS re
    FROM per_episode GROUP BY agent, judge_id, randomness
)
SELECT agent, judge_id, randomness,
       q.estimate AS conclusion_score, q.se AS conclusion_score_se,
       q.ci_low AS conclusion_score_ci_low, q.ci_high AS conclusion_score_ci_high,
       cq.estimate AS conclusion_score_corrected, cq.ci_low AS conclusion_score_corrected_ci_low,
       cq.ci_high AS conclusion_score_corrected_ci_high, labelled_items,
       c.estimate AS coverage, c.se AS coverage_se, c.ci_low AS coverage_ci_low, c.ci_high AS coverage_ci_high,
       q.papers AS papers, q.episodes AS episodes, cells, q.method AS interval_method,
       re.p AS run_effect_p,
       nullif(concat_ws('; ', shared_draws, shared_seeds, 'conclusion score: ' || run_effect_said(re), nullif(unfinished_said(cells, unfinished, cq.estimate IS NOT NULL), ''),
                        'conclusion score: ' || q.warning, 'corrected conclusion score: ' || cq.warning,
                        'coverage: ' || c.warning), '') AS interval_warning,
       judge_validity(judge_id) AS judge_validity
FROM boot LEFT JOIN corrected USING (agent, judge_id, randomness) LEFT JOIN agent_cells USING (agent, judge_id, randomness)
ORDER BY agent, judge_id, randomness;
