"""The human agent in a terminal session, the OpenAI agent's retries, and the judges."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.calls.settings import CallSettings
from inquitree.core.game.tree import resolve_tree
from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent
from inquitree.core.players.embed import HashEmbedder
from inquitree.core.players.judges import EmbeddingJudge, OpenAIJudge, parse_verdict
from inquitree.core.run.runner import run_episode

from enginekit import TEMPLATES, params, setup
from openai_server import OpenAICompatibleServer


def test_human_plays_in_the_terminal_without_seeing_engine_notes():
    tree = resolve_tree("synthetic-diamond-4")
    lines = []
    for sid in tree.topological_order():
        sub = tree.subtopic[sid]
        lines += [
            f"ACTION: {sub.text}",
            "",
            f"ACTION: {sub.studies[0].text}",
            "",
            "ACTION: explore_new_subtopic" if sid != "s4" else "ACTION: draw_conclusion",
            "",
        ]
    lines += ["ACTION:", *[f"({i}) {c.text}" for i, c in enumerate(tree.conclusions, 1)], ""]
    out = CliRunner().invoke(
        main, ["play", "--tree", "synthetic-diamond-4", "--agent", "human"], input="\n".join(lines) + "\n"
    )
    assert out.exit_code == 0, out.output
    assert "steps 12 within [3n, n(2H+3)] = [12, 44]: yes" in out.output
    assert "coverage 1.000   Q 3.000 (q_norm 1.000, k=3)" in out.output
    assert "engine:" not in out.output  # no cosines, hint targets or fake draws for a human player


def test_openai_agent_retries_500_and_429_then_continues():
    tree = resolve_tree("synthetic-chain-7")
    with OpenAICompatibleServer(
        lambda m: "ACTION: (1) x" if "numbered" in m[-1]["content"] else "ACTION: hmm"
    ) as server:
        server.faults = [500, 429]
        agent = OpenAIChatAgent("m", TEMPLATES.system_prompt, ModelConfig(server.base_url, CallSettings(max_retries=3)))
        emb = HashEmbedder()
        out = run_episode(setup(emb), tree, params(tree, emb, max_turns=2), agent, None)
    assert out.state.step == 2 and len(server.requests) == 2 + 2 + 1  # 2 failures retried, 2 turns, conclusion
    assert out.state.conclusion_items == ["x"]


def test_openai_agent_drops_temperature_when_the_model_refuses_it():
    with OpenAICompatibleServer(lambda m: "ACTION: hmm") as server:
        server.faults = [400]
        server.fault_body = "temperature is not supported with this model"
        agent = OpenAIChatAgent("m", TEMPLATES.system_prompt, ModelConfig(server.base_url, CallSettings(max_retries=0)))
        reply = agent.reply("obs", "topic", 1)
    assert reply.text == "ACTION: hmm" and agent.chat.temperature is None
    assert "temperature" in server.requests[0]["body"] and "temperature" not in server.requests[1]["body"]


def test_embedding_judge_scores_by_best_cosine():
    tree = resolve_tree("synthetic-diamond-4")
    judge = EmbeddingJudge(HashEmbedder(), full=0.85, partial=0.5)
    verdicts = judge.judge(tree, [tree.conclusions[0].text, "Something unrelated about the stock market."])
    assert [v.score for v in verdicts][0] == 1.0
    assert all(v.judge_id == judge.id and v.prompt_version == "embedding-judge-v1" for v in verdicts)
    assert [v.score for v in judge.judge(tree, [])] == [0.0] * len(tree.conclusions)


@pytest.mark.parametrize(
    "spec, expected",
    [("embedding", (0.85, 0.7)), ("embedding:0.78/0.74", (0.78, 0.74)), ("embedding:0.8/0.8", (0.8, 0.8))],
)
def test_an_embedding_judge_takes_its_thresholds_from_the_spec(spec, expected):
    """`--judge embedding:FULL/PARTIAL` re-scores with thresholds chosen against a careful reading;
    the thresholds are in the judge's id, so its verdicts sit beside the default judge's."""
    from inquitree.core.players.kinds import make_kind as make

    judge = make("judge", spec, embedder=HashEmbedder())
    assert (judge.full, judge.partial) == expected
    assert judge.id.endswith(f":{expected[0]}/{expected[1]}")


@pytest.mark.parametrize(
    "spec",
    [
        "embedding:0.7/0.9",
        "embedding:0.8",
        "embedding:x/y",
        "embedding:nan/nan",
        "embedding:1.5/0.2",
        "embedding:0.5/0",
    ],
)
def test_an_embedding_judge_refuses_thresholds_out_of_order_or_range(spec):
    from inquitree.core.players.kinds import SpecError
    from inquitree.core.players.kinds import parse_spec as parse

    with pytest.raises(SpecError, match=r"embedding:FULL/PARTIAL with 0 < PARTIAL <= FULL <= 1"):
        parse("judge", spec)
    out = CliRunner().invoke(main, ["judge", "--all", "--judge", spec])
    assert out.exit_code != 0 and "0 < PARTIAL <= FULL <= 1" in out.output


def test_embedding_judge_embeds_a_trees_ground_truth_once_and_scores_as_the_full_matrix_does():
    """The ground-truth items' vectors are kept per tree (a campaign judges the same tree in every
    episode); each verdict is still the best cosine over the agent's items, computed directly here."""
    import numpy as np

    class Counting(HashEmbedder):
        def __init__(self):
            super().__init__()
            self.calls: list[list[str]] = []

        def embed(self, texts):
            self.calls.append(list(texts))
            return super().embed(texts)

    tree = resolve_tree("synthetic-diamond-4")
    emb = Counting()
    judge = EmbeddingJudge(emb, full=0.85, partial=0.5)
    episodes = [
        [tree.conclusions[0].text, "Something unrelated about the stock market."],
        [tree.conclusions[2].text[:40], tree.conclusions[1].text + " Probably."],
    ]
    for items in episodes:
        verdicts = judge.judge(tree, items)
        truths = HashEmbedder().embed([c.text for c in tree.conclusions])
        sims = truths @ HashEmbedder().embed(items).T
        for c, v, row in zip(tree.conclusions, verdicts, sims, strict=False):
            best = round(float(row.max()), 6)
            assert v.item_id == c.id
            assert v.score == (1.0 if best >= 0.85 else 0.6 if best >= 0.5 else 0.0)
            assert f"({int(np.argmax(row)) + 1}) has cosine {best:.3f}" in v.rationale
    assert emb.calls.count([c.text for c in tree.conclusions]) == 1  # for the first episode only
    assert len(emb.calls) == 1 + len(episodes)
    assert {v.score for v in judge.judge(tree, episodes[0])} != {0.0}


def test_openai_judge_parses_retries_and_records_errors():
    tree = resolve_tree("synthetic-diamond-4")
    answers = iter(
        [
            "not json",
            json.dumps({"score": 0.6, "rationale": "partly"}),
            json.dumps({"score": 1.0, "rationale": "yes"}),
            '```json\n{"score": 0.0, "rationale": "no"}\n```',
        ]
    )
    with OpenAICompatibleServer(lambda m: next(answers)) as server:
        verdicts = OpenAIJudge("judge-m", ModelConfig(server.base_url)).judge(tree, ["a claim"])
        body = server.requests[0]["body"]
    assert [v.score for v in verdicts] == [0.6, 1.0, 0.0]
    assert verdicts[0].raw_output == json.dumps({"score": 0.6, "rationale": "partly"})
    assert body["temperature"] == 0 and body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["score"]["enum"] == [1.0, 0.6, 0.0]
    assert verdicts[0].usage["output"] is not None and verdicts[0].latency_ms > 0 and not verdicts[0].cache_hit
    assert "a claim" in body["messages"][1]["content"] and tree.conclusions[0].text in body["messages"][1]["content"]
    with OpenAICompatibleServer(lambda m: "garbage") as server:
        bad = OpenAIJudge("judge-m", ModelConfig(server.base_url), attempts=2).judge(tree, ["a claim"])
        assert len(server.requests) == 2 * len(tree.conclusions)
    assert all(v.score is None and v.error and v.raw_output == "garbage" for v in bad)


def test_judge_errors_leave_q_undefined_not_zero():
    resolve_tree("synthetic-diamond-4")
    with OpenAICompatibleServer(lambda m: "garbage") as server:
        out = CliRunner().invoke(
            main,
            ["play", "--tree", "synthetic-diamond-4", "--judge", "openai:j", "--judge-base-url", server.base_url, "-q"],
        )
    assert out.exit_code == 0 and "Q n/a (judge error)" in out.output


@pytest.mark.parametrize(
    "raw,expected",
    [
        ('{"score": 1, "rationale": "r"}', (1.0, "r")),
        ('{"score": 0.5}', (None, "score 0.5 is not one of 1.0, 0.6, 0.0")),
        ('{"rationale": "r"}', (None, "unparseable judge output (KeyError)")),
        ('```json\n{"score": 0.6, "rationale": "r"}\n```', (0.6, "r")),
        ('```JSON\n{"score": 0.0, "rationale": "no"}\n```\n', (0.0, "no")),
        ('```\n{"score": 1.0}\n```', (None, "the rationale is empty or the prompt's placeholder ('None')")),
        (
            '{"score": 1.0, "rationale": "<one or two sentences>"}',
            (None, "the rationale is empty or the prompt's placeholder ('<one or two sentences>')"),
        ),
        ('{"score": 0.6, "rationale": "  "}', (None, "the rationale is empty or the prompt's placeholder ('  ')")),
        ('Here is my verdict: {"score": 1.0}', (None, "unparseable judge output (JSONDecodeError)")),
    ],
)
def test_parse_verdict(raw, expected):
    assert parse_verdict(raw) == expected


def test_the_rubric_judge_asks_for_one_word_per_item_and_re_asks_once_when_none_comes():
    """rubric:MODEL: no JSON schema is sent; the first of STATED, PARTIAL, ABSENT in the answer is the
    verdict (a small model may explain after the word); an answer with none is asked again in the
    rubric's words, and one that stays without a word is a judge error, never absent."""
    from inquitree.core.players.judges import RubricJudge, parse_rubric

    assert parse_rubric("Partial. The agent says it only in general terms.") == (0.6, "the judge answered PARTIAL")
    assert parse_rubric("ABSENT, not STATED")[0] == 0.0
    assert parse_rubric("I think so")[0] is None
    tree = resolve_tree("synthetic-diamond-4")
    answers = iter(["STATED", "hmm", "absent", "partial: it hedges"] + ["Absent"] * 10)
    with OpenAICompatibleServer(lambda m: next(answers)) as server:
        judge = RubricJudge("judge-m", ModelConfig(server.base_url))
        verdicts = judge.judge(tree, ["a claim", "another claim"])
        bodies = [r["body"] for r in server.requests]
    assert judge.id == "rubric:judge-m:rubric-judge-v1" and judge.description["kind"] == "rubric"
    assert [v.score for v in verdicts][:3] == [1.0, 0.0, 0.6]
    assert "response_format" not in bodies[0]
    assert "(1) a claim\n(2) another claim" in bodies[0]["messages"][1]["content"]
    assert bodies[2]["messages"][-1]["content"].startswith("Your answer could not be used: no STATED, PARTIAL")
    with OpenAICompatibleServer(lambda m: "I cannot tell") as server:
        bad = RubricJudge("judge-m", ModelConfig(server.base_url), attempts=2).judge(tree, ["a claim"])
    assert all(v.score is None and v.error for v in bad)


def test_the_hybrid_judge_shows_the_model_the_three_agent_items_nearest_the_ground_truth():
    """hybrid:MODEL: the embedder's cosine picks which of the agent's items the model reads (three,
    in the agent's order); the model's word is the verdict."""
    from inquitree.core.players.kinds import make_judge

    tree = resolve_tree("synthetic-diamond-4")
    truth = tree.conclusions[0].text
    items = ["bread prices rose", truth, "the weather was fine", truth + " in mice", "cats sleep a lot"]
    with OpenAICompatibleServer(lambda m: "STATED") as server:
        judge = make_judge("hybrid:judge-m", HashEmbedder(), ModelConfig(server.base_url))
        verdicts = judge.judge(tree, items)
        first = server.requests[0]["body"]["messages"][1]["content"]
    assert judge.id == "hybrid:judge-m:hybrid-judge-v1:hash:char3-5-1024"
    assert {v.score for v in verdicts} == {1.0}
    shown = first.split("The agent's conclusions:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(shown) == 3 and shown[0] == f"(1) {truth}" and shown[1] == f"(2) {truth} in mice"
