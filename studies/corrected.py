"""How often the corrected conclusion score holds: simulated campaigns with a known truth, judged by
judges of known quality, a share of their items labelled, and three intervals for the mean over
papers of each paper's mean true item value (the estimand of ``inquitree.stats.prediction_powered``
and of the leaderboard's ``conclusion_score_corrected``):

- corrected: ``prediction_powered`` on the judge's verdicts on every item and the labelled sample;
- labels alone: the same with lambda 0 (the judge ignored), the width the judge's verdicts save;
- judge alone: ``mean_interval`` on the episodes' judged means, as the leaderboard's conclusion
  score is, whose misses show what an uncorrected judge costs;

and, for ``compare``'s corrected row, how often the corrected difference of two agents on the same
papers (``prediction_powered_difference``) holds the true difference.

    python studies/corrected.py [--campaigns 400] [--out studies/results/corrected.json]

A campaign: P papers (8, 18, 30), each with 2 episodes of 6 ground-truth items. Each paper draws
its own chances of an item being absent, partial or stated from a Dirichlet around the careful
reading's shares of the 150 items InquiTree ships (102 absent, 27 partial, 21 credited;
core/data/judging), so papers differ as real ones do; the truth is the mean of that
distribution, Sum(value x share): papers like these, as every interval here speaks of. A judge
turns each true category into a verdict through a confusion matrix: four judges that give the
true category with a chance chosen to reach kappa about 0.2, 0.5 and 0.9 (otherwise a category
at random), and the shipped embedding judge's measured held-out confusion
(core/data/instrument/measured.json), which is biased as well as noisy. A share of the items
(2, 5, 10, 20%, at least 3) is labelled, drawn at random as ``inquitree label conclusions`` draws
them. Values: absent 0, partial 0.6, stated 1 (core/instrument/labels.py, LABEL_VALUE).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from inquitree.stats import PPI_FEW_LABELS_INTERVAL, mean_interval, prediction_powered, prediction_powered_difference

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "results" / "corrected.json"
VALUES = np.array([0.0, 0.6, 1.0])  # absent, partial, stated
READING = np.array([102, 27, 21]) / 150  # the careful reading's shares of the shipped 150 items
SPREAD = 5.0  # the Dirichlet's concentration around READING: how much papers differ
EPISODES, ITEMS = 2, 6
PAPERS = (8, 18, 30)
SHARES = (0.02, 0.05, 0.10, 0.20)
GOAL = 0.93


def noisy_judge(right: float) -> np.ndarray:
    """A judge that gives the true category with chance ``right``, otherwise one at random."""
    return right * np.eye(3) + (1 - right) * np.full((3, 3), 1 / 3)


def shipped_judge() -> np.ndarray:
    """The shipped default embedding judge's held-out confusion (rows: the reading; columns: the
    judge), each row made a distribution (half a count added to every cell: a row of few items
    must not forbid a verdict)."""
    record = json.loads((ROOT / "core" / "data" / "instrument" / "measured.json").read_text())
    judge = next(j for j in record["judges"] if j["judge"] == "embedding:local:all-MiniLM-L6-v2-int8:0.85/0.7")
    cats = ("absent", "partial", "credited")
    table = np.array([[judge["held_out"]["confusion"][r][c] for c in cats] for r in cats], dtype=float) + 0.5
    return table / table.sum(axis=1, keepdims=True)


def kappa_of(confusion: np.ndarray) -> float:
    """Cohen's kappa of a judge with this confusion on items with the reading's shares."""
    joint = READING[:, None] * confusion
    observed = np.trace(joint)
    expected = float(joint.sum(axis=1) @ joint.sum(axis=0))
    return float((observed - expected) / (1 - expected))


def campaign(rng: np.random.Generator, papers: int, confusion: np.ndarray, share: float) -> dict:
    """One simulated campaign: the three intervals and whether each holds the truth."""
    per_paper = EPISODES * ITEMS
    chances = rng.dirichlet(SPREAD * READING, size=papers)
    truth_cat = np.concatenate([rng.choice(3, size=per_paper, p=c) for c in chances])
    judged_cat = np.array([rng.choice(3, p=confusion[t]) for t in truth_cat])
    paper = np.repeat([f"p{k}" for k in range(papers)], per_paper)
    y, f = VALUES[truth_cat], VALUES[judged_cat]
    n = max(3, round(share * len(y)))
    at = np.sort(rng.choice(len(y), size=n, replace=False))
    corrected = prediction_powered(paper, f, paper[at], f[at], y[at])
    alone = prediction_powered(paper, f, paper[at], f[at], y[at], lam=0)
    episode_means = f.reshape(-1, ITEMS).mean(axis=1)
    judge = mean_interval(paper[::ITEMS], episode_means, (0, 1))
    return {"corrected": corrected, "alone": alone, "judge": judge}


def _mark(row: dict) -> str:
    """Whether a cell fell short of the goal, and whether the leaderboard warns its rows."""
    if not row["warned"]:
        return ""
    said = "warned" if row["labelled_items"] < PPI_FEW_LABELS_INTERVAL else "NOT warned"
    return f" (below 93%, {said})"


def table(result: dict) -> list[str]:
    """The result as docs/statistics.md shows it (tests/test_labels.py holds the page to it)."""
    lines = [
        "| judge | kappa | papers | labelled | covers | width | labels alone | judge alone misses |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['judge']} | {r['kappa']:.2f} | {r['papers']} | {100 * r['labelled_share']:.0f}% "
            f"({r['labelled_items']}) | {100 * r['corrected_covers']:.1f}%{_mark(r)} | "
            f"{r['corrected_width']:.2f} | {r['labels_alone_width']:.2f} | {100 * r['judge_alone_misses']:.0f}% |"
        )
    return lines


BETTER = np.array([60, 40, 50]) / 150  # agent B's shares: more partial and stated findings than the reading's


def paired(rng: np.random.Generator, papers: int, confusion: np.ndarray, share: float) -> dict:
    """Two agents on the same papers (B states more than A: each agent's chances on a paper drawn
    around its own mean), judged by the same judge, each labelled on a sample of its own items:
    the corrected difference B - A (``prediction_powered_difference``)."""
    per_paper = EPISODES * ITEMS
    paper = np.repeat([f"p{k}" for k in range(papers)], per_paper)
    sides = []
    for mean in (READING, BETTER):
        chances = rng.dirichlet(SPREAD * mean, size=papers)
        truth_cat = np.concatenate([rng.choice(3, size=per_paper, p=c) for c in chances])
        judged = VALUES[np.array([rng.choice(3, p=confusion[t]) for t in truth_cat])]
        y = VALUES[truth_cat]
        at = np.sort(rng.choice(len(y), size=max(3, round(share * len(y))), replace=False))
        sides.append((paper, judged, paper[at], judged[at], y[at]))
    return {"difference": prediction_powered_difference(sides[0], sides[1])}


def difference_table(result: dict) -> list[str]:
    """The corrected difference's rows as docs/statistics.md shows them."""
    lines = ["| judge | papers | labelled (each agent) | covers | width |", "|---|---|---|---|---|"]
    for r in result["differences"]:
        lines.append(
            f"| {r['judge']} | {r['papers']} | {100 * r['labelled_share']:.0f}% | {100 * r['covers']:.1f}% | "
            f"{r['width']:.2f} |"
        )
    return lines


def holds(iv, truth: float) -> bool:
    return iv.low is not None and iv.low <= truth <= iv.high


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", type=int, default=400, help="simulated campaigns per cell")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    judges = {f"right {r:.2f}": noisy_judge(r) for r in (0.22, 0.55, 0.91)}
    judges["the shipped embedding judge (0.85/0.7)"] = shipped_judge()
    truth = float(VALUES @ READING)
    rows = []
    for name, confusion in judges.items():
        for papers in PAPERS:
            for share in SHARES:
                rng = np.random.default_rng([papers, round(1000 * share), len(rows)])
                found = [campaign(rng, papers, confusion, share) for _ in range(args.campaigns)]
                width = {
                    k: float(np.median([r[k].high - r[k].low for r in found if r[k].low is not None]))
                    for k in ("corrected", "alone")
                }
                row = {
                    "judge": name,
                    "kappa": round(kappa_of(confusion), 2),
                    "papers": papers,
                    "labelled_share": share,
                    "labelled_items": max(3, round(share * papers * EPISODES * ITEMS)),
                    "campaigns": args.campaigns,
                    "corrected_covers": round(float(np.mean([holds(r["corrected"], truth) for r in found])), 4),
                    "alone_covers": round(float(np.mean([holds(r["alone"], truth) for r in found])), 4),
                    "judge_alone_misses": round(float(np.mean([not holds(r["judge"], truth) for r in found])), 4),
                    "corrected_width": round(width["corrected"], 4),
                    "labels_alone_width": round(width["alone"], 4),
                }
                row["warned"] = row["corrected_covers"] < GOAL
                rows.append(row)
                print(
                    f"{name:40} kappa {row['kappa']:.2f} papers {papers:2} labelled {100 * share:3.0f}% "
                    f"({row['labelled_items']:3}): covers {100 * row['corrected_covers']:.1f}% "
                    f"width {row['corrected_width']:.3f} (labels alone {row['labels_alone_width']:.3f}); "
                    f"the judge alone misses {100 * row['judge_alone_misses']:.0f}%",
                    file=sys.stderr,
                )
    difference_truth = float(VALUES @ BETTER - VALUES @ READING)
    differences = []
    for name in ("right 0.55", "the shipped embedding judge (0.85/0.7)"):
        for papers in (18, 30):
            for share in (0.10, 0.20):
                rng = np.random.default_rng([papers, round(1000 * share), 99, len(differences)])
                found = [paired(rng, papers, judges[name], share)["difference"] for _ in range(args.campaigns)]
                row = {
                    "judge": name,
                    "papers": papers,
                    "labelled_share": share,
                    "campaigns": args.campaigns,
                    "covers": round(float(np.mean([holds(iv, difference_truth) for iv in found])), 4),
                    "width": round(float(np.median([iv.high - iv.low for iv in found if iv.low is not None])), 4),
                }
                differences.append(row)
                print(
                    f"difference, {name}, {papers} papers, {100 * share:.0f}%: covers {100 * row['covers']:.1f}%",
                    file=sys.stderr,
                )
    result = {
        "difference_truth": difference_truth,
        "differences": differences,
        "truth": truth,
        "goal": GOAL,
        "design": {"episodes": EPISODES, "items": ITEMS, "spread": SPREAD, "reading": READING.tolist()},
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
