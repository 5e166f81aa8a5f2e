"""The calibration measurements on the shipped trees, under the local embedder.

Per tree: subtopics ours vs the paper's Table 4, the mean cosine of each hint level to
its target (Eq. 6), the mean highest cosine between a target and another candidate of
the same state, and the tau that `inquitree trees calibrate` recommends for that tree
alone. Then the totals against the paper's (120 subtopics over 18 papers) and the tau
recommended over all shipped trees, which is the default (core/players/embed.py DEFAULT_TAU).

    python bench/trees_calibration.py   # prints a Markdown table, writes bench/results/trees_calibration.json
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from inquitree.core.game.tree import it18_registry, load_tree_file, shipped_tree_paths
from inquitree.core.players.calibrate import calibrate_tree, percentile, recommend_tau
from inquitree.core.players.embed import LocalEmbedder

OUT = Path(__file__).resolve().parent / "results" / "trees_calibration.json"


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--quick", action="store_true", help="the smoke run: two trees")
    args = ap.parse_args()
    emb = LocalEmbedder()
    rows, cals = [], []
    paths = shipped_tree_paths()
    if args.quick:
        paths = [
            next(p for p in paths if p.stem.startswith("it18-")),
            next(p for p in paths if p.stem.startswith("synthetic-")),
        ]
    for p in paths:
        t = load_tree_file(p)
        cal = calibrate_tree(t, emb)
        cals.append(cal)
        cross = [c for c in cal.cross if not math.isnan(c)]
        rows.append(
            {
                "tree": t.id,
                "it18_id": t.paper.get("it18_id"),
                "n": t.n,
                "paper_n": t.paper.get("paper_subtopics"),
                "targets": len(cal.targets),
                "violations": len(cal.violations),
                **{f"h{i}": round(float(np.mean(cal.level(i))), 3) for i in range(1, 5)},
                "cross": round(float(np.mean(cross)), 3) if cross else None,
                "tau": recommend_tau([cal]),
            }
        )
    it18 = [r for r in rows if r["it18_id"] is not None]
    papers = it18_registry()
    h1 = [c for cal in cals for c in cal.level(1)]
    h4 = [c for cal in cals for c in cal.level(4)]
    totals = {
        "embedder": emb.id,
        "it18_papers": len(papers),
        "it18_trees": len(it18),
        "subtopics_ours": sum(r["n"] for r in it18),
        "subtopics_paper": sum(p["subtopics"] for p in papers),
        "mean_ours": round(sum(r["n"] for r in it18) / len(it18), 2),
        "mean_paper": round(sum(p["subtopics"] for p in papers) / len(papers), 2),
        "p90_h1_all": round(percentile(h1, 90), 3),
        "p10_h4_all": round(percentile(h4, 10), 3),
        "tau_all": recommend_tau(cals),
        "tau_it18_only": recommend_tau([c for c, r in zip(cals, rows, strict=False) if r["it18_id"] is not None]),
    }
    Path(args.out).write_text(json.dumps({"totals": totals, "trees": rows}, indent=1) + "\n")
    print("| tree | n / paper | h1 | h2 | h3 | h4 | cross | tau |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['tree']} | {r['n']} / {r['paper_n'] if r['paper_n'] is not None else '-'} | {r['h1']:.2f} | "
            f"{r['h2']:.2f} | {r['h3']:.2f} | {r['h4']:.2f} | {r['cross']:.2f} | {r['tau']:.2f} |"
        )
    print()
    print(json.dumps(totals))


if __name__ == "__main__":
    main()
