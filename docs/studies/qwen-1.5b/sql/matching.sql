-- Every free-text action matched against its candidates (Eq. 2-4), by state: how many replies,
-- how many were accepted (cosine at or above tau), the mean best cosine of each outcome, and how
-- many ended with the agent moved on by force after the final hint.
SELECT m.state,
       count(*) AS replies,
       sum(m.accepted::INT) AS accepted,
       round(avg(CASE WHEN m.accepted THEN m.best_cosine END), 3) AS mean_cosine_accepted,
       round(avg(CASE WHEN NOT m.accepted THEN m.best_cosine END), 3) AS mean_cosine_missed,
       max(m.tau) AS tau,
       (SELECT count(*) FROM ev_transitioned t WHERE t.forced AND t.from_state = m.state) AS forced
FROM ev_match_scored m
GROUP BY ALL ORDER BY m.state DESC
