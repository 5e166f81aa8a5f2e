-- Episode summary: per episode and judge, coverage (Eq. 7) and own_coverage (the subtopics reached
-- by the agent's own recognised moves, not by forced transitions: #32), Q as q_sum (Eq. 9) and q_norm (#15),
-- steps against the bounds [3n, n(2H+3)] (Eq. 11-12), hints used, forced transitions, fakes seen.
SELECT e.episode_id, e.tree_id, e.agent, e.randomness, e.seed, e.status, s.judge_id,
       e.coverage, e.own_coverage, s.q_sum, s.q_norm, s.k,
       e.steps, e.lower_bound, e.upper_bound, e.within_bounds,
       e.hints_issued, e.forced_transitions, e.result_observations, e.fake_observations, e.redo_decisions
FROM episodes e
LEFT JOIN episode_scores s USING (episode_id)
ORDER BY e.started_at, e.episode_id, s.judge_id;
