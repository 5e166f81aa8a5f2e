-- Every judge verdict of the study, by judge and score: the embedding judge scores by cosine
-- bands (1, 0.6, 0; with the recorded thresholds 0.85/0.7, and with 0.78/0.74 when the study is
-- re-scored), the same model as judge by its own reading; error counts the verdicts the judge
-- could not give.
SELECT judge_kind, judge_id, score, sum(error::INT) AS errors, count(*) AS verdicts
FROM ev_judge_verdict
GROUP BY ALL ORDER BY judge_kind, judge_id, score
