"""What the intervals cost a query: every query in ``queries/`` over a store, with its intervals
and with the estimates alone (``Settings(point_only=True)``: the same SQL, the interval
functions returning the estimate only), alternated in the same process (median of 5).

    python bench/intervals.py cost --db URL [--out FILE]

Whether the intervals hold their rate is ``studies/stats_sim.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from inquitree.warehouse.intervals import Settings

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
            Warehouse(path, read_only=True, settings=Settings(point_only=True)) as base,
        ):
            pair = {"agents": [agents[0], agents[-1]], "one_off": True}
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
    ap.add_argument("command", choices=["cost"])
    ap.add_argument("--db", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    result = cost(args.db)
    out = args.out or str(Path(__file__).parent / "results" / "intervals_cost.json")
    Path(out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
