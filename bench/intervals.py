"""Intervals benchmark (issue: results a paper can cite; numbers that survive a reviewer).

    python bench/intervals.py coverage [--campaigns 1000]     # how often the 95% interval covers,
                                                              # and the paired test's size
    python bench/intervals.py cost --db URL                   # each query's time with intervals

``coverage`` simulates campaigns whose truth is known (``tests/campaignsim.py``: few papers,
IT-18-like, unbalanced, skewed and 0/1 designs) and asks how often the interval of
``warehouse/bootstrap.py`` covers the true mean: the method a row gets by default (#25 as
revised: the t interval on paper means below 8 papers, the expanded-percentile cluster
bootstrap from 8), beside the plain percentile bootstrap over trees that every row had before.
Then the paired test's size (#26 as revised): how often it rejects at 5% when papers differ in
their true difference and the mean difference is 0, flipping papers' mean differences (now)
or single pairs (before).

``cost`` syncs the store into a fresh warehouse and times every query in ``queries/`` (median
of 5), beside the same query with resampling switched off (``resamples=0``: the point estimates
only, through the same functions) in the same process; queries without intervals take the same
time in both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.warehouse.bootstrap import Bootstrap

from campaignsim import DESIGNS, PAIRED_DESIGNS, TRUE_MEAN, coverage, pair_level_flips, paired_rejections

SCHEMES = [
    ("default: t on paper means below 8 papers, else expanded-percentile bootstrap over trees", {}),
    ("before: percentile bootstrap over trees at any size", {"t_below": 0, "expanded": False}),
]


def coverage_table(campaigns: int, resamples: int) -> dict:
    rows = []
    for design in DESIGNS:
        for scheme, options in SCHEMES:
            t0 = time.perf_counter()
            share, width = coverage(Bootstrap(resamples=resamples, seed=0, **options), design, campaigns)
            row = {
                "design": design.name,
                "scheme": scheme,
                "papers": design.papers,
                "runs": design.runs,
                "campaigns": campaigns,
                "coverage": round(share, 4),
                "coverage_se": round((share * (1 - share) / campaigns) ** 0.5, 4),
                "median_width": round(width, 4),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    size = []
    for design in PAIRED_DESIGNS:
        for test_name, test in (
            ("papers' mean differences flipped (now)", Bootstrap().sign_flip_p),
            ("single pairs flipped (before)", pair_level_flips()),
        ):
            rate = paired_rejections(test, design, campaigns)
            row = {"design": design.name, "test": test_name, "campaigns": campaigns, "rejected_at_5pct": round(rate, 4)}
            size.append(row)
            print(json.dumps(row), flush=True)
    return {"true_mean": TRUE_MEAN, "resamples": resamples, "rows": rows, "paired_test_size": size}


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
    from inquitree.warehouse.warehouse import Warehouse, query_names

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
        result = coverage_table(args.campaigns, args.resamples)
        out = args.out or str(Path(__file__).parent / "results" / "intervals_coverage.json")
    else:
        if not args.db:
            ap.error("cost needs --db URL")
        result = cost(args.db)
        out = args.out or str(Path(__file__).parent / "results" / "intervals_cost.json")
    Path(out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
