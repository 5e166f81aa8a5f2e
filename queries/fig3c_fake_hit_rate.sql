-- Figure 3c: fake-result hit rate (fakes followed by redo_study as the next parsed decision in that
-- Result state, #19) beside the false-alarm rate (redo after true observations / true observations,
-- #20) and the decontextualized baseline (Sec. 4.3, #21: the same agent judging result texts in
-- isolation; NULL until `inquitree control` has been run for that model). Pooled per agent and level.
-- Intervals: ratio_ci (warehouse/intervals.py on stats.pooled_rate, docs/statistics.md): Fieller's
-- interval for the pooled rate over papers (each paper weighted by the fakes it was shown), cut to
-- [0, 1]; none below 3 papers; interval_warning says when too few papers or fakes bear it.
WITH per_episode AS (
    SELECT e.agent, e.randomness, e.tree_id, e.episode_id,
           count(*) FILTER (WHERE o.fake) AS fakes_seen,
           count(*) FILTER (WHERE o.fake AND o.next_decision = 'redo_study') AS fakes_spotted,
           count(*) FILTER (WHERE NOT o.fake) AS true_seen,
           count(*) FILTER (WHERE NOT o.fake AND o.next_decision = 'redo_study') AS false_alarms
    FROM result_observations o JOIN episodes e USING (episode_id)
    GROUP BY ALL
), in_loop AS (
    SELECT agent, randomness, sum(fakes_seen) AS fakes_seen, sum(fakes_spotted) AS fakes_spotted,
           sum(true_seen) AS true_seen, sum(false_alarms) AS false_alarms,
           ratio_ci(list(tree_id ORDER BY episode_id), list(fakes_spotted ORDER BY episode_id),
                      list(fakes_seen ORDER BY episode_id)) AS hit,
           ratio_ci(list(tree_id ORDER BY episode_id), list(false_alarms ORDER BY episode_id),
                      list(true_seen ORDER BY episode_id)) AS fa,
           count(DISTINCT tree_id) AS papers, count(*) AS episodes
    FROM per_episode GROUP BY ALL
), control AS (
    SELECT coalesce(agent_label, agent_model, agent_kind) AS agent, count(*) AS control_items,
           avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) AS control_accuracy,
           avg(CASE WHEN answer = 'INVALID' THEN 1.0 ELSE 0.0 END) FILTER (WHERE shown_fake) AS control_fake_detection,
           avg(CASE WHEN answer = 'INVALID' THEN 1.0 ELSE 0.0 END) FILTER (WHERE NOT shown_fake) AS control_false_alarm
    FROM ev_control_answered GROUP BY ALL
)
SELECT l.agent, l.randomness, l.fakes_seen, l.fakes_spotted,
       l.fakes_spotted / nullif(l.fakes_seen, 0) AS hit_rate,
       l.hit.se AS hit_rate_se, l.hit.ci_low AS hit_rate_ci_low, l.hit.ci_high AS hit_rate_ci_high,
       l.false_alarms / nullif(l.true_seen, 0) AS false_alarm_rate,
       l.fa.se AS false_alarm_rate_se, l.fa.ci_low AS false_alarm_rate_ci_low, l.fa.ci_high AS false_alarm_rate_ci_high,
       c.control_fake_detection, c.control_false_alarm, c.control_accuracy, c.control_items,
       l.papers, l.episodes, l.hit.method AS interval_method,
       nullif(concat_ws('; ', 'hit rate: ' || l.hit.warning, 'false alarms: ' || l.fa.warning), '') AS interval_warning
FROM in_loop l LEFT JOIN control c USING (agent)
ORDER BY l.agent, l.randomness;
