"""Warehouse benchmark (issue: the warehouse).

    python bench/warehouse.py generate --db URL --events 1000000   # simulated episodes into a store
    python bench/warehouse.py measure --db URL                     # sync and query times

``generate`` plays real episodes (random and oracle agents, randomness 0-9, many
seeds, the three synthetic trees, the hash embedder) in memory and appends each
whole episode in one append. ``measure`` does a full sync into a fresh DuckDB
file, an incremental sync of 1,000 new events, and times every query in
``queries/`` (median of 5).
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

from enginekit import OracleAgent, RandomAgent, play  # noqa: E402

from inquitree.core.runner import stream_id  # noqa: E402
from inquitree.core.tree import resolve_tree  # noqa: E402
from inquitree.events.store import EventStore  # noqa: E402
from inquitree.warehouse.sync import Warehouse, query_names  # noqa: E402

TREES = ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7")


def generate(store: EventStore, events: int, start_seed: int = 0) -> int:
    trees = [resolve_tree(t) for t in TREES]
    written, i = 0, start_seed
    t0 = time.perf_counter()
    while written < events:
        tree = trees[i % 3]
        agent = OracleAgent(tree) if i % 5 == 0 else RandomAgent(tree, i)
        out = play(tree, agent, seed=i, randomness=(i // 3) % 10)
        eid = f"bench-{i:07d}"
        evs = [out.events[0].__class__(**{**out.events[0].to_payload(), "episode_id": eid})] + out.events[1:]
        store.append(stream_id(eid), evs, 0)
        written += len(evs)
        i += 1
        if i % 500 == 0:
            print(f"  {written:,} events, {i:,} episodes, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return written


def measure(url: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "w.duckdb")
        with Warehouse(path) as wh:
            full = wh.sync(url)
        store = EventStore(url)
        before = store.last_position()
        generate(store, 1000, start_seed=10_000_000 + before)  # fresh episode ids on every run
        new = store.last_position() - before
        store.close()
        with Warehouse(path) as wh:
            inc = wh.sync(url)
            queries = {}
            for name in query_names():
                times = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    df = wh.query(name)
                    times.append(time.perf_counter() - t0)
                queries[name] = {"median_s": round(statistics.median(times), 3), "rows": df.height}
        return {"source": url.split("://")[0], "full_sync_events": full.events, "full_sync_s": round(full.seconds, 2),
                "full_sync_s_per_1M": round(full.seconds / full.events * 1e6, 2),
                "incremental_events": inc.events, "incremental_new_in_store": new,
                "incremental_sync_ms": round(inc.seconds * 1000, 1), "queries": queries}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["generate", "measure"])
    ap.add_argument("--db", required=True)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.command == "generate":
        with EventStore(args.db) as store:
            t0 = time.perf_counter()
            n = generate(store, args.events)
            print(f"generated {n:,} events in {time.perf_counter() - t0:.0f} s")
        return
    result = measure(args.db)
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
