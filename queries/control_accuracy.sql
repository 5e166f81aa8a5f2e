-- Decontextualized control (Sec. 4.3, #21): per agent, accuracy on result texts shown alone, the
-- fake-detection rate (fakes called INVALID), the false-alarm rate (true results called INVALID),
-- and the share of replies that were not exactly VALID or INVALID (parsed strictly; unparsed_share).
-- An unparsed answer is an error, counted (unparsed) and said, never a score: every rate is over the
-- answers that were read, as a failed judge verdict is left out of the conclusion score.
-- Intervals: ratio_ci (warehouse/intervals.py on stats.pooled_rate, docs/statistics.md): Fieller's
-- interval for each pooled rate over papers (items grouped by their tree), cut to [0, 1].
WITH items AS (
    SELECT coalesce(agent_label, agent_model, agent_kind) AS agent, tree_id, result_id, shown_fake, global_position,
           CASE WHEN correct THEN 1.0 ELSE 0.0 END AS correct,
           CASE WHEN answer = 'INVALID' THEN 1.0 ELSE 0.0 END AS invalid,
           CASE WHEN answer IS NULL THEN 1.0 ELSE 0.0 END AS unparsed
    FROM ev_control_answered
), counted AS (
    SELECT agent, count(*) AS items, count(*) FILTER (WHERE unparsed = 1) AS unparsed, avg(unparsed) AS unparsed_share
    FROM items GROUP BY ALL
), boot AS (
    SELECT agent, count(DISTINCT tree_id) AS papers,
           ratio_ci(list(tree_id ORDER BY global_position), list(correct ORDER BY global_position),
                      list(1.0 ORDER BY global_position)) AS acc,
           ratio_ci(list(tree_id ORDER BY global_position) FILTER (WHERE shown_fake),
                      list(invalid ORDER BY global_position) FILTER (WHERE shown_fake),
                      list(1.0 ORDER BY global_position) FILTER (WHERE shown_fake)) AS det,
           ratio_ci(list(tree_id ORDER BY global_position) FILTER (WHERE NOT shown_fake),
                      list(invalid ORDER BY global_position) FILTER (WHERE NOT shown_fake),
                      list(1.0 ORDER BY global_position) FILTER (WHERE NOT shown_fake)) AS fa
    FROM items WHERE unparsed = 0 GROUP BY ALL
)
SELECT agent, items, acc.estimate AS accuracy, acc.se AS accuracy_se, acc.ci_low AS accuracy_ci_low,
       acc.ci_high AS accuracy_ci_high,
       det.estimate AS fake_detection_rate, det.ci_low AS fake_detection_rate_ci_low,
       det.ci_high AS fake_detection_rate_ci_high,
       fa.estimate AS false_alarm_rate, fa.ci_low AS false_alarm_rate_ci_low, fa.ci_high AS false_alarm_rate_ci_high,
       unparsed, unparsed_share, papers, acc.method AS interval_method,
       nullif(concat_ws('; ',
                        CASE WHEN unparsed = items
                             THEN format('none of the {} answers could be read (neither VALID nor INVALID): no rate '
                                         'to give; `inquitree sql` on ev_control_answered shows the replies', items)
                             WHEN unparsed > 0
                             THEN format('{} of {} answers could not be read: left out of every rate, never scored '
                                         'as wrong', unparsed, items) END,
                        'accuracy: ' || acc.warning, 'fake detection: ' || det.warning,
                        'false alarms: ' || fa.warning), '') AS interval_warning
FROM counted LEFT JOIN boot USING (agent)
ORDER BY agent;
