"""Re-judging finished episodes, and the decontextualized control."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inquitree.boundary.errors import InquiTreeError
from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.core.players.agents import ModelConfig
from inquitree.core.players.embed import HashEmbedder
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.run.rejudge import RejudgeError, control_items, judge_episode, parse_validity, run_control
from inquitree.core.run.replay import resimulate
from inquitree.core.run.runner import stream_id
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse

from enginekit import OracleAgent, RandomAgent, play
from openai_server import OpenAICompatibleServer


def test_rejudging_appends_and_overwrites_nothing(sqlite_url):
    tree = resolve_tree("synthetic-diamond-4")
    store = EventStore(sqlite_url)
    out = play(tree, RandomAgent(tree, 4), store=store, seed=4)
    eid = out.episode_id
    first = [r.event for r in store.read_stream(stream_id(eid))]
    strict = EmbeddingJudge(HashEmbedder(), full=0.95, partial=0.9)
    assert len(judge_episode(store, eid, strict)) == len(tree.conclusions)  # the verdicts added (and a score)
    assert judge_episode(store, eid, strict) == []  # already judged by it
    assert len(judge_episode(store, eid, strict, again=True)) == len(tree.conclusions)
    after = [r.event for r in store.read_stream(stream_id(eid))]
    assert after[: len(first)] == first  # the original verdicts and score are untouched
    scored = [e for e in after if e.TYPE == "EpisodeScored"]
    assert [s.judge_id for s in scored] == [out.scored.judge_id, strict.id, strict.id]
    assert resimulate(after).identical
    store.close()


def test_rejudging_an_unfinished_episode_is_refused(sqlite_url):
    tree = resolve_tree("synthetic-chain-7")
    store = EventStore(sqlite_url)
    from inquitree.core.game.engine import Engine

    from enginekit import TEMPLATES, params

    engine = Engine(tree, params(tree, HashEmbedder()), TEMPLATES)
    store.append(stream_id("half"), engine.start("half", {"kind": "x"}, {}, "t"), 0)
    with pytest.raises(RejudgeError, match="episode half has no conclusion yet"):
        judge_episode(store, "half", EmbeddingJudge(HashEmbedder()))
    store.close()


def test_llm_rejudge_over_http_and_the_agreement_query(sqlite_url, tmp_path):
    tree = resolve_tree("synthetic-diamond-4")
    store = EventStore(sqlite_url)
    for seed in range(3):
        play(tree, OracleAgent(tree), store=store, seed=seed)
    with OpenAICompatibleServer(lambda m: '{"score": 0.6, "rationale": "partly"}') as server:
        out = CliRunner().invoke(
            main, ["judge", "--all", "--judge", "openai:j", "--judge-base-url", server.base_url, "--db", sqlite_url]
        )
    assert out.exit_code == 0 and "3 episodes judged" in out.output
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        ja = wh.query("judge_agreement").to_dicts()
    assert (
        len(ja) == 1
        and ja[0]["items"] == 9
        and ja[0]["agreement"] == 0.0
        and abs(ja[0]["mean_abs_difference"] - 0.4) < 1e-9
    )
    store.close()


def test_control_set_is_balanced_and_seeded():
    trees = [resolve_tree("synthetic-diamond-4")]
    items = control_items(trees, 3)
    assert len(items) == 8 and sum(fake for _, _, fake, _, _ in items) == 4
    assert {rid for _, rid, fake, _, _ in items if fake} == {rid for _, rid, fake, _, _ in items if not fake}
    assert items == control_items(trees, 3) and items != control_items(trees, 4)
    assert parse_validity("**INVALID**") == "INVALID" and parse_validity("valid") == "VALID"
    assert (
        parse_validity('{"answer": "INVALID"}') == "INVALID"
        and parse_validity('```json\n{"answer": "VALID"}\n```') == "VALID"
    )
    # strict: nothing is inferred from a sentence (a case-insensitive search read the first as VALID)
    for reply in [
        "This result is not valid because the effect is reversed.",
        "It is INVALID.",
        "VALID or INVALID?",
        "unsure",
        '{"answer": "probably valid"}',
        '{"verdict": "VALID"}',
        "VALID. The data support it.",
    ]:
        assert parse_validity(reply) is None, reply


def test_control_over_http_resumes_and_feeds_fig3c(sqlite_url, tmp_path):
    trees = [resolve_tree("synthetic-diamond-4")]
    store = EventStore(sqlite_url)
    truth = {r.text for r in trees[0].result.values()}

    def model(messages):
        text = messages[-1]["content"].split("reported the following result:\n")[1].split("\n\nIs this")[0]
        assert len(messages) == 2  # each item alone
        return "VALID" if text in truth else '{"answer": "INVALID"}'

    with OpenAICompatibleServer(model) as server:
        server.fail_after = (3, 400)  # dies after three answers
        with pytest.raises(InquiTreeError, match="HTTP 400"):
            run_control(store, "openai:ctl", trees, 0, ModelConfig(server.base_url))
        server.fail_after = None
        sid, answered, total = run_control(store, "openai:ctl", trees, 0, ModelConfig(server.base_url))
    assert (answered, total) == (5, 8)
    answers = [r.event for r in store.read_stream(sid)[1:]]
    assert len(answers) == 8 and all(a.correct for a in answers)
    play(trees[0], OracleAgent(trees[0]), store=store, randomness=5, seed=1)
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        rates = wh.query("control_accuracy").to_dicts()
    keys = ["agent", "items", "accuracy", "fake_detection_rate", "false_alarm_rate", "unparsed_share"]
    assert [{k: r[k] for k in keys} for r in rates] == [
        {
            "agent": "ctl",
            "items": 8,
            "accuracy": 1.0,
            "fake_detection_rate": 1.0,
            "false_alarm_rate": 0.0,
            "unparsed_share": 0.0,
        }
    ]
    store.close()


def test_costs_per_episode_campaign_and_model(sqlite_url, tmp_path):
    import json

    tree = resolve_tree("synthetic-chain-7")
    store = EventStore(sqlite_url)
    with OpenAICompatibleServer(
        lambda m: "ACTION: (1) x" if "numbered" in m[-1]["content"] else "ACTION: hmm"
    ) as server:
        from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent
        from inquitree.core.run.runner import run_episode
        from inquitree.core.run.setup import Recording

        from enginekit import TEMPLATES, params, setup

        for i in range(2):
            agent = OpenAIChatAgent("priced-model", TEMPLATES.system_prompt, ModelConfig(server.base_url))
            p = params(tree, HashEmbedder(), max_turns=3)
            run_episode(setup(HashEmbedder()), tree, p, agent, None, Recording(store, f"camp.e{i}"))
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"prices": [{"model": "Priced-Model", "input_per_mtok": 2.0, "output_per_mtok": 10.0}]})
    )
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url, prices=prices)
        costs = wh.query("costs")
        tokens = wh.sql(
            "SELECT sum(input_tokens)::BIGINT AS i, sum(output_tokens)::BIGINT AS o FROM ev_agent_replied"
        ).to_dicts()[0]
    model_row = costs.filter(costs["level"] == "model").to_dicts()[0]
    assert model_row["calls"] == 8 and model_row["input_tokens"] == tokens["i"] and tokens["i"] > 0
    assert abs(model_row["cost_usd"] - (tokens["i"] * 2.0 + tokens["o"] * 10.0) / 1e6) < 1e-12
    assert costs.filter(costs["level"] == "campaign")["campaign"].to_list() == ["camp"]
    assert costs.filter(costs["level"] == "episode").height == 2
    store.close()


def test_an_unparsed_control_answer_is_an_error_counted_never_a_wrong_one(sqlite_url, tmp_path):
    """20 of 20 unparsed answers printed "accuracy 0.00" with unparsed_share cut at 80 columns: the
    answers that could not be read are left out of every rate, counted and said; none read, no rate."""
    from click.testing import CliRunner

    from inquitree.cli import main

    with OpenAICompatibleServer(lambda messages: "I am not sure, it could be either.") as server:
        out = CliRunner(env={"OPENAI_API_KEY": "x"}).invoke(
            main,
            [
                "control",
                "--agent",
                "openai:vague",
                "--tree",
                "synthetic-diamond-4",
                "--base-url",
                server.base_url,
                "--db",
                sqlite_url,
            ],
        )
    assert out.exit_code == 1 and "none of the 8 answers could be read" in out.output
    assert "accuracy 0" not in out.output
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        (row,) = wh.query("control_accuracy").to_dicts()
    assert row["accuracy"] is None and row["unparsed"] == row["items"] == 8
    assert "none of the 8 answers could be read" in row["interval_warning"]
