"""Calls a cached re-run makes, with the endpoint up and down (issue: numbers that survive a reviewer).

A loopback OpenAI-compatible server that counts requests and, as llama.cpp's server does, answers
a ``json_schema`` response format with a 500, serves a campaign with a model agent and a model
judge and a call cache. The finished campaign then runs again into fresh stores with the same
cache: once with the server up (requests counted) and once with it stopped (every cell must still
finish). With ``--url`` the same is done against a real server (scripts/local-model.sh start),
through a loopback proxy that counts the requests and is stopped for the "down" run.

    python bench/cached_rerun.py [--runs 3] [--url URL --model NAME] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.core.run.campaign import Suite, run_suite
from inquitree.events.store import EventStore

from faultkit import model as agent_model
from openai_server import CountingProxy, OpenAICompatibleServer


def judged(messages: list[dict]) -> str:
    if "ground-truth" not in messages[0]["content"]:
        return agent_model(messages)
    return '{"score": 0.6, "rationale": "The direction is stated, the mechanism is not."}'


def campaign(d: Path, name: str, url: str, model: str, cache: Path, runs: int) -> dict:
    suite = d / f"{name}.toml"
    suite.write_text(
        f'name = "cached"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:{model}"]\njudges = ["openai:{model}"]\n'
        f'runs = {runs}\nembedder = "hash"\nmax_turns = 6\nbase_url = "{url}"\njudge_base_url = "{url}"\n'
        f'call_cache = "{cache}"\nconcurrency = 1\ntimeout = 120\n'
    )
    t0 = time.perf_counter()
    report = run_suite(Suite.load(suite), EventStore(f"sqlite:///{d / (name + '.sqlite')}"))
    return {"done": report.done, "failed": report.failed, "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--url", help="a real server (default: the counting loopback server)")
    ap.add_argument("--model", default="m")
    ap.add_argument("--out")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d, cache = Path(tmp), Path(tmp) / "calls.sqlite"
        if args.url:  # a counting proxy in front of it: the same URL for every run, stopped for the last
            endpoint: Any = CountingProxy(args.url)
        else:
            endpoint = OpenAICompatibleServer(judged)
            endpoint.reject_format = {"json_schema"}
        with endpoint:
            first = campaign(d, "first", endpoint.base_url, args.model, cache, args.runs)
            first["requests"] = len(endpoint.requests)
            up = campaign(d, "up", endpoint.base_url, args.model, cache, args.runs)
            up["requests"] = len(endpoint.requests) - first["requests"]
        down = campaign(d, "down", endpoint.base_url, args.model, cache, args.runs)  # nothing listens there now
    result = {
        "server": args.url or "loopback, json_schema answered with a 500 as llama.cpp's server does",
        "cells": args.runs,
        "first_run": first,
        "rerun_endpoint_up": up,
        "rerun_endpoint_down": down,
        "note": "requests counted at the endpoint's URL (with --url, a counting proxy in front of the real "
        "server); for the down run nothing listens there",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
