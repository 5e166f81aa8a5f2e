"""Peak memory of a full warehouse sync against the memory setting (issue: recording at engine
speed, item 4).

    python bench/warehouse_memory.py --db URL [--db URL2 ...] [--out bench/results/warehouse_memory.json]

For each store and each setting, one full sync into a fresh DuckDB file in a child process of
its own, which reports its wall seconds and its peak RSS (getrusage; the ADBC reader child, a
process of its own, separately). "before" is the fixed windows this code had (1M events staged,
2M per commit) with DuckDB's own memory limit (80% of RAM). Make the stores with
``python bench/warehouse.py generate``; a 4M-event store can be four copies of a 1M one under
new episode ids.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SETTINGS = ["before", "320MB", "256MB", "384MB", "512MB"]

# A child's own peak RSS, for the child scripts of the benches: ru_maxrss would count its parent's,
# which a child started by vfork and exec inherits on Linux
PEAK = """
def peak_mb():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024
"""

CHILD = (
    PEAK
    + """
import json, os, resource, sys, tempfile, time
from pathlib import Path
url, setting = sys.argv[1], sys.argv[2]
from inquitree.warehouse.warehouse import Warehouse
from inquitree.warehouse.sync import COMMIT_ROWS, FLUSH_ROWS
kw = {"flush_rows": FLUSH_ROWS, "commit_rows": COMMIT_ROWS} if setting == "before" else {}
memory = "16GB" if setting == "before" else setting
with tempfile.TemporaryDirectory() as d:
    t = time.perf_counter()
    with Warehouse(str(Path(d) / "w.duckdb"), memory=memory) as wh:
        r = wh.sync(url, **kw)
    wall = time.perf_counter() - t
print(json.dumps({"events": r.events, "seconds": round(wall, 2),
                  "peak_rss_mb": peak_mb(),
                  "reader_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024}))
"""
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", action="append", required=True)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "warehouse_memory.json"))
    ap.add_argument("--quick", action="store_true", help="the smoke run: the default setting only")
    args = ap.parse_args()
    runs = []
    settings = ["320MB"] if args.quick else SETTINGS
    for url in args.db:
        for setting in settings:
            out = subprocess.run([sys.executable, "-c", CHILD, url, setting], capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr[-2000:])
            row = {"store": url, "setting": setting, **json.loads(out.stdout.splitlines()[-1])}
            runs.append(row)
            print(json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps({"settings": settings, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
