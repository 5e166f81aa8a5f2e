-- Paired comparison of agents (#26, docs/statistics.md): `inquitree compare A B [C ...]` sets
-- agents (every pair, B - A in the order given) and one_off. A pair (the view pair_keys) is two
-- episodes of the same suite, tree, randomness level and run, scored by the same judge; an
-- episode played outside a suite is paired only with --one-off. Per pair of agents, headline metric, judge and level:
-- each agent's mean over the paired cells (mean over papers of per-paper means), the difference
-- B - A with the sign-flip test of the papers' mean differences and the interval that inverts it
-- (paired_ci: p, p_min, ci), Holm's adjustment within each family (p_holm), and how many cells
-- were paired or had no partner. A family is what a paper would declare: the comparisons of one
-- metric at one randomness level and judge, over the pairs of agents (holm_family says how many).
-- The conclusion score is the headline (role 'headline'); the other metrics are exploratory, each
-- adjusted in its own family, never pooled with the headline's. interval_method and interval_warning say how
-- and when a number cannot be trusted; `compare --pairs` lists the pairs themselves. Every cell of a
-- campaign is paired (cell_scores, #33): one that did not finish scores 0 in coverage and the conclusion
-- score (the row says how many on each side), and has no steps or redo frequency. own_coverage (the
-- subtopics reached by the agent's own moves, #32) stands beside coverage: a constant agent's coverage
-- is the oracle's, its own coverage is not. judge_validity:
-- how well the judge of the conclusion score agrees with a careful reading, as measured (#32).
-- Where a person labelled conclusion items of the paired episodes (inquitree label conclusions), a
-- row conclusion_score_corrected (role 'corrected') gives B - A of the scores corrected for the
-- judge's error (stats.prediction_powered_difference: the papers resampled together for both
-- agents), with its interval and no p-value; mean_a and mean_b are each side's corrected score.
WITH keyed AS (  -- every cell, a floor where it did not finish (cell_scores, #33); a floor has no steps
    SELECT c.agent, c.suite AS pair_suite, c.run AS pair_run, c.tree_id, c.randomness, c.judge_id,
           c.cell_id AS episode_id, c.coverage, c.own_coverage, c.q_norm, c.floored, c.steps::DOUBLE AS steps, c.max_turns,
           c.redo_frequency
    FROM kept_cells c
    WHERE list_contains(getvariable('agents'), c.agent) AND (c.in_suite OR getvariable('one_off'))
), listed AS (
    SELECT unnest(getvariable('agents')) AS agent, generate_subscripts(getvariable('agents'), 1) AS i
), agent_pairs AS (
    SELECT a.agent AS agent_a, b.agent AS agent_b, a.i AS ia, b.i AS ib FROM listed a, listed b WHERE a.i < b.i
), a_side AS (
    SELECT ap.*, k.* EXCLUDE (agent) FROM agent_pairs ap JOIN keyed k ON k.agent = ap.agent_a
), b_side AS (
    SELECT ap.*, k.* EXCLUDE (agent) FROM agent_pairs ap JOIN keyed k ON k.agent = ap.agent_b
), pairs AS (
    SELECT agent_a, agent_b, ia, ib, pair_suite AS suite, tree_id, randomness, judge_id, pair_run AS run,
           a.episode_id AS episode_a, b.episode_id AS episode_b,
           a.coverage AS a_coverage, b.coverage AS b_coverage, a.own_coverage AS a_own_coverage,
           b.own_coverage AS b_own_coverage, a.q_norm AS a_conclusion_score,
           b.q_norm AS b_conclusion_score, a.steps AS a_steps, b.steps AS b_steps,
           a.redo_frequency AS a_redo_frequency, b.redo_frequency AS b_redo_frequency,
           greatest(a.max_turns, b.max_turns) AS turn_limit,
           coalesce(a.floored, false) AS a_floored, coalesce(b.floored, false) AS b_floored
    FROM a_side a FULL JOIN b_side b USING (agent_a, agent_b, ia, ib, pair_suite, tree_id, randomness, judge_id, pair_run)
), long AS (
    SELECT p.*, m.metric, m.va, m.vb, m.low, m.high
    FROM pairs p, LATERAL (VALUES ('coverage', p.a_coverage, p.b_coverage, 0.0, 1.0),
                                  ('own_coverage', p.a_own_coverage, p.b_own_coverage, 0.0, 1.0),
                                  ('conclusion_score', p.a_conclusion_score, p.b_conclusion_score, 0.0, 1.0),
                                  ('steps', p.a_steps, p.b_steps, 0.0, NULL),
                                  ('redo_frequency', p.a_redo_frequency, p.b_redo_frequency, 0.0, 1.0))
                      AS m(metric, va, vb, low, high)
), tested AS (
    -- the paired values in one list, sorted once per group and taken apart below: five lists each
    -- sorted on its own were most of the query's time at 4M events (bench/intervals.py)
    SELECT agent_a, agent_b, ia, ib, metric, judge_id, randomness, any_value(low) AS low, any_value(high) AS high,
           max(turn_limit) AS turn_limit,  -- no paper's mean steps can pass the largest turn limit
           count(*) FILTER (WHERE episode_a IS NOT NULL AND episode_b IS NOT NULL) AS paired_cells,
           count(*) FILTER (WHERE episode_a IS NOT NULL AND episode_b IS NULL) AS only_a,
           count(*) FILTER (WHERE episode_b IS NOT NULL AND episode_a IS NULL) AS only_b,
           count(*) FILTER (WHERE a_floored) AS floored_a, count(*) FILTER (WHERE b_floored) AS floored_b,
           list({'tree': tree_id, 'va': va, 'vb': vb,
                 'pair': CASE WHEN getvariable('compare_pairs') THEN episode_a || ' ~ ' || episode_b END}
                ORDER BY tree_id, suite, run, episode_a, episode_b) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL)
               AS paired
    FROM long GROUP BY ALL
), scored AS (
    SELECT * EXCLUDE (paired), list_transform(paired, lambda x: x.tree) AS trees,
           list_transform(paired, lambda x: x.va) AS vas, list_transform(paired, lambda x: x.vb) AS vbs,
           list_transform(paired, lambda x: x.vb - x.va) AS ds, list_transform(paired, lambda x: x.pair) AS pairs
    FROM tested
), intervals AS (
    -- the lists are kept past here only when the pairs are asked for (compare_pairs: `--pairs`, CSV
    -- or JSON, `power`'s pilot, the report's lists of pairs); the viewer's table drops them
    SELECT * EXCLUDE (trees, vas, vbs, ds, pairs),
           CASE WHEN getvariable('compare_pairs') THEN trees END AS trees,
           CASE WHEN getvariable('compare_pairs') THEN ds END AS ds,
           CASE WHEN getvariable('compare_pairs') THEN pairs END AS pairs,
           CASE WHEN metric = 'steps' THEN capped_mean_ci(trees, vas, turn_limit)
                ELSE mean_ci(trees, vas, low, high) END AS ma,
           CASE WHEN metric = 'steps' THEN capped_mean_ci(trees, vbs, turn_limit)
                ELSE mean_ci(trees, vbs, low, high) END AS mb, paired_ci(trees, ds) AS d
    FROM scored
), adjusted AS (
    SELECT *, row_number() OVER (PARTITION BY metric, judge_id, randomness ORDER BY d.p NULLS LAST, ia, ib) AS p_rank,
           count(d.p) OVER (PARTITION BY metric, judge_id, randomness) AS tests
    FROM intervals
), plain AS (
SELECT metric, randomness, agent_a, agent_b, d.estimate AS difference, d.ci_low AS difference_ci_low,
       d.ci_high AS difference_ci_high, d.p AS p_value,
       CASE WHEN d.p IS NOT NULL THEN
           max(least(1.0, (tests - p_rank + 1) * d.p)) OVER (
               PARTITION BY metric, judge_id, randomness ORDER BY p_rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
       END AS p_holm,
       CASE WHEN metric = 'conclusion_score' THEN 'headline' ELSE 'exploratory' END AS role,
       d.p_min AS p_min, ma.estimate AS mean_a, mb.estimate AS mean_b, paired_cells, only_a, only_b,
       d.papers AS papers, d.se AS difference_se, judge_id, d.method AS interval_method,
       CASE WHEN metric = 'conclusion_score' THEN judge_validity(judge_id) END AS judge_validity,
       concat_ws('; ',
           CASE WHEN floored_a + floored_b > 0 AND metric IN ('coverage', 'own_coverage', 'conclusion_score') THEN
               format('{} of A''s and {} of B''s cells did not finish, each scored 0 (the failure rule, '
                      'docs/DECISIONS.md #33; --complete-case leaves them out)', floored_a, floored_b)
                WHEN floored_a + floored_b > 0 THEN
               format('{} of A''s and {} of B''s cells did not finish and have no {}: their pairs are left out',
                      floored_a, floored_b, metric)
           END, d.warning,
           CASE WHEN tests > 1 AND d.p_min IS NOT NULL AND d.p_min <= 0.05 AND tests * d.p_min > 0.05 THEN
               format('{} comparisons in this family: the smallest adjusted p these papers allow is {:.3g}, so '
                      'none can reach 5% after Holm''s adjustment (fewer agents, or more papers)',
                      tests, least(1.0, tests * d.p_min))
           END) AS interval_warning, tests AS holm_family, pairs, trees AS pair_trees,
       ds AS pair_differences, ia, ib
FROM adjusted
), corrected_items AS (  -- the paired cells' items, each side's, with the judge's verdict and a person's reading
    SELECT p.agent_a, p.agent_b, p.ia, p.ib, p.judge_id, p.randomness, s.side, p.tree_id, i.episode_id, i.item_id,
           i.predicted, i.labelled
    FROM pairs p CROSS JOIN (VALUES ('a'), ('b')) AS s(side)
    JOIN scored_items i ON i.episode_id = CASE s.side WHEN 'a' THEN p.episode_a ELSE p.episode_b END
                       AND i.judge_id = p.judge_id
    WHERE p.a_conclusion_score IS NOT NULL AND p.b_conclusion_score IS NOT NULL
      AND NOT p.a_floored AND NOT p.b_floored  -- the corrected difference reads finished episodes alone
), labelled_groups AS (  -- the groups a person read items of: the lists below are made for these alone
    -- (made for every group and then dropped, they were most of the memory of a 6-agent report)
    SELECT DISTINCT agent_a, agent_b, ia, ib, judge_id, randomness FROM corrected_items WHERE labelled IS NOT NULL
), corrected AS (
    SELECT agent_a, agent_b, ia, ib, judge_id, randomness,
           count(DISTINCT episode_id) // 2 AS paired_cells,
           ppi_diff_ci(
               list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE side = 'a'),
               list(predicted ORDER BY episode_id, item_id) FILTER (WHERE side = 'a'),
               list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE side = 'a' AND labelled IS NOT NULL),
               list(predicted ORDER BY episode_id, item_id) FILTER (WHERE side = 'a' AND labelled IS NOT NULL),
               list(labelled ORDER BY episode_id, item_id) FILTER (WHERE side = 'a' AND labelled IS NOT NULL),
               list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE side = 'b'),
               list(predicted ORDER BY episode_id, item_id) FILTER (WHERE side = 'b'),
               list(tree_id ORDER BY episode_id, item_id) FILTER (WHERE side = 'b' AND labelled IS NOT NULL),
               list(predicted ORDER BY episode_id, item_id) FILTER (WHERE side = 'b' AND labelled IS NOT NULL),
               list(labelled ORDER BY episode_id, item_id) FILTER (WHERE side = 'b' AND labelled IS NOT NULL)) AS cd
    FROM corrected_items SEMI JOIN labelled_groups USING (agent_a, agent_b, ia, ib, judge_id, randomness)
    GROUP BY ALL
), corrected_rows AS (
    SELECT 'conclusion_score_corrected' AS metric, randomness, agent_a, agent_b, cd.estimate AS difference,
           cd.ci_low AS difference_ci_low, cd.ci_high AS difference_ci_high, NULL::DOUBLE AS p_value,
           NULL::DOUBLE AS p_holm, 'corrected' AS role, NULL::DOUBLE AS p_min, cd.mean_a AS mean_a, cd.mean_b AS mean_b,
           paired_cells, 0::BIGINT AS only_a, 0::BIGINT AS only_b, cd.papers AS papers, cd.se AS difference_se,
           judge_id, cd.method AS interval_method, judge_validity(judge_id) AS judge_validity,
           cd.warning AS interval_warning, NULL::BIGINT AS holm_family, NULL::VARCHAR[] AS pairs,
           NULL::VARCHAR[] AS pair_trees, NULL::DOUBLE[] AS pair_differences, ia, ib
    FROM corrected
)
SELECT * EXCLUDE (ia, ib) FROM (SELECT * FROM plain UNION ALL BY NAME SELECT * FROM corrected_rows)
ORDER BY ia, ib, CASE metric WHEN 'conclusion_score' THEN 0 WHEN 'conclusion_score_corrected' THEN 1
                             WHEN 'coverage' THEN 2 WHEN 'own_coverage' THEN 3 WHEN 'steps' THEN 4 ELSE 5 END,
         judge_id, randomness;
