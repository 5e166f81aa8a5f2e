"""Warehouse benchmark (issue: the warehouse).

    python bench/warehouse.py generate --db URL --events 1000000 [--campaign bench]   # simulated episodes
    python bench/warehouse.py measure --db URL                     # sync and query times

``generate`` plays real episodes (random and oracle agents, randomness 0-9, many
seeds, the three synthetic trees, the hash embedder) in memory and appends each
whole episode in one append. ``measure`` does three full syncs into fresh DuckDB
files (median; wall seconds from opening the new file to closing it, and CPU seconds,
the reader child included), each after four baselines in the same process: streaming the
same events out of the store through the sync's reader and dropping them (wall and CPU);
the same sync into an in-memory DuckDB, where the events are read and parsed into the typed
tables but no file is written or compressed (the part of a sync that any warehouse file
would need); that in-memory sync again with the events read beforehand, so that its CPU
seconds are the staging and parsing alone; and the same full sync into a warehouse with
DuckDB's default row group size. The reading's CPU plus the parsing's, divided by the cores
this process may use, is the least wall time any full sync with this reader and DuckDB's
JSON parse could take here (``least_wall_s_per_1M_on_these_cores``). Then three incremental syncs of 1,000 new events
each (median; the sync alone, and with opening and closing the warehouse around it),
and every query in ``queries/`` (median of 5; ``compare`` between the first and last agent).

``measure`` never writes into the store it measures: the incremental syncs append their new
events to a copy of a SQLite store; for another store they run only with ``--allow-writes``
(which appends 1,000 events per run to it) and are left out otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import duckdb
from needs import code_commit, keep_run  # bench/needs.py

import inquitree.warehouse.sync as sync_module
import inquitree.warehouse.warehouse as ws
from inquitree.core.game.tree import resolve_tree
from inquitree.core.run.runner import stream_id
from inquitree.events.backends.sqlite import sqlite_database
from inquitree.events.store import EventStore
from inquitree.warehouse.instrument import register as register_instrument
from inquitree.warehouse.intervals import Settings
from inquitree.warehouse.intervals import register as register_intervals
from inquitree.warehouse.schema import table_statements
from inquitree.warehouse.sources import open_source
from inquitree.warehouse.sync import sync as sync_into
from inquitree.warehouse.warehouse import Warehouse, query_names

from enginekit import OracleAgent, RandomAgent, play

TREES = ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7")


def generate(store: EventStore, events: int, start_seed: int = 0, campaign: str | None = None) -> int:
    """At least ``events`` events of whole episodes. With ``campaign``, the episodes are the cells of
    that suite's grid (the three trees, six agents, levels 0-10, run after run) and its
    ``CampaignStarted`` is recorded at the end: a campaign caught part way through its last run.
    Its agents are the oracle and five random agents, each named by its label as a suite names
    them (``oracle``, ``random-1`` .. ``random-5``), so that a cell holds one episode of each and
    `compare` pairs them one to one, as in a campaign. Without ``campaign`` every fifth episode
    is the oracle's."""
    from inquitree.events.names import Cell, campaign_stream
    from inquitree.events.types import CampaignStarted

    trees = [resolve_tree(t) for t in TREES]
    labels = ["oracle", *(f"random-{k}" for k in range(1, 6))]
    written, i = 0, start_seed
    t0 = time.perf_counter()
    while written < events:
        tree, oracle, label = trees[i % 3], i % 5 == 0, None
        level = (i // 3) % 10
        eid = f"bench-{i:07d}"
        if campaign is not None:  # cell i of the grid, in the suite's order within a run
            run, k = divmod(i - start_seed, 3 * 6 * 11)
            tree, label, level = trees[k // 66], labels[k // 11 % 6], k % 11
            oracle = label == "oracle"
            eid = Cell(tree.id, label, "embedding", level, run).episode_id(campaign)
        out = play(tree, OracleAgent(tree) if oracle else RandomAgent(tree, i), seed=i, randomness=level)
        started = out.events[0].to_payload()
        agent = {**started["agent"], "label": label} if label else started["agent"]
        evs = [out.events[0].__class__(**{**started, "episode_id": eid, "agent": agent})] + out.events[1:]
        store.append(stream_id(eid), evs, 0)
        written += len(evs)
        i += 1
        if i % 500 == 0:
            print(f"  {written:,} events, {i:,} episodes, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if campaign is not None:
        runs = (i - start_seed - 1) // (3 * 6 * 11) + 1
        started = CampaignStarted(
            name=campaign,
            source="bench/warehouse.py",
            trees=list(TREES),
            agents=labels,
            judges=["embedding"],
            randomness=list(range(11)),
            runs=runs,
            shard=[1, 1],
            cells=3 * 6 * 11 * runs,
            concurrency=1,
        )
        store.append(campaign_stream(campaign), [started], 0)
        written += 1
    return written


def on_a_large_store(description: str, measure: Callable[[str, Path, int], dict], campaign: str | None = None) -> None:
    """The command line of a bench that measures something on a large store: ``--db URL``, or a
    store of ``--events`` generated in a temporary folder; ``--runs``; ``--quick`` (the smoke run:
    2,000 events, one run); ``--out FILE``. ``measure(url, folder, runs)`` returns the results."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="an existing store (default: one generated in a temporary folder)")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="the smoke run: 2,000 events, one run")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        args.events, args.runs = 2_000, 1
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db
        if url is None:
            url = f"sqlite:///{Path(tmp) / 'events.sqlite'}"
            with EventStore(url) as store:
                generate(store, args.events, campaign=campaign)
        load_before = os.getloadavg()[0]
        result = {
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **measure(url, Path(tmp), args.runs),
            # the machine is shared: how busy it was, so the numbers can be read against it
            "load_average_1min (before, after)": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the SQLite reader is one)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def read_only(url: str) -> tuple[float, float]:
    """The baseline: stream every event out of the store through the sync's own reader, and drop
    it; wall and CPU seconds (the reader child's included)."""
    t0, c0 = time.perf_counter(), _cpu()
    src = open_source(url, 0, 100_000)
    try:
        n = sum(b.num_rows for b in src.batches(0, 100_000))
    finally:
        src.close()
    assert n > 0
    return time.perf_counter() - t0, _cpu() - c0


class _InMemory:
    """What the sync's own code fills here: an in-memory DuckDB holding the warehouse's tables and
    views (the sync keeps each episode's facts through the views' macros; no file, no memory limit:
    the parsed tables stay in memory)."""

    def __init__(self) -> None:
        self.con, self.path, self.memory = duckdb.connect(), ":memory:", ws.memory_bytes(ws.DEFAULT_MEMORY)
        for statement in table_statements():
            self.con.execute(statement)
        register_intervals(self.con, Settings())  # the views call them, as a warehouse's connection does
        register_instrument(self.con)
        self.con.execute(ws.views_sql())


def parse_in_memory(url: str) -> tuple[float, float]:
    """The second baseline: wall and CPU seconds of the sync into memory (read and parse, no file)."""
    t0, c0 = time.perf_counter(), _cpu()
    wh = _InMemory()
    try:
        assert sync_into(wh, url).events > 0
    finally:
        wh.con.close()
    return time.perf_counter() - t0, _cpu() - c0


class _Held:
    """A source handing over batches read beforehand (what ``open_source`` returns, in shape)."""

    def __init__(self, batches: list) -> None:
        self.held = batches

    def batches(self, after: int, limit: int):
        while self.held:  # let each batch go once it is handed over, as a reader does
            yield self.held.pop(0)

    def close(self) -> None:
        self.held = []


def parse_only(url: str) -> tuple[float, float]:
    """The third baseline: the same in-memory sync with every event read beforehand (untimed; about
    0.4 GB per million events held): the sync's own staging and parsing, with no reader beside it,
    in wall and CPU seconds. Its CPU plus the reading's is the least CPU any sync of these events
    with this reader and DuckDB's parse needs; divided by the cores, the least wall time."""
    src = open_source(url, 0, 100_000)
    try:
        batches = list(src.batches(0, 100_000))
    finally:
        src.close()
    held, opened = _Held(batches), sync_module.open_source
    del batches
    sync_module.open_source = lambda *_: held  # type: ignore[assignment]
    try:
        return parse_in_memory(url)
    finally:
        sync_module.open_source = opened


DUCKDB_ROW_GROUP_SIZE = 122_880  # DuckDB's own default


def timed_sync(url: str, path: Path) -> tuple[float, object]:
    """Open the warehouse, sync, close it: the wall seconds of all three (closing checkpoints
    whatever write-ahead log is left, so it belongs in the time), and the sync's report."""
    t0 = time.perf_counter()
    with Warehouse(str(path)) as wh:
        report = wh.sync(url)
    return time.perf_counter() - t0, report


def full_sync_with_row_group_size(url: str, path: Path, rows: int) -> float:
    """The fourth baseline: the same full sync with another row group size for the warehouse."""
    configured = ws.ROW_GROUP_SIZE
    ws.ROW_GROUP_SIZE = rows
    try:
        return timed_sync(url, path)[0]
    finally:
        ws.ROW_GROUP_SIZE = configured


def measure(url: str, runs: int = 3, allow_writes: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as d:
        source_file = sqlite_database(url)
        fulls, cpus, reads, default_rg, in_memory, parsing = [], [], [], [], [], []
        for i in range(runs):  # alternate the baselines and the sync, so all see the same machine
            reads.append(read_only(url))
            in_memory.append(parse_in_memory(url))
            parsing.append(parse_only(url))
            default_rg.append(full_sync_with_row_group_size(url, Path(d) / f"rg{i}.duckdb", DUCKDB_ROW_GROUP_SIZE))
            c0 = _cpu()
            seconds, full = timed_sync(url, Path(d) / f"w{i}.duckdb")
            cpus.append(_cpu() - c0)
            fulls.append(seconds)
        path = Path(d) / f"w{runs - 1}.duckdb"
        incs, inc_open_close = [], []
        writable, inc_path = (url, path) if allow_writes else (None, Path(d) / "copy.duckdb")
        if source_file is not None and not allow_writes:  # a copy takes the new events, not the store measured
            shutil.copy(source_file, Path(d) / "copy.sqlite")
            writable = f"sqlite:///{Path(d) / 'copy.sqlite'}"
            timed_sync(writable, inc_path)  # a warehouse of the copy, which the incremental syncs follow
        for _ in range(runs if writable else 0):
            store = EventStore(writable)
            before = store.last_position()
            generate(store, 1000, start_seed=10_000_000 + before)  # fresh episode ids on every run
            new = store.last_position() - before
            store.close()
            seconds, inc = timed_sync(writable, inc_path)
            inc_open_close.append(seconds)
            assert inc.events == new
            incs.append(inc.seconds)
        # What publishing costs a writer: a writer copies the warehouse to PATH.next and
        # renames it back when it closes, so readers never wait; against opening it read-only.
        publish, read_open = [], []
        for _ in range(max(3, runs)):
            t0 = time.perf_counter()
            Warehouse(str(path)).close()
            publish.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            Warehouse(str(path), read_only=True).close()
            read_open.append(time.perf_counter() - t0)
        with Warehouse(str(path)) as wh:
            queries = {}
            agents = wh.sql("SELECT list(DISTINCT agent ORDER BY agent) FROM episodes").item()
            pair = {"agents": [agents[0], agents[-1]], "one_off": True}
            for name in query_names():
                times = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    df = wh.query(name, pair if name == "compare" else None)
                    times.append(time.perf_counter() - t0)
                queries[name] = {"median_s": round(statistics.median(times), 3), "rows": df.height}
        sync_s, read_s = statistics.median(fulls), statistics.median(w for w, _ in reads)
        read_cpu, parse_cpu = statistics.median(c for _, c in reads), statistics.median(c for _, c in parsing)
        cores = len(os.sched_getaffinity(0))
        return {
            "source": url.split("://")[0],
            "full_sync_events": full.events,
            "full_sync_runs_s": [round(x, 2) for x in fulls],
            "full_sync_s": round(sync_s, 2),
            "full_sync_s_per_1M": round(sync_s / full.events * 1e6, 2),
            "full_sync_cpu_s": round(statistics.median(cpus), 2),
            "read_only_s": round(read_s, 2),
            "read_only_cpu_s": round(read_cpu, 2),
            "sync_over_read_only": round(sync_s / read_s, 2),
            "parse_only_runs_s": [round(w, 2) for w, _ in parsing],
            "parse_only_s": round(statistics.median(w for w, _ in parsing), 2),
            "parse_only_cpu_s": round(parse_cpu, 2),
            "cores": cores,
            # no file written: a sync that writes one needs more
            "least_wall_s_per_1M_on_these_cores": round((read_cpu + parse_cpu) / cores / full.events * 1e6, 2),
            "read_and_parse_in_memory_runs_s": [round(w, 2) for w, _ in in_memory],
            "read_and_parse_in_memory_s": round(statistics.median(w for w, _ in in_memory), 2),
            "read_and_parse_in_memory_cpu_s": round(statistics.median(c for _, c in in_memory), 2),
            "row_group_size": ws.ROW_GROUP_SIZE,
            "full_sync_duckdb_default_row_groups_runs_s": [round(x, 2) for x in default_rg],
            "full_sync_duckdb_default_row_groups_s": round(statistics.median(default_rg), 2),
            "incremental_events": inc.events if incs else None,
            "incremental_on": None if not incs else "the store" if allow_writes else "a copy of the store",
            "incremental_runs_ms": [round(x * 1000, 1) for x in incs],
            "incremental_sync_ms": round(statistics.median(incs) * 1000, 1) if incs else None,
            "incremental_with_open_close_runs_ms": [round(x * 1000, 1) for x in inc_open_close],
            "incremental_with_open_close_ms": round(statistics.median(inc_open_close) * 1000, 1) if incs else None,
            "warehouse_mb": round(path.stat().st_size / 1e6, 1),
            "writer_open_close_nothing_new_ms": round(statistics.median(publish) * 1000, 1),
            "reader_open_close_ms": round(statistics.median(read_open) * 1000, 1),
            "queries": queries,
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["generate", "measure"])
    ap.add_argument("--db", required=True)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3, help="full syncs (and of each baseline) to take the median of")
    ap.add_argument("--out")
    ap.add_argument(
        "--campaign", help="generate: the episodes are the cells of this suite (bench/viewer.py opens 'bench')"
    )
    ap.add_argument(
        "--allow-writes", action="store_true", help="measure: append the incremental syncs' events to the store itself"
    )
    args = ap.parse_args()
    if args.command == "generate":
        with EventStore(args.db) as store:
            t0 = time.perf_counter()
            n = generate(store, args.events, campaign=args.campaign)
            print(f"generated {n:,} events in {time.perf_counter() - t0:.0f} s")
        return
    started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    result = {"started_at": started, "commit": code_commit(), **measure(args.db, args.runs, args.allow_writes)}
    print(json.dumps(result, indent=2))
    if args.out:
        keep_run(args.out, result)


if __name__ == "__main__":
    main()
