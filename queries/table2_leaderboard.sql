-- Table 2 (model performance summary): coverage and conclusion score per agent and judge, at
-- randomness level 0, as the mean over papers of the per-paper mean over runs (#17); beside coverage,
-- own_coverage: the subtopics reached by the agent's own recognised moves, not by forced transitions
-- (#32; docs/instrument.md). Every cell of the campaign counts (cell_scores, #33): one that failed, was
-- interrupted, is running or never ran scores 0 in coverage, own coverage and the conclusion score;
-- `cells` says how many of each and on which papers, and --complete-case keeps the finished ones alone.
-- The conclusion score is q_norm = Q / k (#15), comparable with the paper's numbers.
-- Intervals: mean_ci (warehouse/intervals.py on inquitree.stats, docs/statistics.md): a score interval
-- for a mean in [0, 1] on the paper means (it follows their closeness to 0 or 1), widened by the
-- skew-corrected t interval unless a fifth of the papers sit at 0 or 1; none below 3 papers. *_se, *_ci_low, *_ci_high; interval_method and interval_warning say which and why.
-- papers and episodes count what the conclusion score rests on. rank, rank_low and rank_high: the
-- agent's rank by conclusion score among the agents of its judge and the 95% set of its ranks from its
-- paired tests against each other agent, Holm over its pairs (rank_ci, stats.rank_intervals; with
-- --fixed-papers, over draws of each paper's runs, the papers kept). judge_validity and matcher_validity: how well
-- the judge and the matcher that read these figures agree with careful readings of real agents, as
-- measured (warehouse/instrument.py, DECISIONS #32), or "unmeasured". failed_verdicts: the judge's
-- verdicts that failed (unusable output); an episode with one has no score and is left out of the
-- score and the rank, and a judge with no usable verdict for an agent gives that row no score and
-- no rank; interval_warning says so (`query judge_flags` gives the causes).
-- conclusion_score_corrected (with its _ci_low and _ci_high): where a person labelled some of these
-- episodes' conclusion items (inquitree label conclusions), the conclusion score corrected for the
-- judge's error: the judge's verdicts on every item combined with the labelled sample
-- (prediction-powered inference, stats.prediction_powered; docs/statistics.md), for the same
-- estimand; labelled_items counts the labelled items it rests on. All three NULL where none is labelled: the score is
-- the judge's alone, and the notes say so. matcher_misread (with its interval over papers): of these
-- episodes' moves a person labelled (inquitree label moves), the share the matcher misread (a wrong
-- candidate or a move meaning none accepted, an intended move missed); labelled_moves counts them.
-- labelled_validity: the instrument measured on these episodes' own labels (the matcher's misread
-- share, the judge's agreement and kappa with the readings), said ahead of the shipped measurement
-- (judge_validity, matcher_validity), which is one small model's text; NULL where nothing is labelled.
-- run_effect_p: with two or more runs, the permutation test of a shock shared by one run's papers
-- (stats.run_effect, on the conclusion score); at p <= 0.05 the row warns that its papers are not
-- independent. NULL with one run, where such a shock cannot be seen. With two or more runs the row
-- also gives the conclusion score's interval over runs as well as papers like these
-- (stats.runs_interval), which holds whether or not the test sees the shock. Episodes of one paper
-- that repeat a seed (suites pooled with the same seeds) are warned (shared_seeds_said).
WITH per_episode AS (  -- every cell of the level, a floor where it did not finish (cell_scores, #33)
    SELECT agent, judge_id, tree_id, cell_id AS episode_id, status, floored, coverage, own_coverage, q_norm,
           failed_verdicts, embedder, tau, tau_study, match_rule, seed, suite || '/' || run AS run_key
    FROM kept_cells WHERE randomness = 0
), cell_list AS (  -- what each agent's cells came to, kept or not
    SELECT agent, judge_id, cells, unfinished FROM agent_cells WHERE randomness = 0
), matchers AS (  -- the matcher's reading, asked once per embedder and thresholds, not per episode
    SELECT agent, judge_id,
           string_agg(matcher_validity(embedder, tau, tau_study, match_rule), ' | '
                      ORDER BY embedder, tau, tau_study, match_rule) AS matcher_validity
    FROM (SELECT DISTINCT agent, judge_id, embedder, tau, tau_study, match_rule FROM per_episode WHERE NOT floored)
    GROUP BY ALL
), boot AS (
    SELECT agent, judge_id,
           mean_ci(list(tree_id ORDER BY episode_id), list(coverage ORDER BY episode_id), 0, 1) AS c,
           mean_ci(list(tree_id ORDER BY episode_id), list(own_coverage ORDER BY episode_id), 0, 1) AS oc,
           mean_ci(list(tree_id ORDER BY episode_id), list(q_norm ORDER BY episode_id), 0, 1) AS q,
           run_effect(list(tree_id ORDER BY episode_id), list(run_key ORDER BY episode_id),
                      list(q_norm ORDER BY episode_id)) AS re,
           shared_seeds_said(list(tree_id) FILTER (WHERE NOT floored), list(seed) FILTER (WHERE NOT floored))
               AS shared_seeds,
           sum(failed_verdicts) AS failed_verdicts, count(*) FILTER (WHERE NOT floored) AS played,
           count(*) FILTER (WHERE q_norm IS NULL) AS unscored, count(DISTINCT tree_id) AS agent_papers
    FROM per_episode GROUP BY ALL
), paper_sets AS (  -- whether the agents a judge ranks were given the same papers
    SELECT judge_id, max(agent_papers) AS most_papers, count(DISTINCT agent_papers) AS sets FROM boot GROUP BY ALL
), items AS (  -- each item's evidence-weighted verdict and, where a person read it, label (#14, #15)
    SELECT p.agent, p.judge_id, p.tree_id, p.episode_id, i.item_id, i.predicted, i.labelled, i.score,
           i.label_value, i.labellers
    FROM per_episode p JOIN scored_items i USING (episode_id, judge_id)
    WHERE p.q_norm IS NOT NULL AND NOT p.floored  -- the corrected score reads finished episodes alone
), corrected AS (
    SELECT agent, judge_id, count(labelled) AS labelled_items,
           ppi_ci(list(tree_id ORDER BY episode_id, item_id), list(predicted ORDER BY episode_id, item_id),
                  list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                  list(predicted ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                  list(labelled ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL)) AS cq,
           conclusions_reading(list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                               list(label_value ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                               list(score ORDER BY episode_id, item_id) FILTER (WHERE labelled IS NOT NULL),
                               max(labellers)::INTEGER) AS conclusions_read
    FROM items GROUP BY ALL
), misread AS (
    SELECT p.agent, p.judge_id, count(*) AS labelled_moves,
           mean_ci(list(p.tree_id ORDER BY p.episode_id, m.labelled_version, m.labeller),
                   list(m.misread::DOUBLE ORDER BY p.episode_id, m.labelled_version, m.labeller), 0, 1) AS mr,
           moves_reading(list(p.tree_id ORDER BY p.episode_id, m.labelled_version, m.labeller),
                         list(m.misread ORDER BY p.episode_id, m.labelled_version, m.labeller),
                         count(DISTINCT m.labeller)::INTEGER) AS moves_read
    FROM per_episode p JOIN move_labels m USING (episode_id) GROUP BY ALL
), rank_lists AS (
    SELECT judge_id, rank_ci(list(agent ORDER BY episode_id), list(tree_id ORDER BY episode_id),
                             list(q_norm ORDER BY episode_id)) AS ranks
    FROM per_episode WHERE q_norm IS NOT NULL GROUP BY ALL  -- an agent with no score has no rank
), ranked AS (
    SELECT judge_id, r.agent AS agent, r FROM (SELECT judge_id, unnest(ranks) AS r FROM rank_lists)
)
SELECT agent, judge_id, 0 AS randomness,  -- the level this table speaks of, said with it
       c.estimate AS coverage, c.se AS coverage_se, c.ci_low AS coverage_ci_low, c.ci_high AS coverage_ci_high,
       oc.estimate AS own_coverage, oc.se AS own_coverage_se, oc.ci_low AS own_coverage_ci_low,
       oc.ci_high AS own_coverage_ci_high,
       q.estimate AS conclusion_score, q.se AS conclusion_score_se,
       q.ci_low AS conclusion_score_ci_low, q.ci_high AS conclusion_score_ci_high,
       cq.estimate AS conclusion_score_corrected, cq.ci_low AS conclusion_score_corrected_ci_low,
       cq.ci_high AS conclusion_score_corrected_ci_high, nullif(labelled_items, 0) AS labelled_items,
       r.rank AS rank, r.rank_low AS rank_low, r.rank_high AS rank_high,
       mr.estimate AS matcher_misread, mr.ci_low AS matcher_misread_ci_low, mr.ci_high AS matcher_misread_ci_high,
       labelled_moves,
       re.p AS run_effect_p, failed_verdicts, q.papers AS papers, q.episodes AS episodes, cells, q.method AS interval_method,
       nullif(concat_ws('; ',
                        CASE WHEN unscored = played
                             THEN format('no conclusion score and no rank: none of the {} episodes has a usable '
                                         'verdict from this judge ({} verdicts failed; `inquitree query '
                                         'judge_flags` gives their causes)', played, failed_verdicts)
                             WHEN unscored > 0
                             THEN format('{} of {} episodes have a failed verdict and are left out of the '
                                         'conclusion score and the rank ({} verdicts failed; `inquitree query '
                                         'judge_flags` gives their causes)', unscored, played, failed_verdicts)
                        END,
                        nullif(unfinished_said(cells, unfinished, cq.estimate IS NOT NULL), ''), shared_seeds,
                        CASE WHEN ps.sets > 1 AND agent_papers < ps.most_papers AND r.rank IS NOT NULL
                             THEN format('rank: played on {} papers where another agent of this judge had {}: '
                                         'the ranks compare unlike sets of papers', agent_papers, ps.most_papers)
                        END,
                        CASE WHEN c.estimate > 0 AND oc.estimate < c.estimate / 2
                             THEN format('coverage: mostly forced: the agent reached {:.2f} of its {:.2f} by its own '
                                         'moves, the rest by the engine''s after the last hint (own_coverage, #32)',
                                         oc.estimate, c.estimate) END,
                        'conclusion score: ' || q.warning, 'conclusion score: ' || run_effect_said(re),
                        'corrected conclusion score: ' || cq.warning, 'coverage: ' || c.warning,
                        'matcher misread: ' || mr.warning,
                        'own coverage: ' || oc.warning, 'rank: ' || r.warning), '') AS interval_warning,
       c.method AS coverage_interval_method, r.method AS rank_method,
       CASE WHEN cq.estimate IS NULL
            THEN 'the judge''s alone: none of these episodes'' conclusion items is labelled (inquitree label '
                 'conclusions corrects it for the judge''s error)'
            ELSE cq.method END AS corrected_method,
       nullif(concat_ws('; ', moves_read, conclusions_read), '') AS labelled_validity,
       judge_validity(judge_id) AS judge_validity, matcher_validity
FROM boot LEFT JOIN ranked USING (agent, judge_id) LEFT JOIN matchers USING (agent, judge_id)
     LEFT JOIN corrected USING (agent, judge_id) LEFT JOIN misread USING (agent, judge_id)
     LEFT JOIN paper_sets ps USING (judge_id) LEFT JOIN cell_list USING (agent, judge_id)
ORDER BY conclusion_score DESC NULLS LAST, agent, judge_id;
