-- Steps against the theoretical bounds (Appendix B, Eq. 11-12): per tree and agent, the
-- distribution of steps of finished episodes beside 3n and n(2H+3).
SELECT tree_id, agent, n_subtopics AS n, max_hints AS H, lower_bound, upper_bound,
       count(*) AS episodes, min(steps) AS min_steps, avg(steps) AS mean_steps, max(steps) AS max_steps,
       avg(CASE WHEN within_bounds THEN 1.0 ELSE 0.0 END) AS share_within_bounds,
       avg(CASE WHEN steps = lower_bound THEN 1.0 ELSE 0.0 END) AS share_at_lower_bound,
       avg(CASE WHEN steps = upper_bound THEN 1.0 ELSE 0.0 END) AS share_at_upper_bound,
       avg(coverage) AS mean_coverage
FROM episodes
WHERE status = 'done'
GROUP BY ALL
ORDER BY tree_id, agent, H;
