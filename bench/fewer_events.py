"""What fewer events per step would save the store (issue: recording at engine speed).

A design question, not a change: a step records about 5.2 events (the agent's reply, the match,
the transition, the observation, and hints, blocks and draws where they happen). This bench
plays a 600-episode `suite run` (random agent, local embedder, into a fresh SQLite store), then
measures the store's own work for its rows as they are and for the same content with each
step's MatchScored and Transitioned folded into that step's AgentReplied (their payloads kept
under the reply's payload): the rows inserted by raw sqlite3 into the store's schema with its
pragmas and page size (an append per episode, user + system CPU), the two hash chains
(``_rows``), and each payload's JSON (orjson over the parsed payload, keys sorted, for both).
The two layouts are alternated, three times each; CPU per step, medians.

    python bench/fewer_events.py [--episodes 600] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import orjson
from engine import chains_cpu, insert_cpu, read_streams  # bench/engine.py: the store floor's parts

from inquitree.events.backends.sqlite import SQLITE_PAGE_SIZE

FOLDED = ("MatchScored", "Transitioned")


def suite_store(d: Path, episodes: int) -> Path:
    """A fresh store of a random-agent campaign (the embedding cache warmed by a first run)."""
    from inquitree.core.run.campaign import Suite, run_suite
    from inquitree.events.store import EventStore

    os.environ["INQUITREE_CACHE"] = str(d / "cache")
    suite = d / "suite.toml"
    suite.write_text(
        f'name = "e2e"\ntrees = ["synthetic-chain-7"]\nagents = ["random"]\nrandomness = [5]\nruns = {episodes}\n'
        'embedder = "local"\nconcurrency = 1\n'
    )
    for name in ("warm.sqlite", "run.sqlite"):
        with EventStore(f"sqlite:///{d / name}") as store:
            run_suite(Suite.load(suite), store)
    return d / "run.sqlite"


def layouts(db: Path) -> tuple[dict[str, list[tuple]], dict[str, list[tuple]], int, list[str]]:
    """(streams as stored, streams folded, steps, the schema's SQL): each stream's rows in order,
    their positions left to SQLite in both."""
    read, schema = read_streams(db)
    stored = {sid: [(None, *r[1:]) for r in rows] for sid, rows in read.items()}
    steps = sum(1 for rows in stored.values() for r in rows if r[3] == "AgentReplied")
    folded: dict[str, list[tuple]] = {}
    for sid, rows in stored.items():
        out: list[list] = []
        reply = None  # the current step's AgentReplied payload, parsed (None before the first step)
        for r in rows:
            if r[3] in FOLDED and reply is not None:
                reply[r[3]] = json.loads(r[6])
                continue
            row = list(r)
            if r[3] == "AgentReplied":  # a step begins with the reply; what follows it is the step's
                reply = json.loads(r[6])
                row[6] = reply
            out.append(row)
        folded[sid] = []
        for version, row in enumerate(out, start=1):
            payload = row[6] if isinstance(row[6], str) else orjson.dumps(row[6], option=orjson.OPT_SORT_KEYS).decode()
            folded[sid].append((None, sid, version, row[3], row[4], row[5], payload, *row[7:]))
    return stored, folded, steps, schema


def json_cpu(streams: dict[str, list[tuple]]) -> float:
    payloads = [json.loads(r[6]) for rows in streams.values() for r in rows]
    c0 = time.process_time()
    for p in payloads:
        orjson.dumps(p, option=orjson.OPT_SORT_KEYS)
    return time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=600)
    ap.add_argument("--out")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        stored, folded, steps, schema = layouts(suite_store(d, args.episodes))
        runs: dict[str, dict[str, list[float]]] = {"as_stored": {}, "folded": {}}
        for _ in range(3):
            for name, streams in (("as_stored", stored), ("folded", folded)):
                r = runs[name]
                r.setdefault("sqlite_rows", []).append(
                    sum(insert_cpu(streams, schema, d / "floor.sqlite", SQLITE_PAGE_SIZE))
                )
                r.setdefault("hash_chains", []).append(chains_cpu(streams))
                r.setdefault("json", []).append(json_cpu(streams))
    result: dict = {"steps": steps}
    for name, streams in (("as_stored", stored), ("folded", folded)):
        per = {k: round(statistics.median(v) / steps * 1e6, 1) for k, v in runs[name].items()}
        per["total"] = round(sum(per.values()), 1)
        events = sum(len(rows) for rows in streams.values())
        result[name] = {"events": events, "events_per_step": round(events / steps, 2), "us_per_step": per}
    result["saved_us_per_step"] = round(
        result["as_stored"]["us_per_step"]["total"] - result["folded"]["us_per_step"]["total"], 1
    )
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
