-- Steps against the theoretical bounds (Appendix B, Eq. 11-12): per tree and agent, the
-- distribution of steps of finished episodes beside 3n and n(2H+3). The bounds hold for an agent
-- that visits every subtopic; an episode below 3n ended before that, and below_lower_bound_why
-- says how (the agent concluded early, or the engine ended it: turn or re-ask limit, a run limit).
-- Intervals: boot_mean on mean_steps, warehouse/bootstrap.py (#25); one tree per row, so it
-- resamples the episodes only (interval_method says so).
WITH done AS (
    SELECT *, CASE WHEN steps >= lower_bound THEN NULL
                   WHEN ended_by = 'conclusion' THEN format('concluded after visiting {} of {} subtopics',
                                                           round(coverage * n_subtopics)::INTEGER, n_subtopics)
                   ELSE 'ended by ' || ended_by END AS why_below
    FROM episodes WHERE status = 'done'
), agg AS (
SELECT tree_id, agent, n_subtopics AS n, max_hints AS H, lower_bound, upper_bound,
       count(*) AS episodes, min(steps) AS min_steps, avg(steps) AS mean_steps,
       boot_mean(list(tree_id ORDER BY episode_id), list(steps ORDER BY episode_id)) AS b,
       max(steps) AS max_steps,
       avg(CASE WHEN within_bounds THEN 1.0 ELSE 0.0 END) AS share_within_bounds,
       avg(CASE WHEN steps = lower_bound THEN 1.0 ELSE 0.0 END) AS share_at_lower_bound,
       avg(CASE WHEN steps = upper_bound THEN 1.0 ELSE 0.0 END) AS share_at_upper_bound,
       count(*) FILTER (WHERE steps < lower_bound) AS below_lower_bound,
       string_agg(DISTINCT why_below, '; ' ORDER BY why_below) AS below_lower_bound_why,
       avg(coverage) AS mean_coverage
FROM done
GROUP BY ALL
)
SELECT tree_id, agent, n, H, lower_bound, upper_bound, episodes, min_steps, mean_steps,
       b.se AS mean_steps_se, b.ci_low AS mean_steps_ci_low, b.ci_high AS mean_steps_ci_high, max_steps,
       share_within_bounds, share_at_lower_bound, share_at_upper_bound, below_lower_bound, below_lower_bound_why,
       mean_coverage, b.method AS interval_method
FROM agg
ORDER BY tree_id, agent, H;
