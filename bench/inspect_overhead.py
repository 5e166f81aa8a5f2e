"""Engine plus inspect_ai, per step, against `inquitree play`'s loop with the same scripted agent,
alternated in one process: the worst-case script (every proposal misses until forced) on a
synthetic chain of 7, 77 steps an episode, the hash embedder, nothing recorded.

    python bench/inspect_overhead.py [--runs 5] [--out bench/results/inspect_overhead.json]
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from needs import need  # bench/needs.py

need("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402 - after the check that it is installed
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from inquitree.core.game.tree import resolve_tree
from inquitree.core.inspect.task import research_tree
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.players.kinds import make_embedder
from inquitree.core.run.runner import run_episode

from enginekit import ScriptAgent, always_miss_script, params, setup


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "inspect_overhead.json"))
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="inquitree-inspect-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)  # no folder outlives the run
    tree = resolve_tree("synthetic-chain-7")
    emb = make_embedder("hash")
    script = always_miss_script(tree, 4, d / "miss.txt")
    out = run_episode(setup(emb), tree, params(tree, emb), ScriptAgent(script), EmbeddingJudge(emb))
    texts = [e.raw for e in out.events if e.TYPE == "AgentReplied"]
    steps = out.scored.steps
    play, insp, fixed = [], [], []

    def scripted(replies: list[str]):
        outs = []
        for t in replies:
            o = ModelOutput.from_content("mockllm", t)
            o.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            outs.append(o)
        return get_model("mockllm/model", custom_outputs=iter(outs), memoize=False)

    for k in range(args.runs):
        t0 = time.perf_counter()
        run_episode(setup(emb), tree, params(tree, emb), ScriptAgent(script), EmbeddingJudge(emb))
        play.append((time.perf_counter() - t0) / steps)
        t0 = time.perf_counter()
        log = inspect_eval(
            research_tree(trees="synthetic-chain-7", embedder="hash"),
            model=scripted(texts),
            log_dir=str(d / f"logs{k}"),
            display="none",
        )[0]
        insp.append((time.perf_counter() - t0) / steps)
        assert log.samples[0].scores["inquitree_scores"].value["steps"] == steps
        # the same eval with a one-step episode (max_turns 1): inspect's fixed cost per eval
        t0 = time.perf_counter()
        one = inspect_eval(
            research_tree(trees="synthetic-chain-7", embedder="hash", max_turns=1),
            model=scripted(texts[:1] + texts[-1:]),
            log_dir=str(d / f"one{k}"),
            display="none",
        )[0]
        fixed.append(time.perf_counter() - t0)
        assert one.samples[0].scores["inquitree_scores"].value["steps"] == 1
    result = {
        "stamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "steps_per_episode": steps,
        "runs": args.runs,
        "play_ms_per_step": round(statistics.median(play) * 1000, 3),
        "inspect_ms_per_step": round(statistics.median(insp) * 1000, 3),
        "ratio": round(statistics.median(insp) / statistics.median(play), 2),
        "inspect_eval_fixed_s": round(statistics.median(fixed), 3),
        "inspect_marginal_ms_per_step": round(
            (statistics.median(insp) * steps - statistics.median(fixed)) / (steps - 1) * 1000, 3
        ),
        "marginal_ratio": round(
            (statistics.median(insp) * steps - statistics.median(fixed)) / (steps - 1) / statistics.median(play), 2
        ),
        "note": "inspect's time per step includes one whole eval per episode (task set-up, writing its "
        "log); the marginal cost subtracts an eval of a one-step episode",
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
