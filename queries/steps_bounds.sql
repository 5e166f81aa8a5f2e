-- Steps against the theoretical bounds (Appendix B, Eq. 11-12): per tree and agent, the
-- distribution of steps beside 3n and n(2H+3). The bounds describe an inquiry that the agent
-- ends itself, so they apply to the episodes it concluded: an episode the engine cut off (turn
-- or re-ask limit, a run limit) is counted apart (cut_off, cut_off_by) and left out of the step
-- statistics and shares (cut_off_warning says so under the table). Appendix B assumes a particular set of moves (each subtopic selected
-- once, one design, one return), so each side says why a concluded episode falls outside:
-- below 3n it concluded before visiting every subtopic; above n(2H+3) it made moves the bounds
-- leave out (redo decisions, invalid decisions the engine asked again, repeat subtopic visits).
-- The shares within and at the bounds count only the concluded episodes that visited every
-- subtopic (concluded_visited_all): an episode that saw one subtopic of three falls between 3n and
-- n(2H+3) only by the misses it added, which says nothing about the bounds. (The engine's own
-- within_bounds, recorded with each score, is Eq. 11-12 taken literally, as the paper states it.)
-- Intervals: unit_mean_ci on mean_steps (warehouse/intervals.py, docs/statistics.md): one tree per row,
-- so each concluded episode is a unit; steps are positive, so a log-scale (Cox) t interval below
-- 30 episodes and the t interval from 30 on; none below 3 episodes (interval_warning says so); an
-- upper end past the turn limit, which no episode's steps can pass, is cut there.
-- matcher_validity: how well the matcher that counted these steps reads real moves, as measured
-- (warehouse/instrument.py, DECISIONS #32): steps, hints and forced transitions are its reading.
WITH done AS (
    SELECT *, ended_by = 'conclusion' AS concluded,
           CASE WHEN ended_by <> 'conclusion' OR steps >= lower_bound THEN NULL
                ELSE format('concluded after visiting {} of {} subtopics', round(coverage * n_subtopics)::INTEGER, n_subtopics)
           END AS why_below,
           CASE WHEN ended_by <> 'conclusion' OR steps <= upper_bound THEN NULL
                ELSE nullif(concat_ws(', ',
                        CASE WHEN redo_decisions > 0 THEN format('{} redo decisions', redo_decisions) END,
                        CASE WHEN invalid_decisions > 0 THEN format('{} invalid decisions asked again', invalid_decisions) END,
                        CASE WHEN repeat_subtopic_visits > 0 THEN format('{} repeat subtopic visits', repeat_subtopic_visits) END),
                     '') END AS why_above
    FROM episodes WHERE status = 'done'
), agg AS (
SELECT tree_id, agent, n_subtopics AS n, max_hints AS H, lower_bound, upper_bound,
       count(*) AS episodes,
       min(steps) FILTER (WHERE concluded) AS min_steps, avg(steps) FILTER (WHERE concluded) AS mean_steps,
       unit_mean_ci(list(steps ORDER BY episode_id) FILTER (WHERE concluded), 0, NULL,
                    max(max_turns) FILTER (WHERE concluded)) AS b,
       max(steps) FILTER (WHERE concluded) AS max_steps,
       count(*) FILTER (WHERE concluded AND visited_all) AS concluded_visited_all,
       avg(CASE WHEN within_bounds THEN 1.0 ELSE 0.0 END) FILTER (WHERE concluded AND visited_all)
           AS share_within_bounds,
       avg(CASE WHEN steps = lower_bound THEN 1.0 ELSE 0.0 END) FILTER (WHERE concluded AND visited_all)
           AS share_at_lower_bound,
       avg(CASE WHEN steps = upper_bound THEN 1.0 ELSE 0.0 END) FILTER (WHERE concluded AND visited_all)
           AS share_at_upper_bound,
       count(*) FILTER (WHERE concluded AND steps < lower_bound) AS below_lower_bound,
       string_agg(DISTINCT why_below, '; ' ORDER BY why_below) AS below_lower_bound_why,
       avg(coverage) FILTER (WHERE concluded) AS mean_coverage,
       count(*) FILTER (WHERE concluded) AS concluded,
       count(*) FILTER (WHERE concluded AND steps > upper_bound) AS above_upper_bound,
       string_agg(DISTINCT why_above, '; ' ORDER BY why_above) AS above_upper_bound_why,
       count(*) FILTER (WHERE NOT concluded) AS cut_off,
       string_agg(DISTINCT CASE WHEN NOT concluded THEN ended_by END, '; ' ORDER BY CASE WHEN NOT concluded THEN ended_by END)
           AS cut_off_by,
       list(DISTINCT {'embedder': embedder, 'tau': tau, 'tau_study': tau_study, 'rule': match_rule}) AS readers
FROM done
GROUP BY ALL
)
SELECT tree_id, agent, n, H, lower_bound, upper_bound, episodes, min_steps, mean_steps,
       b.se AS mean_steps_se, b.ci_low AS mean_steps_ci_low, b.ci_high AS mean_steps_ci_high, max_steps,
       concluded_visited_all, share_within_bounds, share_at_lower_bound, share_at_upper_bound, below_lower_bound,
       below_lower_bound_why,
       mean_coverage, b.method AS interval_method, b.warning AS interval_warning, concluded, above_upper_bound, above_upper_bound_why,
       cut_off, cut_off_by,
       CASE WHEN concluded = 0 THEN format('{} cut off ({}): the bounds are for episodes the agent concluded, so no '
                                           'steps are given', CASE WHEN episodes = 1 THEN 'its one episode was'
                                           ELSE format('all {} episodes were', episodes) END, cut_off_by)
            WHEN cut_off > 0 THEN format('{} of {} episodes were cut off ({}) and are left out of the steps',
                                         cut_off, episodes, cut_off_by)
       END AS cut_off_warning,
       -- the matcher's reading, asked once per embedder and thresholds of the row, not per episode
       array_to_string(list_sort(list_transform(readers, lambda r: matcher_validity(r.embedder, r.tau, r.tau_study, r.rule))),
                       ' | ') AS matcher_validity
FROM agg
ORDER BY tree_id, agent, H;
