-- Paired comparison of two agents (#26): `inquitree compare AGENT_A AGENT_B` sets agent_a and
-- agent_b. Cells are paired by tree, randomness level, run index and judge (the run index is
-- a suite cell's run number, else the order of the episodes of that agent in that cell). Per
-- headline metric, judge and level: each agent's mean over the paired cells (mean over papers of
-- per-paper means), the difference B - A with its interval by boot_mean over the pairs'
-- differences (warehouse/bootstrap.py, #25: below 8 papers a t interval over the papers' mean
-- differences, else the cluster bootstrap over papers), the two-sided sign-flip permutation
-- p-value (sign_flip_p, #26: the sign of each paper's mean difference flipped; exact up to 16
-- papers), and how many cells were paired and how many had no partner on the other side.
WITH cells AS (
    SELECT e.agent, e.tree_id, e.randomness, s.judge_id, e.episode_id, e.coverage, s.q_norm, e.steps::DOUBLE AS steps,
           CASE WHEN e.result_observations > 0 THEN e.redo_decisions / e.result_observations END AS redo_frequency,
           coalesce(TRY_CAST(regexp_extract(e.episode_id, '\.r([0-9]+)$', 1) AS INTEGER),
                    row_number() OVER (PARTITION BY e.agent, e.tree_id, e.randomness, s.judge_id
                                       ORDER BY e.started_at, e.episode_id) - 1) AS run_index
    FROM episodes e JOIN episode_scores s USING (episode_id)
    WHERE e.status = 'done' AND e.agent IN (getvariable('agent_a'), getvariable('agent_b'))
), a AS (
    SELECT * FROM cells WHERE agent = getvariable('agent_a')
), b AS (
    SELECT * FROM cells WHERE agent = getvariable('agent_b')
), pairs AS (
    SELECT tree_id, randomness, judge_id, run_index, a.episode_id IS NOT NULL AS has_a, b.episode_id IS NOT NULL AS has_b,
           a.coverage AS a_coverage, b.coverage AS b_coverage, a.q_norm AS a_conclusion_score,
           b.q_norm AS b_conclusion_score, a.steps AS a_steps, b.steps AS b_steps,
           a.redo_frequency AS a_redo_frequency, b.redo_frequency AS b_redo_frequency
    FROM a FULL JOIN b USING (tree_id, randomness, judge_id, run_index)
), long AS (
    SELECT m.metric, p.tree_id, p.randomness, p.judge_id, p.run_index, p.has_a, p.has_b, m.va, m.vb
    FROM pairs p, LATERAL (VALUES ('coverage', p.a_coverage, p.b_coverage),
                                  ('conclusion_score', p.a_conclusion_score, p.b_conclusion_score),
                                  ('steps', p.a_steps, p.b_steps),
                                  ('redo_frequency', p.a_redo_frequency, p.b_redo_frequency)) AS m(metric, va, vb)
), tested AS (
    SELECT metric, judge_id, randomness,
           count(*) FILTER (WHERE has_a AND has_b) AS paired_cells,
           count(*) FILTER (WHERE has_a AND NOT has_b) AS only_a,
           count(*) FILTER (WHERE has_b AND NOT has_a) AS only_b,
           boot_mean(list(tree_id ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL),
                     list(va ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL)) AS ma,
           boot_mean(list(tree_id ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL),
                     list(vb ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL)) AS mb,
           boot_mean(list(tree_id ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL),
                     list(vb - va ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL)) AS d,
           sign_flip_p(list(tree_id ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL),
                       list(vb - va ORDER BY tree_id, run_index) FILTER (WHERE va IS NOT NULL AND vb IS NOT NULL)) AS p
    FROM long GROUP BY ALL
)
SELECT metric, randomness, d.estimate AS difference, d.ci_low AS difference_ci_low, d.ci_high AS difference_ci_high,
       p AS p_value, ma.estimate AS mean_a, mb.estimate AS mean_b, paired_cells, only_a, only_b, d.papers AS papers,
       d.se AS difference_se, judge_id, getvariable('agent_a') AS agent_a, getvariable('agent_b') AS agent_b,
       d.method AS interval_method
FROM tested
ORDER BY CASE metric WHEN 'conclusion_score' THEN 0 WHEN 'coverage' THEN 1 WHEN 'steps' THEN 2 ELSE 3 END,
         judge_id, randomness;
