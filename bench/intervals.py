"""Intervals benchmark (issue: results a paper can cite).

    python bench/intervals.py coverage [--campaigns 1000]     # how often the 95% interval covers
    python bench/intervals.py cost --db URL                   # each query's time with intervals

``coverage`` simulates campaigns whose true mean is known and asks how often the interval of
``warehouse/bootstrap.py`` covers it. A campaign is the paper's design: T papers, m runs each;
a paper's own mean is drawn around the true mean (between-paper spread sigma_b), each run
around its paper's mean (within-paper spread sigma_w), and the estimate is the mean over papers
of per-paper means, as in Table 2. The estimand is the true mean over the population of papers.
Each design runs both schemes: trees only (the default since session 8) and trees then episodes
(DECISIONS #25 as first written).
Also a bounded design: runs are 0/1 outcomes (like a fake spotted or not) with paper-level
probabilities from a Beta distribution.

``cost`` syncs the store into a fresh warehouse and times every query in ``queries/`` (median
of 5), beside the same query with resampling switched off (``resamples=0``: the point estimates
only, through the same functions) in the same process; queries without intervals take the same
time in both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from inquitree.warehouse.bootstrap import Bootstrap

DESIGNS = [
    # name, papers, runs, sigma_b, sigma_w, kind
    ("IT-18-like, between-paper spread dominates", 18, 3, 0.15, 0.08, "normal"),
    ("IT-18-like, equal spreads", 18, 3, 0.10, 0.10 * 3**0.5, "normal"),
    ("IT-18-like, within-paper spread dominates", 18, 3, 0.05, 0.20, "normal"),
    ("10 papers, 3 runs", 10, 3, 0.15, 0.08, "normal"),
    ("18 papers, 0/1 outcomes, p ~ Beta(2, 3)", 18, 3, 0.0, 0.0, "bernoulli"),
]
TRUE_MEAN = 0.4


def campaign(rng, papers: int, runs: int, sigma_b: float, sigma_w: float, kind: str) -> tuple[list, list]:
    trees = [f"p{i}" for i in range(papers) for _ in range(runs)]
    if kind == "bernoulli":
        probs = rng.beta(2, 3, papers)  # mean 0.4
        values = (rng.random((papers, runs)) < probs[:, None]).astype(float)
    else:
        means = TRUE_MEAN + rng.normal(0, sigma_b, papers)
        values = means[:, None] + rng.normal(0, sigma_w, (papers, runs))
    return trees, list(values.ravel())


def coverage(campaigns: int, resamples: int) -> dict:
    rows = []
    for name, papers, runs, sb, sw, kind in DESIGNS:
        for within, expanded in ((True, False), (False, False), (True, True), (False, True)):
            rng = np.random.default_rng(2026)  # the same campaigns for every scheme
            boot = Bootstrap(resamples=resamples, seed=0, within=within, expanded=expanded)
            covered, widths, t0 = 0, [], time.perf_counter()
            for _ in range(campaigns):
                r = boot.mean(*campaign(rng, papers, runs, sb, sw, kind))
                covered += r["ci_low"] <= TRUE_MEAN <= r["ci_high"]
                widths.append(r["ci_high"] - r["ci_low"])
            share = covered / campaigns
            row = {
                "design": name,
                "scheme": ("trees then episodes" if within else "trees only")
                + (", expanded percentile" if expanded else ", percentile"),
                "papers": papers,
                "runs": runs,
                "campaigns": campaigns,
                "coverage": round(share, 4),
                "coverage_se": round((share * (1 - share) / campaigns) ** 0.5, 4),
                "median_width": round(statistics.median(widths), 4),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {"true_mean": TRUE_MEAN, "resamples": resamples, "rows": rows}


INTERVAL_QUERIES = [
    "table2_leaderboard",
    "fig3a_score_by_randomness",
    "fig3b_redo_frequency",
    "fig3c_fake_hit_rate",
    "fig4_cutoff",
    "steps_bounds",
    "control_accuracy",
]


def cost(url: str, runs: int = 5) -> dict:
    from inquitree.warehouse.sync import Warehouse, query_names

    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "w.duckdb")
        with Warehouse(path) as wh:
            t0 = time.perf_counter()
            r = wh.sync(url)
            synced = time.perf_counter() - t0
            episodes = wh.sql("SELECT count(*) FROM episodes").item()
            agents = wh.sql("SELECT list(DISTINCT agent ORDER BY agent) FROM episodes").item()
        rows = []
        with (
            Warehouse(path, read_only=True) as wh,
            Warehouse(path, read_only=True, bootstrap=Bootstrap(resamples=0)) as base,
        ):
            pair = {"agent_a": agents[0], "agent_b": agents[-1]}
            queries = [(q, pair if q == "compare" else None) for q in query_names()]
            for name, variables in queries:
                with_ci, point = [], []
                for _ in range(runs):  # alternated, so that both see the same machine
                    t = time.perf_counter()
                    wh.query(name, variables)
                    with_ci.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    base.query(name, variables)
                    point.append(time.perf_counter() - t)
                row = {
                    "query": name,
                    "intervals": name in INTERVAL_QUERIES or name == "compare",
                    "seconds_with_intervals": round(statistics.median(with_ci), 3),
                    "seconds_point_only": round(statistics.median(point), 3),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return {"events": r.events, "episodes": episodes, "sync_seconds": round(synced, 1), "runs": runs, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["coverage", "cost"])
    ap.add_argument("--campaigns", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--db")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.command == "coverage":
        result = coverage(args.campaigns, args.resamples)
        out = args.out or str(Path(__file__).parent / "results" / "intervals_coverage.json")
    else:
        if not args.db:
            ap.error("cost needs --db URL")
        result = cost(args.db)
        out = args.out or str(Path(__file__).parent / "results" / "intervals_cost.json")
    Path(out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
