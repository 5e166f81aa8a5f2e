"""The real-model issue's fault matrix: a small campaign against a loopback server that turns
faulty after a few calls. Shared by tests/test_faults.py and bench/faults.py."""

from __future__ import annotations

import time
from pathlib import Path

from inquitree.core.run.campaign import Suite, run_suite
from inquitree.core.run.runner import STREAM_PREFIX
from inquitree.events.store import EventStore

from openai_server import OpenAICompatibleServer

# fault -> (the kind of the recorded failure, or None when the episode finishes; permanent?)
FAULTS: dict[object, tuple[str | None, bool]] = {
    "wrong_shape": ("wrong_shape", True),
    "html": ("malformed", True),
    "empty_body": ("malformed", True),
    "empty": ("empty", True),
    "truncated": ("connection", True),
    "close": ("connection", True),
    "hang": ("timeout", True),
    500: ("server_error", True),
    400: ("bad_request", True),
    429: ("rate_limit", True),
    "context": ("context_length", True),
    "retry_after": (None, False),  # one 429 with Retry-After: 1, then normal service
}


def model(messages: list[dict]) -> str:
    obs = messages[-1]["content"]
    return (
        "ACTION: (1) x"
        if "numbered" in obs
        else "ACTION: draw_conclusion"
        if "results are as follows" in obs
        else "THOUGHT: t\nACTION: something"
    )


def run_fault(
    fault, workdir: Path, cells: int = 2, good_calls: int = 2, timeout: float = 0.5, max_retries: int = 1
) -> dict:
    """Run a ``cells``-cell campaign whose server fails every chat call after ``good_calls`` (or,
    for a transient fault, fails once). Returns what happened to every cell."""
    workdir.mkdir(parents=True, exist_ok=True)
    name = f"f-{str(fault).replace('_', '-')}"
    suite_path = workdir / f"{name}.toml"
    url = f"sqlite:///{workdir / (name + '.sqlite')}"
    with OpenAICompatibleServer(model) as server:
        suite_path.write_text(
            f'name = "{name}"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nruns = {cells}\n'
            f'embedder = "hash"\nmax_turns = 3\nretries = 0\nconcurrency = {cells}\ntimeout = {timeout}\n'
            f'max_retries = {max_retries}\nbase_url = "{server.base_url}"\n'
        )
        if FAULTS[fault][1]:
            server.fail_after = (good_calls, fault)
        else:
            server.faults = [fault]
        t0 = time.perf_counter()
        report = run_suite(Suite.load(suite_path), EventStore(url))
        wall = time.perf_counter() - t0
        requests = len(server.requests)
    ended = {}
    with EventStore(url) as store:
        for s in store.streams(prefix=STREAM_PREFIX):
            last = store.read_stream(s.stream_id)[-1].event
            ended[s.stream_id] = (
                {"outcome": "failed", "kind": last.kind, "retryable": last.retryable, "error": last.error}
                if last.TYPE == "EpisodeFailed"
                else {"outcome": last.TYPE}
            )
    return {
        "fault": str(fault),
        "cells": report.cells,
        "done": report.done,
        "failed": report.failed,
        "errors": report.errors,
        "episodes": ended,
        "wall_s": round(wall, 2),
        "requests": requests,
        "suite": str(suite_path),
        "db": url,
    }
