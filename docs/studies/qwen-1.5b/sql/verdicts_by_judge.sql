-- Every judge verdict of the study, by judge and score: the embedding judge scores by cosine
-- bands (1, 0.6, 0), the same model as judge by its own reading; error counts the verdicts the
-- judge could not give.
SELECT judge_kind, score, sum(error::INT) AS errors, count(*) AS verdicts
FROM ev_judge_verdict
GROUP BY ALL ORDER BY judge_kind, score
