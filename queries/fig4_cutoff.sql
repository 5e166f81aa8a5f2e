-- Figure 4: conclusion score on papers published before vs after each model's training cutoff
-- (Sec. 4.4, #22). Cutoffs come from the model registry (trees/registry/models.json, seeded with
-- the paper's Table 3, extended with --registry FILE); level 0 only; mean over papers of
-- per-paper means. A paper is post-cutoff when the first day it may have been published (its
-- date may be known only to the month or year) is after the cutoff, pre-cutoff when the last
-- day is on or before it, and "date undetermined" otherwise (no date, or a window across the
-- cutoff). An agent with no registry entry, or one whose cutoff is null, is "cutoff unknown".
-- Nothing is dropped: every cell at level 0 is in exactly one row (cell_scores, #33: a cell that did
-- not finish scores 0, and `cells` says so; --complete-case keeps the finished ones alone).
-- conclusion_score_corrected (with its interval) and labelled_items: where a person read some of the
-- episodes' conclusion items (inquitree label conclusions), the score corrected for the judge's error,
-- as the leaderboard's (stats.prediction_powered; docs/statistics.md); NULL where none was read.
-- Intervals: mean_ci (warehouse/intervals.py on inquitree.stats, docs/statistics.md): a score interval
-- for a mean in [0, 1] on the paper means (it follows their closeness to 0 or 1), widened by the
-- skew-corrected t interval unless a fifth of the papers sit at 0 or 1; none below 3 papers. *_se, *_ci_low, *_ci_high; interval_method and interval_warning say which and why.
WITH scored AS (  -- every cell of level 0, a floor where it did not finish (cell_scores, #33)
    SELECT e.agent, e.judge_id, e.tree_id, e.cell_id AS episode_id, e.published_from, e.published_to,
           m.model AS registry_model, m.cutoff, e.q_norm, e.floored, e.kept, e.status
    FROM cell_scores e
    LEFT JOIN model_registry m ON m.alias = lower(e.agent)
    WHERE e.randomness = 0
), split AS (
    SELECT *, CASE WHEN cutoff IS NULL THEN 'cutoff unknown'
                   WHEN published_to IS NOT NULL AND published_to <= cutoff THEN 'pre-cutoff'
                   WHEN published_from > cutoff THEN 'post-cutoff'
                   ELSE 'date undetermined' END AS split
    FROM scored
), corrected AS (  -- the conclusion score corrected by a person's readings, where some items were read
    SELECT agent, registry_model, cutoff, judge_id, split, count(i.labelled) AS labelled_items,
           ppi_ci(list(tree_id ORDER BY episode_id, item_id), list(predicted ORDER BY episode_id, item_id),
                  list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                  list(predicted ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                  list(labelled ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL)) AS cq
    FROM split JOIN scored_items i USING (episode_id, judge_id)
    WHERE q_norm IS NOT NULL AND NOT floored AND kept
    GROUP BY ALL HAVING count(i.labelled) > 0
), boot AS (
    SELECT agent, registry_model, cutoff, judge_id, split,
           mean_ci(list(tree_id ORDER BY episode_id) FILTER (WHERE kept),
                   list(q_norm ORDER BY episode_id) FILTER (WHERE kept), 0, 1) AS q,
           string_agg(DISTINCT tree_id, ', ' ORDER BY tree_id) AS trees,
           cells_said(list(status ORDER BY episode_id), list(tree_id ORDER BY episode_id)) AS cells,
           count(*) FILTER (WHERE status <> 'done') AS unfinished
    FROM split GROUP BY ALL
)
SELECT b.agent, b.registry_model, b.cutoff, b.judge_id, b.split,
       q.estimate AS conclusion_score, q.se AS conclusion_score_se,
       q.ci_low AS conclusion_score_ci_low, q.ci_high AS conclusion_score_ci_high,
       cq.estimate AS conclusion_score_corrected, cq.ci_low AS conclusion_score_corrected_ci_low,
       cq.ci_high AS conclusion_score_corrected_ci_high, labelled_items,
       q.papers AS papers, q.episodes AS episodes, trees, cells, q.method AS interval_method,
       nullif(concat_ws('; ', nullif(unfinished_said(cells, unfinished, cq.estimate IS NOT NULL), ''),
                        q.warning, 'corrected conclusion score: ' || cq.warning), '') AS interval_warning,
       judge_validity(b.judge_id) AS judge_validity
FROM boot b LEFT JOIN corrected k ON k.agent = b.agent AND k.judge_id = b.judge_id AND k.split = b.split
     AND k.registry_model IS NOT DISTINCT FROM b.registry_model AND k.cutoff IS NOT DISTINCT FROM b.cutoff
ORDER BY b.agent, b.judge_id, CASE b.split WHEN 'pre-cutoff' THEN 0 WHEN 'post-cutoff' THEN 1 ELSE 2 END;
