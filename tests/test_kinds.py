"""core/players/kinds.py: one registry parses every agent, judge, embedder and control spec."""

from __future__ import annotations

import pytest

from inquitree.core.players import kinds


@pytest.mark.parametrize(
    "role, text, name, argument, needs_model, names_file",
    [
        ("agent", "random", "random", None, False, False),
        ("agent", "random-all", "random-all", None, False, False),
        ("agent", "script:/x/y.txt", "script", "/x/y.txt", False, True),
        ("agent", "openai:gpt-5:2025", "openai", "gpt-5:2025", True, False),
        ("judge", "embedding", "embedding", "0.85/0.7", False, False),
        ("judge", "embedding:0.78/0.74", "embedding", "0.78/0.74", False, False),
        ("judge", "openai:m", "openai", "m", True, False),
        ("embedder", "openai", "openai", "text-embedding-3-small", True, False),
        ("embedder", "local", "local", None, False, False),
        ("control", "oracle", "oracle", None, False, False),
    ],
)
def test_a_spec_names_its_kind_and_what_applies_to_it(role, text, name, argument, needs_model, names_file):
    spec = kinds.parse_spec(role, text)
    assert (spec.kind.name, spec.argument, spec.kind.needs_model, spec.kind.names_file) == (
        name,
        argument,
        needs_model,
        names_file,
    )
    assert spec.model == (argument if needs_model else None)


@pytest.mark.parametrize(
    "role, text, message",
    [
        ("agent", "gpt", "--agent 'gpt': expected random, random-all, oracle, human, script:FILE or openai:MODEL"),
        ("agent", "openai:", "--agent 'openai:': expected"),
        ("agent", "oracle:x", "--agent 'oracle:x': expected"),
        (
            "judge",
            "grader",
            "--judge 'grader': expected embedding[:FULL/PARTIAL], openai:MODEL, rubric:MODEL or hybrid:MODEL",
        ),
        ("embedder", "bge", "--embedder 'bge': expected local, hash, nomic or openai[:MODEL]"),
        ("control", "human", "--agent 'human': expected oracle, random or openai:MODEL"),
    ],
)
def test_an_unknown_spec_lists_the_kinds_of_its_role(role, text, message):
    with pytest.raises(kinds.SpecError) as info:
        kinds.parse_spec(role, text)
    assert str(info.value).startswith(message)


def test_every_entry_point_asks_the_registry(tmp_path):
    """A kind registered once is what play, suites, judges and embedders make."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.core.players.agents import AgentError, OracleAgent
    from inquitree.core.players.embed import EmbedderError, HashEmbedder
    from inquitree.core.players.judges import EmbeddingJudge, JudgeError
    from inquitree.core.players.kinds import make_agent, make_embedder, make_judge

    tree = resolve_tree("synthetic-chain-7")
    assert isinstance(make_agent("oracle", tree, 0, "sys", label="o"), OracleAgent)
    assert make_agent("oracle", tree, 0, "sys", label="o").description["label"] == "o"
    emb = make_embedder("hash", cache=False)
    assert isinstance(emb, HashEmbedder) and isinstance(make_judge("embedding", emb), EmbeddingJudge)
    for make, bad, error in ((make_agent, "gpt", AgentError), (make_judge, "x", JudgeError)):
        with pytest.raises(error):
            make(bad, tree, 0, "sys") if make is make_agent else make(bad, emb)
    with pytest.raises(EmbedderError, match=r"unknown embedder 'bge': expected local, hash, nomic or openai\[:MODEL\]"):
        make_embedder("bge")
