-- How the study's episodes went, by randomness level: how many, how many subtopics they visited
-- against the tree's, steps against the lower bound 3n, hints, forced transitions, requests for
-- a locked subtopic, fake results shown, and coverage.
SELECT e.randomness,
       count(*) AS episodes,
       sum((e.status = 'done')::INT) AS finished,
       round(avg(v.visited), 2) AS subtopics_visited,
       round(avg(e.n_subtopics), 2) AS subtopics_in_tree,
       round(avg(e.steps), 2) AS steps,
       round(avg(e.lower_bound), 2) AS lower_bound_3n,
       round(avg(e.hints_issued), 2) AS hints,
       sum(e.forced_transitions) AS forced_transitions,
       sum(coalesce(b.blocked, 0)) AS locked_requests,
       sum(e.fake_observations) AS fake_results_shown,
       round(avg(e.coverage), 3) AS coverage
FROM episodes e
LEFT JOIN (SELECT episode_id, count(DISTINCT node) AS visited FROM ev_transitioned WHERE to_state = 'subtopic' GROUP BY ALL) v
    USING (episode_id)
LEFT JOIN (SELECT episode_id, count(*) AS blocked FROM ev_dependency_blocked GROUP BY ALL) b USING (episode_id)
GROUP BY ALL ORDER BY e.randomness
