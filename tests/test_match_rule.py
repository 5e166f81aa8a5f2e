"""The fitted match rule (core/game/matching.py): chosen per episode, recorded whole, replayed
exactly, refused with a reason when it cannot apply, and the same rule studies/matching.py fitted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.boundary.errors import InquiTreeError
from inquitree.cli import main
from inquitree.core.game import matching
from inquitree.core.game.engine import EngineError, Params
from inquitree.core.game.tree import resolve_tree
from inquitree.core.players.embed import HashEmbedder, LocalEmbedder
from inquitree.core.run.spec import EpisodeSpec
from tests.enginekit import TEMPLATES

ROOT = Path(__file__).resolve().parent.parent
TREE = "it18-01-grid-cells-reference-frames"


def fitted_params() -> Params:
    return EpisodeSpec(match_rule="fitted").params(resolve_tree(TREE), LocalEmbedder.id, TEMPLATES, 0, 0)


def test_the_rule_is_recorded_only_when_chosen_and_old_episodes_replay_with_the_papers():
    paper = EpisodeSpec().params(resolve_tree(TREE), LocalEmbedder.id, TEMPLATES, 0, 0)
    assert paper.match_rule is None and "match_rule" not in paper.recorded()  # as every episode recorded it
    assert Params.from_dict(paper.recorded()).match_rule is None
    fitted = fitted_params()
    assert fitted.recorded()["match_rule"] == json.loads(matching.FITTED_RULES.read_text())[LocalEmbedder.id]
    assert Params.from_dict(fitted.recorded()) == fitted


def test_the_shipped_rule_is_the_one_the_study_fitted():
    """rules.json is what studies/matching.py fitted on the calibration trees (its committed result):
    the coefficients and probability thresholds a new episode records."""
    bench = json.loads((ROOT / "studies" / "results" / "matching.json").read_text())
    idea = next(i for i in bench["ideas"] if i["idea"].startswith("a logistic rule"))
    rule = matching.fitted_rule(LocalEmbedder.id)
    for state in ("topic", "subtopic"):
        fitted = idea[state]["rule"]
        assert rule[state] == {"coefficients": fitted["coefficients"], "threshold": fitted["threshold"]}
        assert fitted["features"] == list(matching.FEATURES) == rule["features"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"version": 2}, "version 2"),
        ({"features": ["best"]}, "match_rule.features"),
        ({"topic": {"coefficients": [1.0, 2.0], "threshold": 0.5}}, "match_rule.topic.coefficients"),
        ({"subtopic": {"coefficients": [0.0] * 6, "threshold": 1.5}}, "match_rule.subtopic.threshold 1.5"),
        ({"topic": {"coefficients": [float("nan")] * 6, "threshold": 0.5}}, "match_rule.topic.coefficients"),
    ],
)
def test_a_rule_this_version_cannot_apply_is_refused_naming_the_field(change, named):
    import dataclasses

    bad = dataclasses.replace(fitted_params(), match_rule={**matching.fitted_rule(LocalEmbedder.id), **change})
    with pytest.raises(EngineError, match=named.replace(".", r"\.")):
        bad.validate()


def test_an_embedder_without_a_fitted_rule_is_refused_before_anything_is_played(tmp_path):
    with pytest.raises(InquiTreeError, match="no rule is fitted for the embedder 'hash:"):
        EpisodeSpec(match_rule="fitted").params(resolve_tree(TREE), HashEmbedder.id, TEMPLATES, 0, 0)
    db = tmp_path / "s.sqlite"
    out = CliRunner().invoke(
        main, ["play", "--embedder", "hash", "--match-rule", "fitted", "--record", "--db", f"sqlite:///{db}"]
    )
    assert out.exit_code != 0 and "fitted for: local:all-MiniLM-L6-v2-int8" in out.output
    suite = tmp_path / "fitted.toml"
    suite.write_text(
        'name = "fitted"\ntrees = ["synthetic-chain-7"]\nagents = ["oracle"]\n'
        'embedder = "hash"\nmatch_rule = "fitted"\n'
    )
    out = CliRunner().invoke(main, ["suite", "run", str(suite), "--db", f"sqlite:///{db}"])
    assert out.exit_code != 0 and "no rule is fitted for the embedder" in out.output and str(suite) in out.output
    assert not db.exists()


def test_an_episode_under_the_fitted_rule_records_what_decided_and_replays_exactly(tmp_path):
    """Every match keeps the hints' cosines, the topic's and the rule's probability; a replay
    decides again from them, and the transcript says the rule decided, not tau."""
    db = f"sqlite:///{tmp_path / 's.sqlite'}"
    runner = CliRunner()
    out = runner.invoke(
        main,
        ["play", "--tree", TREE, "--agent", "random", "--match-rule", "fitted", "--record", "--db", db, "-q"],
    )
    assert out.exit_code == 0, out.output
    from inquitree.core.game.engine import MatchScored
    from inquitree.events.store import EventStore

    store = EventStore(db)
    (stream,) = [s.stream_id for s in store.streams() if s.stream_id.startswith("episode/")]
    events = [r.event for r in store.read_stream(stream)]
    started = events[0]
    assert started.params["match_rule"]["name"] == "fitted"
    matches = [e for e in events if isinstance(e, MatchScored) and e.best is not None]
    assert matches and all(m.rule is not None and len(m.candidates[0]["hints"]) == 4 for m in matches)
    topic = [m for m in matches if m.state == "topic"]
    assert topic and all("topic_cosine" in m.rule for m in topic)
    for m in matches:  # the recorded numbers decide as recorded
        order = [c["id"] for c in m.candidates]
        cos = matching.recorded_cosines(m.candidates, m.rule)
        again = matching.read_match(order, cos, m.state, m.tau, started.params["match_rule"])
        assert (again.best, again.accepted, again.rule) == (m.best, m.accepted, m.rule)
    episode = stream.removeprefix("episode/")
    replay = runner.invoke(main, ["replay", episode, "--db", db])
    assert replay.exit_code == 0 and "replay: identical" in replay.output, replay.output
    shown = runner.invoke(main, ["episodes", "show", episode, "--db", db])
    assert "fitted p " in shown.output and "vs tau" not in shown.output


def test_the_leaderboard_names_the_fitted_rule_and_its_measured_rates(tmp_path):
    db, wh = f"sqlite:///{tmp_path / 's.sqlite'}", str(tmp_path / "w.duckdb")
    suite = tmp_path / "fitted.toml"
    suite.write_text(
        'name = "fitted"\ntrees = ["it18-01-grid-cells-reference-frames", "it18-02-spatio-predictive-maps", '
        '"it18-03-composition-and-replay"]\nagents = ["oracle", "random"]\nmatch_rule = "fitted"\n'
    )
    runner = CliRunner()
    assert runner.invoke(main, ["suite", "run", str(suite), "--db", db]).exit_code == 0
    assert runner.invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    out = runner.invoke(main, ["query", "table2_leaderboard", "--warehouse", wh, "--suite", "fitted"])
    said = " ".join(out.output.split())
    assert (
        "matcher validity (every row): local:all-MiniLM-L6-v2-int8 at the fitted-1 match rule, on held-out trees: "
        "Topic recognised 60% [47, 74] 38/63, false 9% 8/94, wrong 2% 1/63; Subtopic "
        "recognised 100% 53/53, false 80% 4/5 (n < 20), wrong 0% 0/53" in said
    ), said


def test_instrument_measure_measures_the_fitted_rule(tmp_path):
    """`instrument measure --rule fitted` gives the matching study's held-out rates (it decides through the
    engine's reading) in 80 columns, and refuses thresholds the rule does not use."""
    runner = CliRunner()
    out = runner.invoke(main, ["instrument", "measure", "--embedder", "local", "--rule", "fitted", "--draws", "200"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "matcher: the fitted rule with local:all-MiniLM-L6-v2-int8"
    assert max(len(line) for line in lines) <= 80
    held = next(line for line in lines if line.startswith("topic    held-out"))
    # each rate with its counts: false of the 94 actions meaning none, not of all 157
    assert held.split()[2:] == ["60.3%", "38/63", "8.5%", "8/94", "1.6%", "1/63"]
    refused = runner.invoke(main, ["instrument", "measure", "--embedder", "local", "--rule", "fitted", "--tau", "0.5"])
    assert refused.exit_code == 2 and "own probability thresholds" in refused.output


def test_the_record_tables_state_for_the_fitted_rule_is_what_the_set_measures():
    """The shipped record's entry for the fitted rule (studies/instrument_record.py), which tables
    print as its validity, recomputed from the labelled actions to the last interval."""
    from inquitree.core.instrument import measure_matcher
    from inquitree.core.instrument.measured import SHIPPED
    from inquitree.core.players.kinds import make_embedder

    entry = next(m for m in json.loads(SHIPPED.read_text())["matchers"] if m["rule"] == "fitted-1")
    assert measure_matcher(make_embedder("local", cache=False), rule="fitted") == entry
    topic = entry["topic"]["held_out"]
    assert (topic["recognised"], topic["false_match"], topic["wrong_candidate"]) == (0.6032, 0.0851, 0.0159)
    assert (topic["counts"]["false_match"], topic["n_null"]) == (8, 94)


def test_first_step_topic_moves_under_each_rule_are_what_the_study_quotes():
    """docs/studies/qwen-1.5b.md: of the labelled set's 76 first-step Topic actions (70 name no
    subtopic), the paper's rule with MiniLM accepts 14.5% as a subtopic they did not mean, the
    fitted rule 1.3%."""
    from inquitree.core.instrument.matching import anchored, engine_cosines, fitted_rows, rates, read_labels
    from inquitree.core.players.kinds import make_embedder

    emb = make_embedder("local", cache=False)
    items = [it for it in read_labels() if it["state"] == "topic" and it.get("step") == 1]
    assert (len(items), sum(it["intended"] is None for it in items)) == (76, 70)
    rule = matching.fitted_rule(emb.id)
    fitted = rates(fitted_rows(items, engine_cosines(items, emb), rule), rule["topic"]["threshold"])
    paper = rates(anchored(items, emb, "text", "max"), 0.75, 0.42)
    assert (fitted["false_match"], paper["false_match"]) == (0.0132, 0.1447)
