"""Engine benchmark (issue: the game engine).

In one process:
  1. engine only: steps/s of Engine.step with the cosines already computed,
  2. engine + matching: the same episodes with cosines computed from cached
     embeddings (the local model's vectors, served from the cache: no model call),
  3. engine + matching + recording: every step appended to a SQLite store,
     giving the recording overhead per step,
  4. replay of a 77-step episode (the always-miss script on the 7-chain):
     read, hash-chain check, fold and re-simulation,
  5. end to end: `suite run` (random agent, local embedder, warm cache), CPU per step against
     the CPU per step of 2 (the issue's goal: at most 2x): over a whole run (the embedder's load
     and the store's opening included), and per additional step (runs of N and 2N episodes:
     the difference of their CPU over the difference of their steps). Measured in --rounds
     rounds, each timing the baseline again just before and just after the suite runs (the
     machine is shared), and once more per round with the random agent's steps appended one by one, as a model
     agent's are (``per_step_appends``).

    python bench/engine.py [--episodes 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.core.game.engine import DONE, Engine, fold
from inquitree.core.game.prompts import TemplateSet
from inquitree.core.game.tree import resolve_tree
from inquitree.core.players.agents import RandomAgent, ScriptAgent
from inquitree.core.players.embed import CachedEmbedder, LocalEmbedder
from inquitree.core.run.replay import resimulate
from inquitree.core.run.runner import cosines, run_episode, stream_id
from inquitree.core.run.setup import EpisodeSetup, Recording
from inquitree.events.store import EventStore

from enginekit import always_miss_script, params


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
            action = engine.action_of(reply.text)
            cos = cosines(emb, action, engine.anchors(state)) if engine.needs_cosines(state) else None
            inputs.append((reply, cos))
            state = fold(engine.step(state, reply, cos), state)
        episodes.append(inputs)
    return episodes


def suite_cpu_per_step(d: Path, episodes: int, per_step_appends: bool = False) -> dict:
    """End to end: `suite run` with the random agent and the local embedder, the embedding cache
    warm (a first run fills it), into a fresh SQLite store. CPU of the whole process per step.
    ``per_step_appends``: the random agent is treated as not replayable, so each step is its own
    append (what recording costs a model agent, without the model)."""
    import os

    from inquitree.core.run.campaign import Suite, run_suite

    os.environ["INQUITREE_CACHE"] = str(d / "suite-cache")
    RandomAgent.replayable = not per_step_appends

    def suite(runs: int) -> Path:
        path = d / f"e2e-{runs}.toml"
        path.write_text(
            f'name = "e2e"\ntrees = ["synthetic-chain-7"]\nagents = ["random"]\nrandomness = [5]\nruns = {runs}\n'
            'embedder = "local"\nconcurrency = 1\n'
        )
        return path

    if not (d / "warm.sqlite").exists():
        with EventStore(f"sqlite:///{d / 'warm.sqlite'}") as store:  # warm for both runs' episodes
            run_suite(Suite.load(suite(2 * episodes)), store)
    runs = []
    for n in (episodes, 2 * episodes):
        for leftover in d.glob(f"e2e-{n}.sqlite*"):
            leftover.unlink()
        with EventStore(f"sqlite:///{d / f'e2e-{n}.sqlite'}") as store:
            c0 = time.process_time()
            report = run_suite(Suite.load(suite(n)), store)
            cpu = time.process_time() - c0
            steps = sum(
                1 for s in store.streams() for r in store.read_stream(s.stream_id) if r.event_type == "AgentReplied"
            )
        assert report.done == n
        runs.append((cpu, steps))
    RandomAgent.replayable = True
    (cpu1, steps1), (cpu2, steps2) = runs
    floor = store_floor(d / f"e2e-{2 * episodes}.sqlite", steps2) if not per_step_appends else None
    return {
        "episodes": episodes,
        "steps": steps1,
        "cpu_us_per_step": round(cpu1 / steps1 * 1e6, 1),
        "episodes_2n": 2 * episodes,
        "steps_2n": steps2,
        "cpu_us_per_step_2n": round(cpu2 / steps2 * 1e6, 1),
        "marginal_cpu_us_per_step": round((cpu2 - cpu1) / (steps2 - steps1) * 1e6, 1),
        "fixed_cpu_s": round(cpu1 - (cpu2 - cpu1) / (steps2 - steps1) * steps1, 3),
        "store_floor_us_per_step_2n": floor,
    }


def read_streams(db: Path) -> tuple[dict[str, list[tuple]], list[str]]:
    """Every stream's rows in ``db`` (in order, every column) and the events table's SQL."""
    import sqlite3

    src = sqlite3.connect(db)
    schema = [sql for (sql,) in src.execute("SELECT sql FROM sqlite_master WHERE name = 'events'")]
    streams: dict[str, list[tuple]] = {}
    for row in src.execute("SELECT * FROM events ORDER BY global_position"):
        streams.setdefault(row[1], []).append(row)
    src.close()
    return streams, schema


def insert_cpu(streams: dict[str, list[tuple]], schema: list[str], path: Path, page_size: int) -> tuple[float, float]:
    """(user, system) CPU seconds of inserting every stream's rows into a new file at ``path``
    with the store's pragmas, an append (a transaction) each."""
    import sqlite3

    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    con = sqlite3.connect(path, isolation_level=None)
    con.execute(f"PRAGMA page_size={page_size}")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    for sql in schema:
        con.execute(sql)
    insert = f"INSERT INTO events VALUES ({', '.join('?' * 10)})"
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    for rows in streams.values():
        con.execute("BEGIN IMMEDIATE")
        con.executemany(insert, rows)
        con.execute("COMMIT")
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    con.close()
    return r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime


def chains_cpu(streams: dict[str, list[tuple]]) -> float:
    """CPU seconds of the two hash chains (``_rows``) over every stream's rows."""
    from inquitree.events.store import _rows

    content = {sid: [(r[3], r[4], r[5], r[6].encode()) for r in rows] for sid, rows in streams.items()}
    c0 = time.process_time()
    position = 0
    for sid, items in content.items():
        _rows(sid, items, (0, "0" * 64), (position, "0" * 64))
        position += len(items)
    return time.process_time() - c0


def store_floor(db: Path, steps: int) -> dict:
    """What recording a suite run's events must cost, whatever else the code does: the rows of
    ``db`` (one append per stream, as a replayable agent's episode is appended) inserted with raw
    sqlite3 into the same schema with the store's pragmas and page size; the two hash chains over them
    (``_rows``); and each event's JSON. CPU per step of each.

    ``sqlite_rows_by_page_size``: the same inserts with SQLite's default 4 KiB pages and with the
    store's page size, alternated three times each; the median user and system CPU per step."""
    from inquitree.events.backends.sqlite import SQLITE_PAGE_SIZE
    from inquitree.events.base import decode, parse_json

    streams, schema = read_streams(db)
    out = db.with_name(db.stem + "-floor.sqlite")
    by_size: dict[int, list[tuple[float, float]]] = {4096: [], SQLITE_PAGE_SIZE: []}
    for _ in range(3):
        for size in by_size:
            by_size[size].append(insert_cpu(streams, schema, out, size))
    user, system = (statistics.median(t[k] for t in by_size[SQLITE_PAGE_SIZE]) for k in (0, 1))
    hash_cpu = chains_cpu(streams)
    events = [decode(r[3], r[4], parse_json(r[6])) for rows in streams.values() for r in rows]
    c0 = time.process_time()
    for ev in events:
        ev.to_json()
    json_cpu = time.process_time() - c0
    per = {"sqlite_rows": user + system, "hash_chains": hash_cpu, "json": json_cpu}
    result: dict = {k: round(v / steps * 1e6, 1) for k, v in per.items()}
    result["total"] = round(sum(per.values()) / steps * 1e6, 1)
    result["sqlite_rows_by_page_size"] = {
        str(size): {
            kind: round(statistics.median(t[k] for t in times) / steps * 1e6, 1)
            for k, kind in enumerate(("user", "system"))
        }
        for size, times in by_size.items()
    }
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3, help="end-to-end rounds, each against a fresh baseline")
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

        def engine_plus_matching() -> tuple[float, float]:
            """(wall s, CPU us per step) of the engine with matching over the recorded inputs."""
            t0, c0 = time.perf_counter(), time.process_time()
            for inputs in episodes:
                engine = Engine(tree, p, templates)
                state = fold(engine.start("e", {}, {}, "bench"))
                for reply, _ in inputs:
                    action = engine.action_of(reply.text)
                    cos = cosines(emb, action, engine.anchors(state)) if engine.needs_cosines(state) else None
                    state = fold(engine.step(state, reply, cos), state)
            return time.perf_counter() - t0, (time.process_time() - c0) / steps * 1e6

        with_matching, _ = engine_plus_matching()

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
                action = engine.action_of(reply.text)
                cos = cosines(emb, action, engine.anchors(state)) if engine.needs_cosines(state) else None
                new = engine.step(state, reply, cos)
                version = store.append(stream_id(f"r{i}"), new, version)
                state = fold(new, state)
        recorded = time.perf_counter() - t0
        matching_per_step = with_matching / steps

        script = always_miss_script(tree, 4, Path(d) / "miss.txt")
        setup = EpisodeSetup(templates, emb)
        out = run_episode(setup, tree, params(tree, emb), ScriptAgent(script), None, Recording(store, "ep-77"))
        assert out.state.step == 77
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            events = [r.event for r in store.read_stream(stream_id("ep-77"))]
            ok = store.verify(stream_id=stream_id("ep-77")).ok and resimulate(events).identical
            times.append(time.perf_counter() - t0)
            assert ok
        store.close()
        rounds = []
        for _ in range(args.rounds):
            # The baseline is timed just before and just after the suite runs, and their mean is
            # the round's: on a shared machine the load moves within a round.
            _, before = engine_plus_matching()
            e2e = suite_cpu_per_step(Path(d), args.episodes)
            _, after = engine_plus_matching()
            per_step = suite_cpu_per_step(Path(d), args.episodes, per_step_appends=True)
            matching_cpu_us = (before + after) / 2
            e2e["engine_plus_matching_cpu_us_per_step"] = round(matching_cpu_us, 1)
            e2e["engine_plus_matching_before_after"] = [round(before, 1), round(after, 1)]
            e2e["ratio"] = round(e2e["cpu_us_per_step"] / matching_cpu_us, 2)
            e2e["ratio_2n"] = round(e2e["cpu_us_per_step_2n"] / matching_cpu_us, 2)
            e2e["ratio_marginal"] = round(e2e["marginal_cpu_us_per_step"] / matching_cpu_us, 2)
            # the ratio if recording added only the store's own work (SQLite's rows, the chains, JSON)
            e2e["floor_ratio_2n"] = round(
                (matching_cpu_us + e2e["store_floor_us_per_step_2n"]["total"]) / matching_cpu_us, 2
            )
            e2e["per_step_appends"] = {
                "cpu_us_per_step_2n": per_step["cpu_us_per_step_2n"],
                "ratio_2n": round(per_step["cpu_us_per_step_2n"] / matching_cpu_us, 2),
            }
            rounds.append(e2e)
        median = statistics.median
        result = {
            "steps_measured": steps,
            "engine_only_steps_per_s": round(steps / engine_only),
            "engine_plus_cached_matching_steps_per_s": round(steps / with_matching),
            "recorded_steps_per_s": round(rec_steps / recorded),
            "recording_overhead_ms_per_step": round((recorded / rec_steps - matching_per_step) * 1000, 3),
            "suite_run_cpu_per_step": {
                "median_ratio": median(r["ratio"] for r in rounds),
                "median_ratio_2n": median(r["ratio_2n"] for r in rounds),
                "median_ratio_2n_per_step_appends": median(r["per_step_appends"]["ratio_2n"] for r in rounds),
                "median_floor_ratio_2n": median(r["floor_ratio_2n"] for r in rounds),
                # the least disturbed of each: the suite's fastest round against the baseline's fastest
                "min_over_min_ratio_2n": round(
                    min(r["cpu_us_per_step_2n"] for r in rounds)
                    / min(min(r["engine_plus_matching_before_after"]) for r in rounds),
                    2,
                ),
                "rounds": rounds,
            },
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
