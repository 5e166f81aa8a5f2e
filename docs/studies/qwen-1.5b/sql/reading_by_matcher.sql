-- How the matcher read the agent, per embedder (with its thresholds), match rule (empty: the paper's),
-- randomness level and run:
-- steps, hints, forced transitions, coverage (Eq. 7), own_coverage (subtopics entered by the
-- agent's own recognised moves, docs/instrument.md), how many first Topic moves were accepted,
-- and the conclusion score under one judge for every arm (the MiniLM embedding judge, 0.85/0.7),
-- so that arms read by different matchers can be set side by side (docs/studies/qwen-1.5b.md).
WITH first_topic AS (
    SELECT episode_id, arg_min(accepted, step) AS accepted FROM ev_match_scored WHERE state = 'topic' GROUP BY ALL
)
SELECT e.embedder, e.tau, coalesce(e.tau_study, e.tau) AS tau_study, e.match_rule, e.randomness,
       CAST(regexp_extract(e.episode_id, '\.r([0-9]+)$', 1) AS INTEGER) AS run,
       count(*) AS episodes, avg(e.steps) AS steps, avg(e.hints_issued) AS hints,
       avg(e.forced_transitions) AS forced_transitions, avg(e.coverage) AS coverage,
       avg(e.own_coverage) AS own_coverage, count(*) FILTER (WHERE f.accepted) AS first_topic_moves_accepted,
       avg(s.q_norm) AS conclusion_score_minilm_judge
FROM episodes e
LEFT JOIN first_topic f USING (episode_id)
LEFT JOIN episode_scores s ON s.episode_id = e.episode_id AND s.judge_id = 'embedding:local:all-MiniLM-L6-v2-int8:0.85/0.7'
WHERE e.status = 'done'
GROUP BY ALL
ORDER BY e.embedder, e.match_rule NULLS FIRST, e.randomness, run;
