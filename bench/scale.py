"""How each command's CPU time and peak memory grow with the store: it grows one store to each size
(100k, 1M and 5M events by default, a campaign's shape: ``bench/warehouse.py generate``) and runs
every command a lab runs on a store of that size, each in a process of its own, as a user runs it.

    python bench/scale.py [--sizes 100000,1000000,5000000] [--keep DIR] [--out bench/results/scale.json]

Per command and size: CPU seconds (user and system, of the command and the processes it waits for,
from ``wait4``: the machine is shared, and CPU time is what the command asks of it) and the
command's own peak RSS (its ``VmHWM`` when it exits: a child's ``ru_maxrss`` can carry its
parent's). The commands: a full ``warehouse sync`` into a new warehouse, a sync with nothing new,
``query table2_leaderboard``, ``compare`` of two agents, ``report``, ``episodes list`` and
``db verify``; and ``inquitree --version`` beside them, the start-up every command pays. The table
it prints is the one docs/performance.md quotes; every run is kept in ``--out`` with its commit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from needs import code_commit, keep_run  # bench/needs.py

# The command runs in this wrapper, which writes its own peak RSS to the file named by argv[1]
# when it exits (also when the command exits through SystemExit, as click's commands do).
WRAPPER = """
import atexit, sys
def peak(path):
    hwm = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024
    open(path, "w").write(str(hwm))
atexit.register(peak, sys.argv[1])
from inquitree.cli import main
sys.argv = ["inquitree", *sys.argv[2:]]
main()
"""


def measured(args: list[str], cwd: Path) -> dict:
    """CPU seconds and peak RSS (MB) of ``inquitree ARGS``, run in a process of its own."""
    peak_file = cwd / "peak.txt"
    peak_file.unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, str(peak_file), *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    return {
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "wall_s": round(time.perf_counter() - t0, 2),
        "peak_mb": int(peak_file.read_text()) if peak_file.exists() else None,
        # a command that fails at this size is a result too (the table says so), not the bench's end
        **(
            {"failed": (err.strip().splitlines() or ["exit " + str(proc.returncode)])[-1][:300]}
            if proc.returncode
            else {}
        ),
    }


def grow(url: str, events: int) -> int:
    """Grow the store at ``url`` to at least ``events`` events (a campaign caught part way)."""
    from inquitree.events.store import EventStore
    from warehouse import generate  # bench/warehouse.py

    with EventStore(url) as store:
        have = store.last_position()
        if 0 < have < events:
            raise SystemExit(f"{url} holds {have:,} events, fewer than {events:,}: remove it to grow it again")
        if not have:
            generate(store, events, campaign="scale")
        return store.last_position()


def commands(url: str, warehouse: str, report: Path) -> list[tuple[str, list[str]]]:
    db, wh = ["--db", url], ["--warehouse", warehouse]
    return [
        ("--version", ["--version"]),
        ("full warehouse sync", ["warehouse", "sync", *db, *wh]),
        ("warehouse sync, nothing new", ["warehouse", "sync", *db, *wh]),
        ("query table2_leaderboard", ["query", "table2_leaderboard", *wh, *db]),
        ("compare oracle random-1", ["compare", "oracle", "random-1", *wh]),
        ("report", ["report", *db, *wh, "--out", str(report)]),
        ("episodes list", ["episodes", "list", *db]),
        ("db verify", ["db", "verify", *db]),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000,5000000", help="store sizes in events, comma-separated")
    ap.add_argument("--keep", help="make and keep the stores in this folder (a later run reuses them)")
    ap.add_argument("--out", help="add the results to this JSON file's runs")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    result: dict = {"measured_at": started, "commit": code_commit(), "sizes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for size in sizes:
            url = f"sqlite:///{work / f'store-{size}.sqlite'}"
            events = grow(url, size)
            warehouse = Path(tmp) / f"w-{size}.duckdb"
            report = Path(tmp) / f"report-{size}"
            for f in Path(tmp).glob(f"w-{size}.duckdb*"):
                f.unlink() if f.is_file() else shutil.rmtree(f)
            rows = {name: measured(argv, Path(tmp)) for name, argv in commands(url, str(warehouse), report)}
            result["sizes"][str(size)] = {"events": events, "commands": rows}
            print(f"  {events:,} events measured", file=sys.stderr)
    print(table(result))
    for size, measured_size in result["sizes"].items():
        for name, r in measured_size["commands"].items():
            if r.get("failed"):
                print(f"at {int(size):,} events `{name}` failed: {r['failed']}")
    if args.out:
        keep_run(args.out, result)


def table(result: dict) -> str:
    """The growth table: a row per command, a column per size, ``CPU-s (peak MB)`` in each cell."""
    sizes = list(result["sizes"])
    head = "| command | " + " | ".join(f"{int(result['sizes'][s]['events']):,} events" for s in sizes) + " |"
    lines = [head, "|---|" + "---|" * len(sizes)]
    names = list(result["sizes"][sizes[0]]["commands"])
    for name in names:
        cells = []
        for s in sizes:
            r = result["sizes"][s]["commands"][name]
            failed = " **failed**" if r.get("failed") else ""
            cells.append(f"{r['cpu_s']:.2f} ({r['peak_mb']} MB){failed}")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
