"""Where Appendix B's random agent falls against the interval [3n, n(2H+3)] (issue: results a
paper can cite, item 5).

Plays ``random`` (uniform over each state's options, concludes whenever it draws that decision)
and ``random-all`` (never concludes before visiting every subtopic) on the three synthetic trees,
with the hash embedder, H = 4 and no turn limit in reach, and counts the episodes below, within
and above the interval. Appendix B derives the interval for an agent that visits each subtopic
once and never redoes a study; a uniform agent re-selects visited subtopics and redoes studies,
so it can exceed n(2H+3).

    python bench/random_agent.py [--seeds 50] [--out bench/results/random_agent.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.core.game.tree import resolve_tree

from enginekit import RandomAgent, play

TREES = ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "random_agent.json"))
    args = ap.parse_args()
    rows = []
    for tree_id in TREES:
        tree = resolve_tree(tree_id)
        lower, upper = tree.bounds(4)
        for visit_all in (False, True):
            steps, coverage = [], []
            for seed in range(args.seeds):
                agent = RandomAgent(tree, seed, visit_all=visit_all)
                out = play(tree, agent, seed=seed, max_turns=100 * upper, judge=False)
                steps.append(out.state.step)
                coverage.append(len(out.state.visits) / tree.n)
            row = {
                "tree": tree_id,
                "agent": "random-all" if visit_all else "random",
                "lower_bound": lower,
                "upper_bound": upper,
                "episodes": len(steps),
                "median_steps": statistics.median(steps),
                "min_steps": min(steps),
                "max_steps": max(steps),
                "below": sum(s < lower for s in steps),
                "within": sum(lower <= s <= upper for s in steps),
                "above": sum(s > upper for s in steps),
                "mean_coverage": round(statistics.mean(coverage), 3),
            }
            rows.append(row)
            print(json.dumps(row))
    Path(args.out).write_text(json.dumps({"seeds": args.seeds, "max_hints": 4, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
