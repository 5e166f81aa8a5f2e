-- Judge agreement: for every pair of judges that scored the same (episode, ground-truth item),
-- exact agreement on S in {1.0, 0.6, 0.0}, mean absolute difference, and Cohen's kappa.
WITH v AS (SELECT episode_id, item_id, judge_id, score FROM latest_verdicts WHERE score IS NOT NULL),
pairs AS (
    SELECT a.judge_id AS judge_a, b.judge_id AS judge_b, a.score AS sa, b.score AS sb
    FROM v a JOIN v b ON a.episode_id = b.episode_id AND a.item_id = b.item_id AND a.judge_id < b.judge_id
), observed AS (
    SELECT judge_a, judge_b, count(*) AS items, avg(CASE WHEN sa = sb THEN 1.0 ELSE 0.0 END) AS agreement,
           avg(abs(sa - sb)) AS mean_abs_difference
    FROM pairs GROUP BY ALL
), marginals AS (
    SELECT judge_a, judge_b, s, sum(na) / max(total) * (sum(nb) / max(total)) AS pe_part
    FROM (
        SELECT judge_a, judge_b, sa AS s, 1 AS na, 0 AS nb, count(*) OVER (PARTITION BY judge_a, judge_b) AS total FROM pairs
        UNION ALL
        SELECT judge_a, judge_b, sb AS s, 0 AS na, 1 AS nb, count(*) OVER (PARTITION BY judge_a, judge_b) AS total FROM pairs
    ) GROUP BY judge_a, judge_b, s
)
SELECT o.judge_a, o.judge_b, o.items, o.agreement, o.mean_abs_difference,
       (o.agreement - sum(m.pe_part)) / nullif(1 - sum(m.pe_part), 0) AS cohen_kappa
FROM observed o JOIN marginals m USING (judge_a, judge_b)
GROUP BY o.judge_a, o.judge_b, o.items, o.agreement, o.mean_abs_difference
ORDER BY o.judge_a, o.judge_b;
