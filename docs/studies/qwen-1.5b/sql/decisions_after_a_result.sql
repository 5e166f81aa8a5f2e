-- What the model decided after each Result (redo_study, explore_new_subtopic or draw_conclusion),
-- by randomness level and by whether the result it had just seen was a fake.
SELECT e.randomness, d.fake AS after_a_fake_result, r.action AS decision, count(*) AS replies
FROM ev_agent_replied r
JOIN episodes e USING (episode_id)
ASOF LEFT JOIN (SELECT episode_id, global_position, fake FROM ev_result_drawn) d
    ON d.episode_id = r.episode_id AND d.global_position < r.global_position
WHERE r.state = 'result'
GROUP BY ALL ORDER BY ALL
