"""Engine benchmark (issue: the game engine).

In one process:
  1. engine only: steps/s of Engine.step with the cosines already computed,
  2. engine + matching: the same episodes with cosines computed from cached
     embeddings (the local model's vectors, served from the cache: no model call),
  3. engine + matching + recording: every step appended to a SQLite store,
     giving the recording overhead per step,
  4. replay of a 77-step episode (the always-miss script on the 7-chain):
     read, hash-chain check, fold and re-simulation.

    python bench/engine.py [--episodes 300]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.core.agents import RandomAgent, ScriptAgent  # noqa: E402
from inquitree.core.embed import CachedEmbedder, LocalEmbedder  # noqa: E402
from inquitree.core.engine import DONE, Engine, extract_action, fold  # noqa: E402
from inquitree.core.replay import resimulate  # noqa: E402
from inquitree.core.runner import cosines, run_episode, stream_id  # noqa: E402
from inquitree.core.templates import TemplateSet  # noqa: E402
from inquitree.core.tree import resolve_tree  # noqa: E402
from inquitree.events.store import EventStore  # noqa: E402

from enginekit import always_miss_script, params  # noqa: E402


def record_inputs(tree, emb, p, templates, seeds):
    """Play random-agent episodes once, keeping each step's reply and cosines."""
    episodes = []
    for seed in seeds:
        agent = RandomAgent(tree, seed)
        engine = Engine(tree, p, templates)
        state = fold(engine.start(f"e{seed}", {}, {}, "bench"))
        inputs = []
        while state.state != DONE:
            reply = agent.reply(state.last_observation, state.state, state.step + 1)
            action = extract_action(reply.text)
            cos = cosines(emb, action, engine.candidates(state)) if engine.needs_cosines(state) else None
            inputs.append((reply, cos))
            state = fold(engine.step(state, reply, cos), state)
        episodes.append(inputs)
    return episodes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=300)
    ap.add_argument("--out")
    args = ap.parse_args()
    tree = resolve_tree("synthetic-chain-7")
    templates = TemplateSet()
    with tempfile.TemporaryDirectory() as d:
        emb = CachedEmbedder(LocalEmbedder(), Path(d) / "cache.sqlite")
        p = params(tree, emb, randomness=5, max_turns=10_000)
        episodes = record_inputs(tree, emb, p, templates, range(args.episodes))  # warms the cache too
        steps = sum(len(e) for e in episodes)

        t0 = time.perf_counter()
        for inputs in episodes:
            engine = Engine(tree, p, templates)
            state = fold(engine.start("e", {}, {}, "bench"))
            for reply, cos in inputs:
                state = fold(engine.step(state, reply, cos), state)
        engine_only = time.perf_counter() - t0

        t0 = time.perf_counter()
        for inputs in episodes:
            engine = Engine(tree, p, templates)
            state = fold(engine.start("e", {}, {}, "bench"))
            for reply, _ in inputs:
                action = extract_action(reply.text)
                cos = cosines(emb, action, engine.candidates(state)) if engine.needs_cosines(state) else None
                state = fold(engine.step(state, reply, cos), state)
        with_matching = time.perf_counter() - t0

        store = EventStore(f"sqlite:///{Path(d) / 'bench.sqlite'}")
        n_rec = min(100, args.episodes)
        rec_steps = sum(len(e) for e in episodes[:n_rec])
        t0 = time.perf_counter()
        for i, inputs in enumerate(episodes[:n_rec]):
            engine = Engine(tree, p, templates)
            start = engine.start(f"r{i}", {}, {}, "bench")
            version = store.append(stream_id(f"r{i}"), start, 0)
            state = fold(start)
            for reply, _ in inputs:
                action = extract_action(reply.text)
                cos = cosines(emb, action, engine.candidates(state)) if engine.needs_cosines(state) else None
                new = engine.step(state, reply, cos)
                version = store.append(stream_id(f"r{i}"), new, version)
                state = fold(new, state)
        recorded = time.perf_counter() - t0
        matching_per_step = with_matching / steps

        script = always_miss_script(tree, 4, Path(d) / "miss.txt")
        out = run_episode(tree, ScriptAgent(script), None, emb, params(tree, emb), templates, store, "ep-77")
        assert out.state.step == 77
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            events = [r.event for r in store.read_stream(stream_id("ep-77"))]
            ok = store.verify(stream_id=stream_id("ep-77")).ok and resimulate(events).identical
            times.append(time.perf_counter() - t0)
            assert ok
        store.close()
        result = {
            "steps_measured": steps,
            "engine_only_steps_per_s": round(steps / engine_only),
            "engine_plus_cached_matching_steps_per_s": round(steps / with_matching),
            "recorded_steps_per_s": round(rec_steps / recorded),
            "recording_overhead_ms_per_step": round((recorded / rec_steps - matching_per_step) * 1000, 3),
            "replay_77_step_episode_ms": {
                "events": len(events),
                "median": round(sorted(times)[len(times) // 2] * 1000, 1),
                "min": round(min(times) * 1000, 1),
            },
        }
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
