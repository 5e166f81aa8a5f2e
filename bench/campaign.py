"""Campaign benchmark (issue: evaluation campaigns).

1. Concurrency: 128 episodes of an OpenAI-compatible agent against a loopback server that
   answers every call after a fixed delay, 64 in flight. Ideal wall time = total delay / 64.
2. Resume cost: a campaign of 1,000 episodes with one cell still to run; the time from the
   restart (run_suite called) to the first new event appended, and to the end.

    python bench/campaign.py [--delay 0.2]
    python bench/campaign.py --workers-only --out bench/results/campaign_workers.json
    python bench/campaign.py --transports --out bench/results/campaign_transports.json

``--transports``: one process, 512 episodes at 0.2 s, the model calls over the direct HTTP
transport (core/calls/chat_http.py) against the OpenAI SDK's (``INQUITREE_CHAT_HTTP=sdk``), alternated
twice, with the campaign's CPU time beside its wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.core.run.campaign import Suite, run_suite
from inquitree.events.store import EventStore


def model(messages):
    return "ACTION: (1) nothing" if "numbered" in messages[-1]["content"] else "THOUGHT: hm\nACTION: not sure yet"


def concurrency(
    d: Path, delay: float, in_flight: int = 64, episodes: int = 128, turns: int = 5, workers: int = 1
) -> dict:
    """The server runs in its own process, as a real endpoint would. With ``workers`` > 1 the
    campaign runs as `inquitree suite run --workers W -j in_flight/W` (start-up included)."""
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve().parent.parent / "tests" / "openai_server.py"), str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        d.mkdir(parents=True, exist_ok=True)
        suite = d / "c.toml"
        suite.write_text(
            f'name = "conc"\ntrees = ["synthetic-chain-7"]\nagents = ["openai:m"]\nruns = {episodes}\n'
            f'embedder = "hash"\nmax_turns = {turns}\nconcurrency = {in_flight}\n'
            f'base_url = "{base_url}"\n'
        )
        store = EventStore(f"sqlite:///{d / 'c.sqlite'}")
        t0 = time.perf_counter()
        if workers == 1:
            report_done = run_suite(Suite.load(suite), store).done
        else:
            cmd = [sys.executable, "-m", "inquitree", "suite", "run", str(suite), "--db", store.url]
            cmd += ["--workers", str(workers), "-j", str(in_flight // workers)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            report_done = sum(int(ln.split(" done now")[0].rsplit(", ", 1)[1]) for ln in out.splitlines())
        wall = time.perf_counter() - t0
        calls = sum(
            1 for s in store.streams() for r in store.read_stream(s.stream_id) if r.event_type == "AgentReplied"
        )
        store.close()
    finally:
        server.kill()
        server.wait()
    assert report_done == episodes, report_done
    ideal = calls * delay / in_flight
    return {
        "episodes": episodes,
        "in_flight": in_flight,
        "workers": workers,
        "calls": calls,
        "delay_s": delay,
        "wall_s": round(wall, 2),
        "ideal_s": round(ideal, 2),
        "ratio_to_ideal": round(wall / ideal, 3),
    }


def resume_cost(d: Path, episodes: int = 1000) -> dict:
    suite = d / "r.toml"
    suite.write_text(
        f'name = "res"\ntrees = ["synthetic-diamond-4"]\nagents = ["random"]\nruns = {episodes}\n'
        'embedder = "hash"\nconcurrency = 2\n'
    )
    url = f"sqlite:///{d / 'r.sqlite'}"
    store = EventStore(url)
    t0 = time.perf_counter()
    run_suite(Suite.load(suite), store)
    first_run = time.perf_counter() - t0
    suite.write_text(suite.read_text().replace(f"runs = {episodes}", f"runs = {episodes + 1}"))
    first_new: list[float] = []
    real_append = store.append

    def timed_append(*a, **k):
        if not first_new:
            first_new.append(time.perf_counter())
        return real_append(*a, **k)

    store.append = timed_append
    t0 = time.perf_counter()
    report = run_suite(Suite.load(suite), store)
    total = time.perf_counter() - t0
    store.close()
    assert report.skipped == episodes and report.done == 1
    return {
        "finished_episodes": episodes,
        "first_run_s": round(first_run, 1),
        "restart_to_first_new_event_ms": round((first_new[0] - t0) * 1000, 1),
        "restart_total_ms": round(total * 1000, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--out")
    ap.add_argument("--transports", action="store_true", help="direct HTTP against the SDK, one process")
    ap.add_argument(
        "--workers-only",
        action="store_true",
        help="only one process against --workers 2 at 0.2 s and 0.05 s (512 episodes each)",
    )
    ap.add_argument("--quick", action="store_true", help="the smoke run: 8 episodes at 0.01 s, a 20-cell resume")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if args.quick:
            result = {
                "concurrency": concurrency(Path(d), 0.01, in_flight=4, episodes=8),
                "resume": resume_cost(Path(d), episodes=20),
            }
            print(json.dumps(result, indent=2))
            if args.out:
                Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
            return
        if args.transports:
            result = {}
            for rnd in (1, 2):
                for transport in ("sdk", "direct"):
                    os.environ["INQUITREE_CHAT_HTTP"] = transport
                    c0 = time.process_time()
                    r = concurrency(Path(d) / f"t-{transport}-{rnd}", 0.2, episodes=512)
                    r["client_cpu_s"] = round(time.process_time() - c0, 2)
                    result[f"{transport}_round_{rnd}"] = r
            print(json.dumps(result, indent=2))
            if args.out:
                Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
            return
        if args.workers_only:
            result = {
                f"delay_{delay}_workers_{w}": concurrency(Path(d) / f"w{w}-{delay}", delay, episodes=512, workers=w)
                for delay in (0.2, 0.05)
                for w in (1, 2)
            }
            print(json.dumps(result, indent=2))
            if args.out:
                Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
            return
        result = {
            "concurrency": concurrency(Path(d), args.delay),
            "concurrency_1s_delay": concurrency(Path(d) / "slow", 1.0) if args.delay != 1.0 else None,
            "resume": resume_cost(Path(d)),
        }
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
