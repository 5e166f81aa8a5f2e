"""How long a slow-drip endpoint holds one call and one episode (issue: numbers that survive a reviewer).

A loopback server answers every chat call with a valid reply sent one byte at a time
(``tests/openai_server.py``, fault ``drip``), so each socket read is quick and only a deadline for
the whole attempt stops it. Measured with the default call settings (timeout 60 s, 2 retries: the
stated bound is 240 s) and with ``--timeout 5 --max-retries 0`` (the issue's case: 221 s before).

    python bench/slow_drip.py [--drip 1.0] [--quick] [--out bench/results/slow_drip.json]

``--quick`` (the smoke test) uses a fast drip and small timeouts, in a few seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.core.calls.settings import CallSettings
from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent

from faultkit import model
from openai_server import OpenAICompatibleServer


def held_call(fault: str, settings: CallSettings, drip: float = 1.0) -> dict:
    """How long one agent call is held by a loopback server with ``fault`` (``drip``, ``hang``)."""
    with OpenAICompatibleServer(model) as server:
        server.fail_after, server.drip_seconds = (0, fault), drip
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, settings))
        t0 = time.perf_counter()
        try:
            agent.reply("obs", "topic", 1)
            outcome = "answered"
        except Exception as exc:  # the outcome is what is measured
            outcome = f"{getattr(exc, 'kind', type(exc).__name__)}: {exc}"
        held = time.perf_counter() - t0
        attempts = len(server.requests)
    return {
        "held_s": round(held, 2),
        "attempts": attempts,
        "stated_bound_s": settings.worst_case_seconds(),
        "outcome": outcome,
    }


def one_call(drip: float, settings: CallSettings) -> dict:
    return {"timeout": settings.timeout, "max_retries": settings.max_retries, **held_call("drip", settings, drip)}


def one_episode(drip: float, timeout: float | None, retries: int | None) -> dict:
    """`inquitree play` against the drip server, as a user runs it."""
    from click.testing import CliRunner

    from inquitree.cli import main

    with tempfile.TemporaryDirectory() as d, OpenAICompatibleServer(model) as server:
        server.fail_after, server.drip_seconds = (0, "drip"), drip
        args = ["play", "--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash", "--record"]
        args += ["--db", f"sqlite:///{d}/e.sqlite", "-q"]
        if timeout is not None:
            args += ["--timeout", str(timeout), "--max-retries", str(retries)]
        t0 = time.perf_counter()
        out = CliRunner().invoke(main, args)
        held = time.perf_counter() - t0
    last = [ln for ln in out.output.splitlines() if ln.strip()][-1:] or [""]
    return {"held_s": round(held, 2), "exit_code": out.exit_code, "last_line": last[0][:160]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drip", type=float, default=1.0, help="seconds between the bytes of an answer")
    ap.add_argument("--quick", action="store_true", help="a smoke run: fast drip, small timeouts")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        result = {"drip_s": 0.02, "call": one_call(0.02, CallSettings(timeout=0.5, max_retries=1))}
    else:
        result = {
            "drip_s": args.drip,
            "call_defaults": one_call(args.drip, CallSettings()),
            "call_timeout_5_no_retry": one_call(args.drip, CallSettings(timeout=5, max_retries=0)),
            "episode_defaults": one_episode(args.drip, None, None),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
