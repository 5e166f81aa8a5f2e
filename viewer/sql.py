"""Every SQL statement the viewer runs against the warehouse, in one place (the pages in
``viewer/app.py`` name them; the search index has its own in ``viewer/search.py``). All take their
values as parameters; none is built from what a request carries."""

POSITION = "SELECT coalesce(max(last_position), 0) AS p FROM sync_state"
# The search filters' choices (one pass over the episodes view, read when the warehouse moves on).
FILTER_CHOICES = """
SELECT list(DISTINCT agent ORDER BY agent) AS agent, list(DISTINCT tree_id ORDER BY tree_id) AS tree_id,
       list(DISTINCT randomness::VARCHAR ORDER BY randomness::VARCHAR) AS randomness,
       list(DISTINCT status ORDER BY status) AS status
FROM episodes
"""
# The compare page's agents: every agent, as `inquitree compare` names them (it pairs one-off episodes too).
ALL_AGENTS = "SELECT list(DISTINCT agent ORDER BY agent) AS agent FROM all_episodes"
FILTER_CHOICES_JUDGES = "SELECT list(DISTINCT judge_id ORDER BY judge_id) AS judge FROM ev_episode_scored"
# The episode list (home page): sorted by one of its columns and filtered by agent, tree, level,
# judge and status, a page at a time. The sort column and direction pick one of these fixed
# statements (LIST_SORTS); the filters and the offset are parameters.
LIST_PAGE = 100
LIST_SORTS = {
    "episode": "e.episode_id",
    "tree": "e.tree_id",
    "agent": "e.agent",
    "a": "e.randomness",
    "judge": "s.judge_id",
    "status": "e.status",
    "ended": "e.ended_by",
    "steps": "e.steps",
    "coverage": "e.coverage",
    "score": "s.q_norm",
    "started": "e.started_at",
}
# The score an episode was given last by a judge that gave one, and by which judge; where a later
# judge gave none (every verdict failed), that judge too (``failed_judge``): a judge that failed on
# every episode hid the scores another had given ("no score" down the whole first screen).
_LAST_SCORE = """
WITH s AS (
    SELECT episode_id,
           coalesce(arg_max(judge_id, global_position) FILTER (WHERE q_norm IS NOT NULL),
                    arg_max_null(judge_id, global_position)) AS judge_id,
           arg_max(q_norm, global_position) FILTER (WHERE q_norm IS NOT NULL) AS q_norm,
           CASE WHEN arg_max_null(q_norm, global_position) IS NULL AND count(q_norm) > 0
                THEN arg_max_null(judge_id, global_position) END AS failed_judge
    FROM ev_episode_scored GROUP BY ALL
)
"""
_LIST = (
    _LAST_SCORE
    + """
SELECT e.episode_id, e.tree_id, e.agent, e.randomness, s.judge_id, e.status, e.ended_by, e.steps, e.coverage,
       s.q_norm, s.failed_judge, e.started_at, count(*) OVER () AS matching
FROM episodes e LEFT JOIN s USING (episode_id)
WHERE ($1 IS NULL OR e.agent = $1) AND ($2 IS NULL OR e.tree_id = $2) AND ($3 IS NULL OR e.randomness::VARCHAR = $3)
  AND ($4 IS NULL OR s.judge_id = $4) AND ($5 IS NULL OR e.status = $5)
ORDER BY {column} {direction} NULLS LAST, e.episode_id
LIMIT {page} OFFSET $6
"""
)
EPISODE_LIST = {
    (key, direction): _LIST.format(column=column, direction=direction, page=LIST_PAGE)
    for key, column in LIST_SORTS.items()
    for direction in ("ASC", "DESC")
}
# The coverage and last score of a campaign's cells (the suite page's list: its cells come from
# the live fold, pending ones too; these columns from the warehouse, joined on the ids given).
CELL_SCORES = (
    _LAST_SCORE
    + """
SELECT e.episode_id, e.coverage, s.judge_id, s.q_norm
FROM (SELECT unnest($1::VARCHAR[]) AS episode_id) i JOIN episodes e USING (episode_id) LEFT JOIN s USING (episode_id)
"""
)
# An episode's own page shows it whatever the pages' scope (a link from search or `play` works).
EPISODE = "SELECT * FROM all_episodes WHERE episode_id = ?"
EPISODE_OF_TREE = "SELECT * FROM all_episodes WHERE episode_id = ? AND tree_id = ?"
EPISODE_SCORES = "SELECT * FROM episode_scores WHERE episode_id = ?"
TEMPLATE_SET = "SELECT template_set FROM ev_episode_started WHERE episode_id = ?"
TREE_HASH = "SELECT tree_hash FROM ev_episode_started WHERE episode_id = ?"
TREE_EPISODES = """
SELECT episode_id, agent, randomness, status, coverage FROM episodes WHERE tree_id = ?
ORDER BY started_at DESC LIMIT 50
"""
EPISODES_PER_TREE = "SELECT tree_id, count(*) AS n FROM episodes GROUP BY ALL"

# What an episode did on its tree (``treeview.episode_path``).
PATH = {
    "transitions": "SELECT step, to_state, node FROM ev_transitioned WHERE episode_id = ? ORDER BY global_position",
    "hints": "SELECT target, level FROM ev_hint_issued WHERE episode_id = ? ORDER BY global_position",
    "locked": "SELECT subtopic_id FROM ev_dependency_blocked WHERE episode_id = ?",
    "draws": "SELECT study_id, fake FROM ev_result_drawn WHERE episode_id = ? ORDER BY global_position",
}
VERDICTS = """
SELECT item_id, judge_id, score, error, rationale FROM ev_judge_verdict WHERE episode_id = ? ORDER BY global_position
"""
# The pairs of finished episodes of two agents, by the one definition of a pair (the warehouse's
# pair_keys view, which `inquitree compare` uses too), each with the subtopics it reached by its own
# moves (a forced transition after the last hint reaches every subtopic for an agent that never
# moves well: "only B reached" named them all for a constant agent).
CELLS = """
WITH reached AS (
    SELECT episode_id, list(DISTINCT node ORDER BY node) AS subtopics FROM ev_transitioned
    WHERE to_state = 'subtopic' AND NOT coalesce(forced, false) GROUP BY ALL
), cell AS (
    SELECT k.agent, k.pair_suite, k.pair_run, k.tree_id, k.randomness, k.seed, k.episode_id, k.status, k.coverage,
           k.own_coverage, coalesce(r.subtopics, []) AS subtopics
    FROM pair_keys k LEFT JOIN reached r USING (episode_id)
    WHERE k.agent IN ($1, $2) AND k.status = 'done' AND (k.in_suite OR $3)
)
SELECT x.pair_suite AS suite, x.tree_id, x.randomness, x.pair_run AS run, x.episode_id AS a_episode,
       y.episode_id AS b_episode, x.status AS a_status, y.status AS b_status, x.coverage AS a_coverage,
       y.coverage AS b_coverage, x.own_coverage AS a_own, y.own_coverage AS b_own,
       list_filter(x.subtopics, lambda s: NOT list_contains(y.subtopics, s)) AS only_a,
       list_filter(y.subtopics, lambda s: NOT list_contains(x.subtopics, s)) AS only_b
FROM cell x JOIN cell y USING (pair_suite, tree_id, randomness, pair_run)
WHERE x.agent = $1 AND y.agent = $2
ORDER BY x.tree_id, x.randomness, x.pair_suite, x.pair_run
"""
# An episode's turns with where each left the engine: the state answered, the candidate matched.
TURNS = """
SELECT r.step, r.state, r.action, r.raw, m.best, m.accepted, m.best_cosine, m.tau
FROM ev_agent_replied r LEFT JOIN ev_match_scored m USING (episode_id, step)
WHERE r.episode_id = ? ORDER BY r.step
"""
