"""Helpers to run episodes in tests without the CLI."""

from __future__ import annotations

from pathlib import Path

from inquitree.core.game.engine import Params
from inquitree.core.game.prompts import TemplateSet
from inquitree.core.game.tree import Tree
from inquitree.core.players.agents import OracleAgent, RandomAgent, ScriptAgent
from inquitree.core.players.embed import HashEmbedder, default_tau
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.run.runner import run_episode
from inquitree.core.run.setup import EpisodeSetup, Recording

TEMPLATES = TemplateSet("inquitree")
MISS = "THOUGHT: I am not sure.\nACTION: Let us order lunch from the new noodle place downtown."


def params(
    tree: Tree,
    embedder,
    *,
    seed: int = 0,
    randomness: int = 0,
    max_hints: int = 4,
    max_turns: int | None = None,
    tau: float | None = None,
) -> Params:
    return Params(
        tau=tau if tau is not None else default_tau(embedder.id),
        max_hints=max_hints,
        max_turns=max_turns or tree.bounds(max_hints)[1],
        randomness=randomness,
        seed=seed,
        embedder=embedder.id,
        template_set=TEMPLATES.name,
        template_hash=TEMPLATES.hash,
    )


def setup(embedder) -> EpisodeSetup:
    """The setup the tests play with: the paper's templates and ``embedder``, no limits."""
    return EpisodeSetup(TEMPLATES, embedder)


def always_miss_script(tree: Tree, max_hints: int, path: Path) -> Path:
    """Misses at Topic and Subtopic until forced (H hints, then attempt H+1), explores until every
    subtopic is visited, then concludes."""
    rounds = []
    for i in range(tree.n):
        decision = "ACTION: explore_new_subtopic" if i < tree.n - 1 else "ACTION: draw_conclusion"
        rounds += [MISS] * (max_hints + 1) * 2 + [decision]
    rounds.append("ACTION:\n(1) Sleep matters.")
    path.write_text("\n---\n".join(rounds))
    return path


def play(tree: Tree, agent, embedder=None, store=None, judge=True, **kw):
    embedder = embedder or HashEmbedder()
    judge_obj = judge if not isinstance(judge, bool) else (EmbeddingJudge(embedder) if judge else None)
    return run_episode(setup(embedder), tree, params(tree, embedder, **kw), agent, judge_obj, Recording(store))


def follower(oracle_out, script: Path, follows: int = 3, label: str = "follower") -> ScriptAgent:
    """A scripted agent that says what the oracle's episode ``oracle_out`` said for ``follows``
    replies, then something no candidate matches: its path parts from the oracle's at step
    ``follows + 1``."""
    from inquitree.events.types import AgentReplied

    said = [e.raw for e in oracle_out.events if isinstance(e, AgentReplied)]
    script.write_text("\n---\n".join([*said[:follows], *["ACTION: something else entirely"] * 12]) + "\n")
    agent = ScriptAgent(str(script))
    agent.description = {**agent.description, "label": label}
    return agent


__all__ = [
    "OracleAgent",
    "follower",
    "RandomAgent",
    "ScriptAgent",
    "play",
    "params",
    "always_miss_script",
    "MISS",
    "TEMPLATES",
]
