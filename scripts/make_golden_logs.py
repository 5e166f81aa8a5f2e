"""Record the golden episode logs replayed by every CI run (tests/golden/*.jsonl).

    python scripts/make_golden_logs.py

Four episodes on the shipped synthetic trees, with the offline local embedder:
a random agent at randomness 5, the oracle at randomness 3 (so it redoes fakes),
a scripted agent that always misses, and a chat model served by a real
OpenAI-compatible HTTP server on loopback (tests/openai_server.py) whose replies
paraphrase the hints, so that matching, dependency blocks and hints all occur.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from inquitree.core.game.prompts import TemplateSet
from inquitree.core.game.tree import resolve_tree
from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent, OracleAgent, RandomAgent, ScriptAgent
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.players.kinds import make_embedder
from inquitree.core.run.golden import dump_jsonl
from inquitree.core.run.runner import run_episode
from inquitree.core.run.setup import EpisodeSetup, Recording

from enginekit import always_miss_script, params
from openai_server import OpenAICompatibleServer


def paraphrasing_model(tree):
    """Replies like a cautious model: level-3-hint paraphrases, one dependency slip, a redo."""
    plan = tree.topological_order()
    state = {"i": 0, "slipped": False, "redone": False}

    def reply(messages):
        obs = messages[-1]["content"]
        if "numbered scientific conclusions" in obs:
            items = "\n".join(f"({k}) {c.text}" for k, c in enumerate(tree.conclusions[:-1], 1))
            return f"THOUGHT: Summarizing.\nACTION:\n{items}"
        if "The results are as follows" in obs:
            if not state["redone"]:
                state["redone"] = True
                return "THOUGHT: This looks surprising.\nACTION: redo_study"
            state["i"] += 1
            done = state["i"] >= len(plan)
            return "THOUGHT: Clear result.\nACTION: " + ("draw_conclusion" if done else "explore_new_subtopic")
        if 'output "OK"' in obs:
            return "OK"
        sub = tree.subtopic[plan[min(state["i"], len(plan) - 1)]]
        if "propose one study" in obs or "another study" in obs or "alternative study plan" in obs:
            return f"THOUGHT: A direct test.\nACTION: {sub.studies[0].hints[2]}"
        if not state["slipped"] and len(plan) > 1:
            state["slipped"] = True
            return f"THOUGHT: Start with the mechanism.\nACTION: {tree.subtopic[plan[-1]].text}"
        return f"THOUGHT: Next step.\nACTION: {sub.hints[2]}"

    return reply


def main() -> None:
    out = ROOT / "tests" / "golden"
    scratch = Path(tempfile.mkdtemp())
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)  # no folder outlives the run
    emb = make_embedder("local", cache=scratch / "cache.sqlite")
    judge = EmbeddingJudge(emb)
    t = TemplateSet()
    chain, diamond, indep = (
        resolve_tree(x) for x in ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7")
    )
    runs = {
        "random-diamond-a5": (diamond, RandomAgent(diamond, 7), params(diamond, emb, seed=7, randomness=5)),
        "oracle-independent-a3": (indep, OracleAgent(indep), params(indep, emb, seed=3, randomness=3)),
    }
    with tempfile.TemporaryDirectory() as d:
        script = always_miss_script(diamond, 4, Path(d) / "miss.txt")
        runs["script-always-miss-diamond"] = (diamond, ScriptAgent(script), params(diamond, emb))
        for name, (tree, agent, p) in runs.items():
            agent.description = {k: v for k, v in agent.description.items() if k != "file"}
            res = run_episode(EpisodeSetup(t, emb), tree, p, agent, judge, Recording(episode_id=f"golden-{name}"))
            (out / f"{name}.jsonl").write_text(dump_jsonl(res.events))
            print(f"{name}: {len(res.events)} events, steps {res.scored.steps}, q_norm {res.scored.q_norm}")
    with OpenAICompatibleServer(paraphrasing_model(chain)) as server:
        agent = OpenAIChatAgent("local-paraphraser", t.system_prompt, ModelConfig(server.base_url))
        agent.description["base_url"] = "http://127.0.0.1:PORT/v1"
        p, recording = params(chain, emb, seed=1, randomness=2), Recording(episode_id="golden-openai-chain-a2")
        res = run_episode(EpisodeSetup(t, emb), chain, p, agent, judge, recording)
        (out / "openai-chain-a2.jsonl").write_text(dump_jsonl(res.events))
        print(
            f"openai-chain-a2: {len(res.events)} events, steps {res.scored.steps}, q_norm {res.scored.q_norm}, "
            f"{len(server.requests)} HTTP requests"
        )


if __name__ == "__main__":
    main()
