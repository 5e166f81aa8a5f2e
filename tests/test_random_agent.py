"""Appendix B's random agent: uniform over the options each state offers, and the variant that
visits every subtopic before it may conclude, measured against [3n, n(2H+3)]."""

from __future__ import annotations

from inquitree.core.game.engine import RESULT, SUBTOPIC, TOPIC
from inquitree.core.game.tree import resolve_tree
from inquitree.events.types import AgentReplied, Transitioned

from enginekit import RandomAgent, play

DECISIONS = {"redo_study", "explore_new_subtopic", "draw_conclusion"}


def _actions(out):
    """(state, action, subtopic the episode is in) for each reply."""
    current, seen = None, []
    for ev in out.events:
        if isinstance(ev, Transitioned) and ev.to_state == SUBTOPIC:
            current = ev.node
        elif isinstance(ev, AgentReplied):
            seen.append((ev.state, ev.action, current))
    return seen


def test_each_choice_is_one_of_the_states_options():
    tree = resolve_tree("synthetic-diamond-4")
    subtopic_texts = {s.text for s in tree.subtopics}
    counts: dict[str, int] = {}
    for seed in range(6):
        for state, action, current in _actions(play(tree, RandomAgent(tree, seed), seed=seed, max_turns=400)):
            if state == TOPIC:
                assert action in subtopic_texts
            elif state == SUBTOPIC:  # only the studies of the subtopic it is in
                assert action in {st.text for st in tree.subtopic[current].studies}
            elif state == RESULT:
                assert action in DECISIONS
                counts[action] = counts.get(action, 0) + 1
    assert set(counts) == DECISIONS  # all three decisions occur


def test_visit_all_variant_covers_every_subtopic_and_stays_at_or_above_3n():
    for tree_id in ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7"):
        tree = resolve_tree(tree_id)
        lower, _ = tree.bounds(4)
        for seed in range(8):
            out = play(tree, RandomAgent(tree, seed, visit_all=True), seed=seed, max_turns=5000)
            assert set(out.state.visits) == {s.id for s in tree.subtopics}, (tree_id, seed)
            assert out.state.step >= lower
            decisions = [a for st, a, _ in _actions(out) if st == RESULT]
            assert decisions[-1] == "draw_conclusion" and "draw_conclusion" not in decisions[:-1]


def test_plain_random_can_conclude_early_and_the_warehouse_says_why(sqlite_url, tmp_path):
    from inquitree.events.store import EventStore
    from inquitree.warehouse.warehouse import Warehouse

    tree = resolve_tree("synthetic-chain-7")
    store = EventStore(sqlite_url)
    early = []
    for seed in range(6):
        out = play(tree, RandomAgent(tree, seed), store=store, seed=seed, max_turns=400)
        if out.state.step < 3 * tree.n:
            early.append((len(out.state.visits), out.state.step))
    store.close()
    assert early, "some plain random episodes end below 3n"
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        row = wh.query("steps_bounds").to_dicts()[0]
    assert row["below_lower_bound"] == len(early)
    for visited, _ in early:
        assert f"concluded after visiting {visited} of 7 subtopics" in row["below_lower_bound_why"]


def test_steps_bounds_counts_cut_off_episodes_apart_and_says_why_an_episode_is_above(sqlite_url, tmp_path):
    """The bounds describe an inquiry the agent concludes: an episode the turn limit cut off used to
    count as within them (22 of 42 random-all episodes). Above n(2H+3) (21 of 30 random-all episodes
    with the limit lifted) the query names the moves Appendix B leaves out."""
    from inquitree.events.store import EventStore
    from inquitree.warehouse.warehouse import Warehouse

    tree = resolve_tree("synthetic-chain-7")
    lower, upper = tree.bounds(4)
    store = EventStore(sqlite_url)
    concluded, cut = [], 0
    for seed in range(8):
        limit = 30 if seed < 3 else 5000  # three cut off by a tight turn limit, five run to their end
        out = play(tree, RandomAgent(tree, seed, visit_all=True), store=store, seed=seed, max_turns=limit)
        if out.state.step >= limit:
            cut += 1
        else:
            concluded.append(out)
    diamond = resolve_tree("synthetic-diamond-4")  # every episode of a row cut off: no steps, and why
    play(diamond, RandomAgent(diamond, 0, visit_all=True), store=store, seed=0, max_turns=3)
    store.close()
    assert cut == 3 and concluded
    above = [o for o in concluded if o.state.step > upper]
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        row, none = wh.query("steps_bounds").to_dicts()
        per_episode = wh.sql(
            "SELECT steps, redo_decisions, invalid_decisions, repeat_subtopic_visits FROM episodes "
            "WHERE ended_by = 'conclusion' AND steps > upper_bound ORDER BY steps"
        ).to_dicts()
    assert (row["episodes"], row["concluded"], row["cut_off"], row["cut_off_by"]) == (8, 5, 3, "turn_limit")
    # said under the table, where an 80-column screen drops the cut_off columns
    assert row["cut_off_warning"] == "3 of 8 episodes were cut off (turn_limit) and are left out of the steps"
    assert none["mean_steps"] is None and none["cut_off_warning"].startswith("its one episode was cut off (turn_limit)")
    within = sum(lower <= o.state.step <= upper for o in concluded)
    assert row["share_within_bounds"] == within / len(concluded)
    assert row["min_steps"] == min(o.state.step for o in concluded)
    assert row["above_upper_bound"] == len(above) == len(per_episode)
    assert above, "a visit-all random agent without a turn limit goes above n(2H+3)"
    for ep in per_episode:
        assert ep["redo_decisions"] + ep["invalid_decisions"] + ep["repeat_subtopic_visits"] > 0
        if ep["redo_decisions"]:
            assert f"{ep['redo_decisions']} redo decisions" in row["above_upper_bound_why"]


def test_one_seed_makes_independent_choices_on_different_papers():
    """Rule 1 keyed each draw by seed and turn only: with one seed the agent made the same
    choices on every tree (seeds 0 and 1 concluded at the first result on all four trees below),
    so a campaign's random cells repeated one sample. Rule 2 keys by tree too."""
    trees = [
        resolve_tree(t)
        for t in (
            "it18-01-grid-cells-reference-frames",
            "it18-02-spatio-predictive-maps",
            "it18-03-composition-and-replay",
            "it18-04-reward-relative-code",
        )
    ]

    def decisions(rule: int, seed: int) -> list[tuple[str, ...]]:
        return [
            tuple(
                a
                for s, a, _ in _actions(play(t, RandomAgent(t, seed, rule=rule), seed=seed, max_turns=400))
                if s == RESULT
            )
            for t in trees
        ]

    for seed in (0, 1):
        assert len(set(decisions(1, seed))) == 1  # the flaw, kept for episodes recorded by it
        assert len(set(decisions(2, seed))) > 1
    assert RandomAgent(trees[0], 3).description == {"kind": "random", "seed": 3, "rule": 2}
    assert RandomAgent(trees[0], 3, rule=1).description == {"kind": "random", "seed": 3}
