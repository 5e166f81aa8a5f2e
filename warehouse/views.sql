-- Staging views over the typed tables: one place per derived quantity. The analyses in
-- queries/*.sql read these. Equation numbers refer to the InquiTree paper; #N to
-- docs/DECISIONS.md.

-- One row per episode: its parameters, its state, and the per-episode quantities. Computed from the
-- events when a sync commits, for the episodes it touched, and kept in episode_facts (schema.py), so
-- that an analysis reads one row per episode instead of aggregating every event of the store.
-- episode_facts_of(since, everything): every episode (everything), or those in touched_episodes;
-- since: a global position at or before the first event of each of them, so that a sync reads
-- the row groups of its new events alone.
CREATE OR REPLACE MACRO episode_facts_of(since, everything) AS TABLE
WITH wanted AS (         -- the episodes asked for (see above), by their starts
    SELECT episode_id FROM ev_episode_started
    WHERE global_position >= since AND (everything OR episode_id IN (SELECT episode_id FROM touched_episodes))
), steps AS (
    SELECT episode_id, max(step) AS steps
    FROM ev_agent_replied SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since AND state <> 'conclusion' GROUP BY ALL
), visited AS (            -- V^sub (Eq. 7, #9): a subtopic counts once its Subtopic state is entered
    SELECT episode_id, count(DISTINCT node) AS visited
    FROM ev_transitioned SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since AND to_state = 'subtopic' GROUP BY ALL
), own AS (                -- the subtopics the agent reached by its own recognised move, not by a forced
    SELECT episode_id, count(DISTINCT node) AS own_visited  -- transition after the last hint (#5, #32)
    FROM ev_transitioned SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since AND to_state = 'subtopic' AND NOT coalesce(forced, false) GROUP BY ALL
), hints AS (
    SELECT episode_id, count(*) AS hints_issued
    FROM ev_hint_issued SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since GROUP BY ALL
), forced AS (
    SELECT episode_id, count(*) AS forced_transitions
    FROM ev_transitioned SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since AND forced GROUP BY ALL
), draws AS (
    SELECT episode_id, count(*) AS result_observations, count(*) FILTER (WHERE fake) AS fake_observations,
           count(*) FILTER (WHERE NOT fake) AS true_observations
    FROM ev_result_drawn SEMI JOIN wanted USING (episode_id) WHERE global_position >= since GROUP BY ALL
), redos AS (             -- the moves Appendix B's bounds leave out (steps_bounds says which an episode made)
    SELECT episode_id, count(*) FILTER (WHERE decision = 'redo_study') AS redo_decisions,
           count(*) FILTER (WHERE NOT valid) AS invalid_decisions
    FROM ev_decision_parsed SEMI JOIN wanted USING (episode_id) WHERE global_position >= since GROUP BY ALL
), entries AS (
    SELECT episode_id, count(*) AS subtopic_entries
    FROM ev_transitioned SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since AND to_state = 'subtopic' GROUP BY ALL
), failures AS (           -- the latest failure; a failure followed by EpisodeResumed is history
    SELECT episode_id, count(*) AS failures, arg_max_null(kind, global_position) AS last_failure_kind,
           max(global_position) AS last_failure
    FROM ev_episode_failed SEMI JOIN wanted USING (episode_id) WHERE global_position >= since GROUP BY ALL
), resumes AS (             -- after a failure, an interruption, or a change of settings
    SELECT episode_id, count(*) AS resumes, max(global_position) AS last_resume
    FROM ev_episode_resumed SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since GROUP BY ALL
), interruptions AS (
    SELECT episode_id, count(*) AS interruptions, max(global_position) AS last_interruption
    FROM ev_episode_interrupted SEMI JOIN wanted USING (episode_id) WHERE global_position >= since GROUP BY ALL
), endings AS (            -- how the inquiry ended: the agent concluded, or the engine asked it to, or a limit
    SELECT episode_id, arg_max_null(reason, global_position) AS reason
    FROM ev_transitioned SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since AND to_state = 'conclusion' GROUP BY ALL
), limits AS (
    SELECT episode_id, arg_min(limit_name, global_position) AS limit_name
    FROM ev_limit_reached SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since GROUP BY ALL
)
SELECT s.episode_id, s.tree_id, s.tree_hash, s.n_subtopics,
       coalesce(s.agent_label, s.agent_model, s.agent_kind) AS agent,   -- the label keeps runs of one model with different options apart
       s.agent_kind, s.agent_model, s.judge_kind, s.randomness, s.seed, s.tau, s.tau_study,
       -- how fake results are drawn (core/game/engine.py): 1, every tree of a run shares its draws
       -- (one seed), so at a > 0 its papers are not independent; 2, keyed by seed and tree
       coalesce(s.draw_rule, 1) AS draw_rule,
       s.match_rule || '-' || s.match_rule_version AS match_rule,   -- NULL: the paper's rule
       s.embedder,
       s.max_hints, s.max_turns,
       s.recorded_at AS started_at,
       CASE WHEN c.episode_id IS NOT NULL THEN 'done'
            WHEN fl.last_failure > coalesce(rs.last_resume, -1) THEN 'failed'
            WHEN it.last_interruption > coalesce(rs.last_resume, -1) THEN 'interrupted' ELSE 'running' END AS status,
       -- conclusion (the agent chose draw_conclusion), turn_limit (#3), reask_limit (docs/design.md),
       -- limit:<name> (a run limit, core/run/limits.py: no conclusion items), failed, interrupted, running
       CASE WHEN c.episode_id IS NULL THEN
                CASE WHEN fl.last_failure > coalesce(rs.last_resume, -1) THEN 'failed'
                     WHEN it.last_interruption > coalesce(rs.last_resume, -1) THEN 'interrupted' ELSE 'running' END
            WHEN li.limit_name IS NOT NULL THEN 'limit:' || li.limit_name
            WHEN en.reason = 'conclude' THEN 'conclusion'
            ELSE coalesce(en.reason, 'conclusion') END AS ended_by,
       fl.last_failure_kind,
       coalesce(st.steps, 0) AS steps,
       3 * s.n_subtopics AS lower_bound,                                   -- Eq. 11
       s.n_subtopics * (2 * s.max_hints + 3) AS upper_bound,               -- Eq. 12
       coalesce(st.steps, 0) BETWEEN 3 * s.n_subtopics AND s.n_subtopics * (2 * s.max_hints + 3) AS within_bounds,
       -- the bounds describe a whole inquiry (Appendix B): an episode that saw one subtopic of three
       -- lands between them only by the misses it added, so bound statistics count these alone
       coalesce(v.visited, 0) >= s.n_subtopics AS visited_all,
       coalesce(v.visited, 0) / s.n_subtopics AS coverage,                  -- Eq. 7
       coalesce(o.own_visited, 0) / s.n_subtopics AS own_coverage,          -- #32: by its own moves
       coalesce(h.hints_issued, 0) AS hints_issued, coalesce(fo.forced_transitions, 0) AS forced_transitions,
       coalesce(d.result_observations, 0) AS result_observations, coalesce(d.fake_observations, 0) AS fake_observations,
       coalesce(d.true_observations, 0) AS true_observations, coalesce(r.redo_decisions, 0) AS redo_decisions,
       coalesce(r.invalid_decisions, 0) AS invalid_decisions,
       coalesce(ent.subtopic_entries, 0) - coalesce(v.visited, 0) AS repeat_subtopic_visits,
       s.global_position AS first_position
FROM ev_episode_started s SEMI JOIN wanted USING (episode_id)
LEFT JOIN (SELECT episode_id FROM ev_conclusion_submitted WHERE global_position >= since) c USING (episode_id)
LEFT JOIN failures fl USING (episode_id)
LEFT JOIN resumes rs USING (episode_id)
LEFT JOIN interruptions it USING (episode_id)
LEFT JOIN endings en USING (episode_id)
LEFT JOIN limits li USING (episode_id)
LEFT JOIN steps st USING (episode_id)
LEFT JOIN visited v USING (episode_id)
LEFT JOIN own o USING (episode_id)
LEFT JOIN hints h USING (episode_id)
LEFT JOIN forced fo USING (episode_id)
LEFT JOIN draws d USING (episode_id)
LEFT JOIN redos r USING (episode_id)
LEFT JOIN entries ent USING (episode_id);

-- Every episode of the store with its tree's publication; the analyses read `episodes`, the ones
-- in the scope a command asked for (below).
CREATE OR REPLACE VIEW all_episodes_base AS
SELECT f.* EXCLUDE (first_position), t.published, t.published_from, t.published_to, t.provenance_kind
FROM episode_facts f
LEFT JOIN trees t ON t.tree_id = f.tree_id AND t.tree_hash = f.tree_hash;

-- Which campaign an episode belongs to. A campaign cell's id ends .a{level}.r{run} and starts with
-- its suite's name, which runs up to the tree's id (a name may hold dots itself: "qwen-1.5b"); an
-- episode played outside a suite (`play --record`, the inspect task) has in_suite false and suite ''.
-- Macros, so that counting the episodes of each campaign (Warehouse.scope) reads the episodes'
-- starts alone: through all_episodes it computed every episode's summary, a third of a 5M-event
-- store's memory.
CREATE OR REPLACE MACRO episode_in_suite(episode) AS regexp_matches(episode, '^[^.]+\..*\.a[0-9]+\.r[0-9]+$');
CREATE OR REPLACE MACRO episode_suite(episode, tree) AS
    CASE WHEN episode_in_suite(episode) AND strpos(episode, '.' || tree || '.') > 1
             THEN left(episode, strpos(episode, '.' || tree || '.') - 1)
         WHEN episode_in_suite(episode) THEN regexp_extract(episode, '^([^.]+)\.', 1)  -- a tree id that is not a slug
         ELSE '' END;
CREATE OR REPLACE VIEW all_episodes AS
SELECT *, episode_suite(episode_id, tree_id) AS suite
FROM (SELECT *, episode_in_suite(episode_id) AS in_suite FROM all_episodes_base);

-- The episodes an analysis speaks about (#28: campaigns and one-off episodes are kept apart). A
-- connection that sets no scope sees every episode (the viewer, `sql`); `query` and `report` set
-- `episode_scope` to 'suites' (with `scope_suites`, a list of names, or NULL for every campaign)
-- or 'one-off' (Warehouse.scope in warehouse/warehouse.py).
CREATE OR REPLACE VIEW episodes AS
SELECT * FROM all_episodes
WHERE getvariable('episode_scope') IS NULL
   OR (getvariable('episode_scope') = 'one-off' AND NOT in_suite)
   OR (getvariable('episode_scope') = 'suites' AND in_suite
       AND (getvariable('scope_suites') IS NULL OR list_contains(getvariable('scope_suites'), suite)));

-- Eq. 8 per episode and ground-truth item: p = |R_true ∩ V| / |R|, 1 when R is empty (#14).
-- A required result counts once at least one true (not fake) observation of it happened.
-- The episode's tree comes from its EpisodeStarted, not the episodes view (one row per episode
-- either way): a query joining episodes to episode_scores computed that view twice, and
-- `compare` at 1M events needed more than the default memory limit for it.
CREATE OR REPLACE MACRO episode_evidence_of(since, everything) AS TABLE
WITH wanted AS (
    SELECT episode_id FROM ev_episode_started
    WHERE global_position >= since AND (everything OR episode_id IN (SELECT episode_id FROM touched_episodes))
), true_seen AS (
    SELECT DISTINCT episode_id, result_id FROM ev_result_drawn SEMI JOIN wanted USING (episode_id)
    WHERE global_position >= since AND NOT fake
)
SELECT e.episode_id, i.item_id, i.n_required,
       CASE WHEN i.n_required = 0 THEN 1.0
            ELSE count(ts.result_id) / i.n_required END AS p
FROM ev_episode_started e SEMI JOIN wanted USING (episode_id)
JOIN tree_items i ON i.tree_id = e.tree_id AND i.tree_hash = e.tree_hash
LEFT JOIN tree_item_results r ON r.tree_id = i.tree_id AND r.tree_hash = i.tree_hash AND r.item_id = i.item_id
LEFT JOIN true_seen ts ON ts.episode_id = e.episode_id AND ts.result_id = r.result_id
GROUP BY e.episode_id, i.item_id, i.n_required;

-- Kept in episode_evidence at each sync, as episode_facts is (rewritten whole when the trees change).
CREATE OR REPLACE VIEW episode_item_evidence AS SELECT * FROM episode_evidence;

-- S(c_i) per judge: the latest verdict for each (episode, judge, item); re-judging appends (#16).
-- arg_max_null: when the latest verdict failed (no score), it is still the latest (arg_max would
-- skip its NULL and return the verdict before it).
CREATE OR REPLACE VIEW latest_verdicts AS
SELECT episode_id, judge_id, item_id, arg_max_null(score, global_position) AS score,
       arg_max_null(error, global_position) AS error, arg_max_null(rationale, global_position) AS rationale,
       max(recorded_at) AS judged_at
FROM ev_judge_verdict GROUP BY episode_id, judge_id, item_id;

-- A person's reading of a conclusion item (inquitree label conclusions), on the judge's scale: stated
-- 1, partial 0.6, absent 0 (LABEL_VALUE of core/instrument/labels.py; tests/test_labels.py keeps
-- them equal). Each labeller's last answer counts; a skip is no answer; two labellers' values are
-- averaged, and ``labellers`` says how many read the item.
CREATE OR REPLACE VIEW conclusion_labels AS
WITH last AS (
    SELECT labelled_stream[9:] AS episode_id, item_id, labeller, arg_max(answer, global_position) AS answer
    FROM ev_label_recorded WHERE kind = 'conclusion' AND starts_with(labelled_stream, 'episode/') GROUP BY ALL
)
SELECT episode_id, item_id,
       avg(CASE answer WHEN 'stated' THEN 1.0 WHEN 'partial' THEN 0.6 WHEN 'absent' THEN 0.0 END) AS value,
       count(*) AS labellers
FROM last WHERE answer IN ('stated', 'partial', 'absent') GROUP BY ALL;

-- A person's reading of a matched move (inquitree label moves) beside the engine's decision: the
-- labelled reply's step, and the match the engine scored for it (the first MatchScored after the
-- reply in its step). misread: a wrong candidate accepted, a move that meant none accepted, or an
-- intended move not accepted. Each labeller's last answer counts; a skip is no answer.
CREATE OR REPLACE VIEW move_labels AS
WITH last AS (
    SELECT labelled_stream[9:] AS episode_id, labelled_version, labeller,
           arg_max(answer, global_position) AS answer
    FROM ev_label_recorded WHERE kind = 'move' AND starts_with(labelled_stream, 'episode/') GROUP BY ALL
), matched AS (
    SELECT l.episode_id, l.labelled_version, l.labeller, l.answer, m.state, m.best, m.accepted,
           row_number() OVER (PARTITION BY l.episode_id, l.labelled_version, l.labeller
                              ORDER BY m.stream_version) AS nth
    FROM last l
    JOIN ev_agent_replied a ON a.episode_id = l.episode_id AND a.stream_version = l.labelled_version
    JOIN ev_match_scored m ON m.episode_id = l.episode_id AND m.step = a.step AND m.stream_version > a.stream_version
    WHERE l.answer <> 'skip'
)
SELECT episode_id, labelled_version, labeller, answer, state, best, accepted,
       CASE WHEN answer = 'none' THEN accepted ELSE NOT (accepted AND best = answer) END AS misread
FROM matched WHERE nth = 1;

-- Each judged item with its evidence-weighted verdict (predicted = p S(c_i), whose mean over an
-- episode's items is q_norm) and, where a person read it, its evidence-weighted reading (labelled):
-- what the corrected conclusion score (ppi_ci, ppi_diff_ci) combines. score and label_value are the
-- unweighted verdict and reading, for the judge's agreement with the readings.
CREATE OR REPLACE VIEW scored_items AS
SELECT ev.episode_id, v.judge_id, ev.item_id, ev.p * v.score AS predicted, ev.p * l.value AS labelled,
       v.score, l.value AS label_value, l.labellers
FROM episode_item_evidence ev
JOIN latest_verdicts v ON v.episode_id = ev.episode_id AND v.item_id = ev.item_id
LEFT JOIN conclusion_labels l ON l.episode_id = ev.episode_id AND l.item_id = ev.item_id;

-- Eq. 9: Q = sum_i p_i S(c_i), and q_norm = Q / k (#15). NULL when any item lacks a usable verdict;
-- failed_verdicts counts the items whose latest verdict is a judge error (its cause in the rationale).
CREATE OR REPLACE VIEW episode_scores AS
WITH judges AS (SELECT DISTINCT episode_id, judge_id FROM ev_judge_verdict)
SELECT j.episode_id, j.judge_id, count(*) AS k,
       CASE WHEN count(v.score) = count(*) THEN sum(ev.p * v.score) END AS q_sum,
       CASE WHEN count(v.score) = count(*) THEN sum(ev.p * v.score) / count(*) END AS q_norm,
       count(*) FILTER (WHERE v.error) AS failed_verdicts
FROM judges j
JOIN episode_item_evidence ev ON ev.episode_id = j.episode_id
LEFT JOIN latest_verdicts v ON v.episode_id = j.episode_id AND v.judge_id = j.judge_id AND v.item_id = ev.item_id
GROUP BY j.episode_id, j.judge_id;

-- Each Result observation with the agent's next parsed decision in that Result state (#19):
-- a fake is "spotted" when that decision is redo_study; none (turn limit) is not spotted.
CREATE OR REPLACE VIEW result_observations AS
SELECT d.episode_id, d.global_position, d.step, d.result_id, d.fake, d.redo, p.decision AS next_decision
FROM ev_result_drawn d
ASOF LEFT JOIN (SELECT episode_id, global_position, decision FROM ev_decision_parsed WHERE valid) p
    ON p.episode_id = d.episode_id AND p.global_position > d.global_position;

-- What pairs an episode with another agent's (docs/DECISIONS.md #26, the one definition that
-- `compare`, the viewer and the report use): the same suite, tree, randomness level and run,
-- and, where scores are paired, the same judge. An episode played outside a suite has suite ''
-- and its order among that agent's one-off episodes of the tree and level as its run, and is
-- paired only when a comparison asks for one-off episodes. Every column of episodes comes along,
-- so that a query reads an episode and its pair key from one computation of that view.
CREATE OR REPLACE VIEW pair_keys AS
SELECT *, suite AS pair_suite,
       CASE WHEN in_suite THEN TRY_CAST(regexp_extract(episode_id, '\.r([0-9]+)$', 1) AS INTEGER)
            ELSE row_number() OVER (PARTITION BY agent, in_suite, tree_id, randomness ORDER BY episode_id) - 1
       END AS pair_run
FROM episodes;

-- Every cell an analysis scores, under the failure rule (docs/DECISIONS.md #33): a campaign's cells
-- are, at each randomness level of each suite, the agents that played there x the trees played
-- there x the runs played there; a cell whose episode failed, was interrupted, is still running or
-- never started scores the metric's floor (0 coverage, own coverage and conclusion score), as agent
-- benchmarks count an unresolved task, so an agent is scored on every paper it was given.
-- complete_case() (`--complete-case`) keeps the finished episodes alone instead: kept says whether
-- the rule keeps a row, floored whether it is a floor. One row per cell and judge (the judges that
-- scored any episode of the cell's suite); analyses read `kept_cells`, and say from this view what
-- their agents' cells came to.
-- An episode played outside a suite is a cell of its own (no grid to miss a cell of).
CREATE OR REPLACE VIEW cell_scores AS
WITH played AS (
    SELECT agent, pair_suite AS suite, in_suite, tree_id, tree_hash, randomness, pair_run AS run, episode_id,
           status, coverage, own_coverage, embedder, tau, tau_study, match_rule, seed, draw_rule,
           steps, max_turns, redo_decisions, result_observations
    FROM pair_keys
), grid AS (
    SELECT a.suite, a.randomness, a.agent, t.tree_id, t.tree_hash, r.run
    FROM (SELECT DISTINCT suite, randomness, agent FROM played WHERE in_suite) a
    JOIN (SELECT suite, randomness, tree_id, min(tree_hash) AS tree_hash FROM played WHERE in_suite GROUP BY ALL) t
        USING (suite, randomness)
    JOIN (SELECT DISTINCT suite, randomness, run FROM played WHERE in_suite) r USING (suite, randomness)
), cells AS (
    SELECT p.* FROM played p
    UNION ALL BY NAME
    SELECT g.agent, g.suite, true AS in_suite, g.tree_id, g.tree_hash, g.randomness, g.run,
           NULL AS episode_id, 'never ran' AS status
    FROM grid g ANTI JOIN played p USING (suite, randomness, agent, tree_id, run)
), suite_judges AS (
    SELECT DISTINCT p.suite, s.judge_id FROM played p JOIN episode_scores s USING (episode_id)
)
SELECT c.agent, c.suite, c.in_suite, c.tree_id, c.tree_hash, c.randomness, c.run, c.episode_id, c.status,
       j.judge_id, c.status <> 'done' AND NOT complete_case() AS floored,
       c.status = 'done' OR NOT complete_case() AS kept,
       CASE WHEN c.status = 'done' THEN c.coverage ELSE 0.0 END AS coverage,
       CASE WHEN c.status = 'done' THEN c.own_coverage ELSE 0.0 END AS own_coverage,
       CASE WHEN c.status = 'done' THEN s.q_norm ELSE 0.0 END AS q_norm,
       coalesce(s.failed_verdicts, 0) AS failed_verdicts,
       c.embedder, c.tau, c.tau_study, c.match_rule, c.seed, c.draw_rule, c.max_turns,
       -- a floor has no steps or redo frequency: the cell did not finish
       CASE WHEN c.status = 'done' THEN c.steps END AS steps,
       CASE WHEN c.status = 'done' AND c.result_observations > 0 THEN c.redo_decisions / c.result_observations
       END AS redo_frequency, t.published_from, t.published_to,
       -- the order the interval functions read the cells in: an episode's id, or the cell's own
       coalesce(c.episode_id, c.suite || '.' || c.tree_id || '.a' || c.randomness || '.r' || c.run || '.never')
           AS cell_id
FROM cells c
JOIN suite_judges j ON j.suite = c.suite
LEFT JOIN episode_scores s ON s.episode_id = c.episode_id AND s.judge_id = j.judge_id
LEFT JOIN trees t ON t.tree_id = c.tree_id AND t.tree_hash = c.tree_hash
WHERE s.episode_id IS NOT NULL OR c.status <> 'done';

CREATE OR REPLACE VIEW kept_cells AS SELECT * FROM cell_scores WHERE kept;

CREATE OR REPLACE MACRO cells_of(statuses, trees, what) AS
    CASE WHEN list_contains(statuses, what) THEN
        len(list_filter(statuses, lambda s: s = what)) || ' ' || what || ' ('
        || array_to_string(list_sort(list_distinct(list_filter(trees, lambda t, i: statuses[i] = what)))[:4], ', ')
        || CASE WHEN len(list_distinct(list_filter(trees, lambda t, i: statuses[i] = what))) > 4
                THEN ', ...' ELSE '' END || ')'
    END;

-- What an agent's cells came to, in one phrase for a row ("16 cells: 11 finished, 4 failed (p3,
-- p7), 1 never ran (p9)"): `statuses` and `trees` are a group's cells, one entry each.
CREATE OR REPLACE MACRO cells_said(statuses, trees) AS
    len(statuses) || ' cells: ' || concat_ws(', ',
        len(list_filter(statuses, lambda s: s = 'done')) || ' finished',
        cells_of(statuses, trees, 'failed'), cells_of(statuses, trees, 'interrupted'),
        cells_of(statuses, trees, 'running'), cells_of(statuses, trees, 'never ran'));

-- The row's word on its unfinished cells (`cells`, from cells_said; `unfinished`, how many), and,
-- where the row shows a corrected conclusion score (`corrected`), that it reads finished episodes alone.
CREATE OR REPLACE MACRO unfinished_said(cells, unfinished, corrected) AS
    concat_ws('; ',
        CASE WHEN unfinished > 0 AND complete_case()
             THEN format('complete cases only (--complete-case): of {}, the {} not finished are left out', cells,
                         unfinished)
             WHEN unfinished > 0
             THEN format('{}; {} not finished, each scored 0 in coverage, own coverage and the conclusion score (the '
                         'failure rule, docs/DECISIONS.md #33; `inquitree suite run` plays them, --complete-case '
                         'leaves them out)', cells, unfinished)
        END,
        CASE WHEN unfinished > 0 AND corrected AND NOT complete_case()
             THEN 'corrected conclusion score: over the finished episodes alone (the failure rule does not reach it)'
        END);

-- What each agent's cells came to at each level and under each judge, kept by the failure rule or not:
-- the leaderboard's and fig3a's `cells` and their word on the unfinished ones.
CREATE OR REPLACE VIEW agent_cells AS
SELECT agent, judge_id, randomness, count(*) FILTER (WHERE status <> 'done') AS unfinished,
       cells_said(list(status ORDER BY cell_id), list(tree_id ORDER BY cell_id)) AS cells
FROM cell_scores GROUP BY agent, judge_id, randomness;

-- A row's word on the runs' independence: `test`, run_effect(trees, runs, values) (stats.run_effect).
-- With two or more runs the row gives the interval over runs as well as papers like these
-- (stats.runs_interval): a shock every paper of one run shares (one day of an API) moves the mean,
-- the interval over papers cannot see it, and the test sees it only through how the runs differ.
-- Where the test finds that the runs differ, the row says so first.
CREATE OR REPLACE MACRO run_effect_said(test) AS
    CASE WHEN test.p <= 0.05 THEN
        format('the {} runs differ beyond what the {} papers allow (run effect p {:.3g}: a shock shared by one '
               'run''s papers, such as one day of an API or one seed reused across trees): the interval takes '
               'the papers as independent and is too narrow; over runs as well as papers like these it is '
               '[{:.2f}, {:.2f}] (docs/statistics.md)', test.runs, test.papers, test.p, test.low, test.high)
         WHEN test.runs >= 2 THEN
        format('the interval is for papers like these played in these {} runs; over runs like these as well (a '
               'shock every paper of a run shares, such as one day of an API, counted) it is [{:.2f}, {:.2f}] on '
               'the {} papers with every run (docs/statistics.md)', test.runs, test.low, test.high, test.papers)
    END;

-- A row's word on seeds: episodes of one paper that share a seed (suites pooled with the same
-- seeds) draw the same fakes and make a seeded agent's same choices, so they are one draw counted
-- twice, not two runs. `trees` and `seeds`: the row's episodes'.
CREATE OR REPLACE MACRO shared_seeds_said(trees, seeds) AS
    CASE WHEN len(list_distinct(list_zip(trees, seeds))) < len(trees) THEN
        format('{} of {} episodes repeat the seed of another episode of the same paper (suites pooled with the '
               'same seeds): they draw the same fakes and make a seeded agent''s same choices, so the runs of '
               'those papers are not independent', len(trees) - len(list_distinct(list_zip(trees, seeds))),
               len(trees))
    END;

-- A row's word on independence at randomness a > 0: episodes drawn under draw rule 1 share their fake
-- draws across the trees of a run (one seed), so the papers such a row pools are not independent.
-- `draws`: the rows' draw rules; `seeds`: their seeds; `randomness`: the row's level.
CREATE OR REPLACE MACRO shared_draws_said(randomness, draws, seeds) AS
    CASE WHEN randomness > 0 AND list_contains(draws, 1) AND len(list_distinct(seeds)) < len(seeds) THEN
        format('{} of {} episodes were drawn under draw rule 1, which gives every tree of a run the same fake '
               'draws: its papers are not independent and the interval assumes they are (episodes recorded '
               'since draw rule 2 key each draw by seed and tree)',
               len(list_filter(draws, lambda d: d = 1)), len(draws))
    END;
