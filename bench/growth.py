"""How the lab-scale numbers grow with the store: 250k to 4M events.

    python bench/warehouse.py generate --db sqlite:///s250k.sqlite --events 250000 --campaign bench
    ...  (the same at 1M, 2M and 4M)
    python bench/growth.py --db sqlite:///s250k.sqlite --db ... [--runs 5] [--out bench/results/growth.json]

For each store, each step in a child process of its own (so each peak RSS is that step's):

1. a full ``warehouse sync`` into a fresh DuckDB file: wall seconds and peak RSS (the reader child's
   peak separately);
2. the viewer's first start on that warehouse with no search index, as ``inquitree view`` starts:
   seconds until the home page answers, seconds until the index's background build ends, peak RSS;
3. the viewer's start on the existing index (seconds until the home page answers, peak RSS), then
   pages through Starlette's test client (median of ``--runs``, server side): the campaign grid, the
   home page, a common word and a rare phrase searched; then ``BENCH_APPEND`` more episodes are
   appended to the store and the viewer catches up (its incremental sync and index update, timed);
4. ``episodes list`` (bench/episodes_list.py): the newest page in this process, and as a user runs
   it, a new process each time, against ``inquitree --version``.

A SQLite store is copied first and measured as the copy (step 3 appends to it); another store is
appended to.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from episodes_list import timed, wall  # bench/episodes_list.py
from needs import need  # bench/needs.py
from warehouse_memory import CHILD as SYNC_CHILD  # bench/warehouse_memory.py
from warehouse_memory import PEAK  # each child's own peak RSS (this bench's process grows as it reads)

BENCH_APPEND = 20  # episodes appended while the viewer is open (step 3)

FIRST_START = (
    PEAK
    + """
import json, sys, time
from starlette.testclient import TestClient
from inquitree.viewer.app import create_app
path, url = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
app = create_app(path, url, index_in_background=True)
assert TestClient(app, base_url="http://127.0.0.1").get("/").status_code == 200
answered = time.perf_counter() - t0
if app.state.viewer.indexing is not None:
    app.state.viewer.indexing.join()
print(json.dumps({"home_answered_s": round(answered, 2), "index_built_s": round(time.perf_counter() - t0, 2),
                  "peak_rss_mb": peak_mb()}))
"""
)

RESTART = (
    PEAK
    + """
import json, statistics, sys, time
sys.path.insert(0, sys.argv[5])
from starlette.testclient import TestClient
from inquitree.core.game.tree import resolve_tree
from inquitree.core.run.runner import stream_id
from inquitree.events.store import EventStore
from inquitree.viewer.app import create_app
from enginekit import RandomAgent, play
path, url, runs, append = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t0 = time.perf_counter()
app = create_app(path, url, sync=True)  # as `inquitree view --sync`: it follows the store
client = TestClient(app, base_url="http://127.0.0.1")
assert client.get("/").status_code == 200
start = time.perf_counter() - t0
pages = {"campaign grid": ("/suites/bench", {})} if client.get("/api/suites/bench").status_code == 200 else {}
pages |= {"home": ("/", {}),
         "search, a common word": ("/search", {"q": "sleep"}),
         "search, a rare phrase": ("/search", {"q": "novel-object recognition"})}
ms = {}
for name, (route, params) in pages.items():
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        assert client.get(route, params=params).status_code == 200, route
        times.append(time.perf_counter() - t)
    ms[name] = round(statistics.median(times) * 1000, 1)
tree = resolve_tree("synthetic-chain-7")
with EventStore(url) as store:
    for i in range(append):
        out = play(tree, RandomAgent(tree, 10**6 + i), seed=10**6 + i, randomness=3)
        eid = f"growth-{i:04d}"
        store.append(stream_id(eid), [out.events[0].__class__(**{**out.events[0].to_payload(), "episode_id": eid}),
                                      *out.events[1:]], 0)
t = time.perf_counter()
assert app.state.viewer.catch_up(force=True)  # an incremental sync in the background, then the index
app.state.viewer.wait_for_sync()
caught_up = time.perf_counter() - t
assert client.get("/search", params={"q": "sleep"}).status_code == 200
print(json.dumps({"start_on_index_s": round(start, 2), "pages_ms": ms,
                  "catch_up_after_appending_s": round(caught_up, 2),
                  "peak_rss_mb": peak_mb()}))
"""
)


def child(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr[-3000:])
    return json.loads(out.stdout.splitlines()[-1])


def one_store(url: str, runs: int, folder: Path) -> dict:
    from inquitree.events.store import EventStore

    with EventStore(url, create=False) as store:
        events = store.last_position()
    row: dict = {"store": url, "events": events}
    if url.startswith("sqlite:///"):  # step 3 appends: to a copy (a warehouse is bound to its store)
        copy_path = folder / "copy.sqlite"
        shutil.copyfile(url.removeprefix("sqlite:///"), copy_path)
        url = f"sqlite:///{copy_path}"
    row["full sync (320MB setting)"] = child(SYNC_CHILD, url, "320MB")
    path = str(folder / "w.duckdb")
    subprocess.run(
        [sys.executable, "-m", "inquitree", "warehouse", "sync", "--db", url, "--warehouse", path],
        check=True,
        capture_output=True,
    )
    row["viewer, first start (no index)"] = child(FIRST_START, path, url)
    row["episodes list, newest page in-process s"] = timed(url, [], runs)["median_s"]
    row["episodes list, new process"] = wall(url, runs)
    tests = str(Path(__file__).resolve().parent.parent / "tests")
    row["viewer, restart on the index"] = child(RESTART, path, url, str(runs), str(BENCH_APPEND), tests)
    return row


def main() -> None:
    need("starlette", "httpx", "uvicorn")  # the viewer and its test client
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--db", action="append", required=True, help="a store (bench/warehouse.py generate --campaign bench)"
    )
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for url in args.db:
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            row = one_store(url, args.runs, Path(tmp))
            row["bench_s"] = round(time.perf_counter() - t0, 1)
            row["load_average_1min (before, after)"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "stores": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
