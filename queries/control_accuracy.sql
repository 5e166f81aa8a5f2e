-- Decontextualized control (Sec. 4.3, #21): per agent, accuracy on result texts shown alone, the
-- fake-detection rate (fakes called INVALID), the false-alarm rate (true results called INVALID),
-- and the share of replies that were not exactly VALID or INVALID (parsed strictly; unparsed_share).
SELECT coalesce(agent_label, agent_model, agent_kind) AS agent, count(*) AS items,
       avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) AS accuracy,
       avg(CASE WHEN answer = 'INVALID' THEN 1.0 ELSE 0.0 END) FILTER (WHERE shown_fake) AS fake_detection_rate,
       avg(CASE WHEN answer = 'INVALID' THEN 1.0 ELSE 0.0 END) FILTER (WHERE NOT shown_fake) AS false_alarm_rate,
       avg(CASE WHEN answer IS NULL THEN 1.0 ELSE 0.0 END) AS unparsed_share
FROM ev_control_answered
GROUP BY ALL
ORDER BY agent;
