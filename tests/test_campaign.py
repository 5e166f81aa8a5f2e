"""Campaigns: idempotent cells, kill -9 and resume, failures that resume cleanly, shards on PostgreSQL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import fresh_pg_database

from inquitree.cli import main
from inquitree.core.run.campaign import Suite, SuiteError, parse_shard, run_suite
from inquitree.core.run.runner import STREAM_PREFIX
from inquitree.events.store import EventStore

from openai_server import OpenAICompatibleServer
from tests_support import INTERRUPTIBLE

GRID = """
name = "{name}"
trees = ["synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7"]
agents = ["random", "oracle"]
randomness = [0, 4, 8]
runs = 3
embedder = "hash"
concurrency = 2
"""


def write_suite(tmp_path: Path, name: str = "grid", body: str = GRID) -> Path:
    p = tmp_path / f"{name}.toml"
    p.write_text(body.format(name=name))
    return p


def logs(url: str) -> dict[str, list[tuple[str, str]]]:
    """Every stream as its (type, payload) sequence: timestamps and hashes aside."""
    with EventStore(url) as store:
        return {
            s.stream_id: [(r.event_type, r.event.to_json().decode()) for r in store.read_stream(s.stream_id)]
            for s in store.streams(prefix=STREAM_PREFIX)
        }


def run_offline(tmp_path: Path, monkeypatch, name: str, agents: str) -> tuple[Path, Any]:
    """``suite run`` of GRID with ``agents`` (a TOML list) against a base URL nothing listens at, no
    retries: the suite file and the command's result."""
    import socket

    with socket.socket() as s:  # a port that nothing listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    body = (
        GRID.replace('agents = ["random", "oracle"]', f"agents = {agents}")
        + f'base_url = "http://127.0.0.1:{port}/v1"\nmax_retries = 0\nretries = 0\n'
    )
    path = write_suite(tmp_path, name, body)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    db = f"sqlite:///{tmp_path / f'{name}.sqlite'}"
    return path, CliRunner().invoke(main, ["suite", "run", str(path), "--db", db, "--trust-suite"])


def cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "inquitree", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **INTERRUPTIBLE,
        **kw,
    )


def test_a_campaign_without_a_terminal_says_its_progress_and_ends_with_its_scores(tmp_path):
    """Piped (CI, nohup, tee), where a rewritten line shows nothing: a progress line at every tenth
    of the cells with what is left, and at the end each agent's score with its interval."""
    proc = cli("suite", "run", str(write_suite(tmp_path, "piped")), "--db", f"sqlite:///{tmp_path / 'p.sqlite'}")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    lines = [line for line in err.splitlines() if " cells (" in line]
    assert 10 <= len(lines) <= 12 and "\r" not in err  # full lines, about one per tenth of the 54 cells
    assert all("left" in line for line in lines[:-1]) and lines[-1].startswith("  54/54 cells (100%)")
    board = out.split("conclusion score at randomness 0, judge embedding (mean over 3 papers, 95% interval):\n")[1]
    assert [line.split()[0] for line in board.splitlines()[:2]] == ["oracle", "random"]
    assert "1.00 [" in board.splitlines()[0]


def heartbeat_lines(every: float, seconds: float) -> list[str]:
    """What a piped :class:`Progress` says over ``seconds`` when no item ends."""
    import io
    from contextlib import redirect_stderr

    from inquitree.cli.common import Progress

    buffer = io.StringIO()
    with redirect_stderr(buffer), Progress(10, "cells", every=every) as meter:
        meter.update(0)
        time.sleep(seconds)
    return buffer.getvalue().splitlines()


def test_a_piped_progress_line_comes_while_one_cell_takes_long():
    lines = heartbeat_lines(every=0.3, seconds=1.2)
    assert 3 <= len(lines) <= 6 and all(line.startswith("  0/10 cells (0%)") for line in lines)


def test_the_time_left_counts_the_work_of_the_cells_in_flight():
    """Four cells in flight, none ended: the estimate came from ended cells alone, so with one
    ended it priced the three running as if each were still to do, and grew while they ran (30 s
    every 10 s, to 11 min for a run of 7, with the real model). Half done in 100 s, as much is left."""
    from inquitree.cli.common import Progress

    with Progress(4, "cells") as meter:
        meter.update(0)
        meter.started -= 100
        assert "estimating the time left" in meter.line()
        meter.in_flight = lambda: 2.0  # four cells, each half done
        assert "about 1 min 40 s left" in meter.line()
        meter.update(1)  # one ended, three in flight at 0.5 each: 2.5 of 4 done in 100 s
        meter.in_flight = lambda: 1.5
        assert "about 1 min 0 s left" in meter.line()


def test_a_campaign_reports_the_share_its_cells_in_flight_have_done(tmp_path):
    import threading

    from inquitree.core.run.cells import MOST_DONE

    body = (
        'name = "{name}"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nruns = 2\nembedder = "hash"\n'
        'max_turns = 10\nconcurrency = 2\nbase_url = "URL"\n'
    )
    reports, seen = [], []
    with OpenAICompatibleServer(lambda m: "ACTION: hm", delay=0.1) as server:
        suite = Suite.load(write_suite(tmp_path, "flying", body.replace("URL", server.base_url)))
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.05):
                if reports and reports[0].in_flight is not None:
                    seen.append(reports[0].in_flight())

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            report = run_suite(
                suite, EventStore(f"sqlite:///{tmp_path / 'e.sqlite'}"), progress=lambda r, _: reports.append(r)
            )
        finally:
            stop.set()
            watcher.join()
    assert report.done == 2 and seen
    # each cell's most is its turn limit (10, below the tree's 44): its share is its step over 10, at most 0.95
    assert 0 < max(seen) <= 2 * MOST_DONE and report.in_flight is not None and report.in_flight() == 0


def test_kill_9_mid_campaign_then_resume_equals_an_uninterrupted_run(tmp_path):
    suite = write_suite(tmp_path)
    killed = f"sqlite:///{tmp_path / 'killed.sqlite'}"
    EventStore(killed).close()
    proc = cli("suite", "run", str(suite), "--db", killed)
    deadline = time.time() + 60
    n = 0
    while time.time() < deadline:  # kill once a good part of the grid is recorded
        with sqlite3.connect(tmp_path / "killed.sqlite") as c:
            n = c.execute("SELECT count(*) FROM events").fetchone()[0]
        if n > 1500:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert n > 1500, "the campaign finished before it could be killed"
    partial = logs(killed)
    with EventStore(killed) as store:  # killed: no end recorded, and no heartbeat after it
        from inquitree.core.run.cells import ALIVE_WITHIN, recorded_runs, run_status

        runs = recorded_runs(store, "grid")
        assert run_status(runs, time.time())[0] == "running"  # heard from a moment ago
        assert run_status(runs, time.time() + ALIVE_WITHIN + 1)[0] == "died"
    unfinished = [s for s, evs in partial.items() if evs[-1][0] != "EpisodeScored"]
    assert 0 < len(partial) < 54 or unfinished, "the kill did not land mid-campaign"
    resumed = cli("suite", "run", str(suite), "--db", killed)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    clean = f"sqlite:///{tmp_path / 'clean.sqlite'}"
    EventStore(clean).close()
    ref = cli("suite", "run", str(suite), "--db", clean)
    ref.communicate(timeout=300)
    after, reference = logs(killed), logs(clean)
    assert len(reference) == 54 and set(after) == set(reference)
    for sid in reference:
        assert after[sid] == reference[sid], f"{sid} differs after the resume"
    with EventStore(killed) as store:
        assert store.verify().ok


def test_a_dead_endpoint_is_recorded_and_a_later_run_resumes_it(tmp_path):
    body = """
name = "{name}"
trees = ["synthetic-diamond-4"]
agents = ["openai:m"]
randomness = [0]
runs = 2
embedder = "hash"
concurrency = 2
retries = 0
base_url = "BASE"
"""
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"

    def model(messages):
        obs = messages[-1]["content"]
        return (
            "ACTION: draw_conclusion"
            if "results are as follows" in obs
            else "ACTION: (1) x"
            if "numbered" in obs
            else "ACTION: hm"
        )

    with OpenAICompatibleServer(model) as server:
        suite = write_suite(tmp_path, "dead", body.replace("BASE", server.base_url))
        server.fail_after = (3, 500)  # a few turns, then the server keeps failing
        report = run_suite(Suite.load(suite), EventStore(url))
        assert (report.failed, report.done) == (2, 0)
        with EventStore(url) as store:
            for s in store.streams(prefix=STREAM_PREFIX):
                assert [r.event_type for r in store.read_stream(s.stream_id)][-1] == "EpisodeFailed"
        server.fail_after = None
        again = run_suite(Suite.load(suite), EventStore(url))
        assert (again.failed, again.done, again.skipped) == (0, 2, 0)
    with EventStore(url) as store:
        for s in store.streams(prefix=STREAM_PREFIX):
            types = [r.event_type for r in store.read_stream(s.stream_id)]
            assert types.count("EpisodeFailed") == 1 and types.count("EpisodeResumed") == 1
            assert types[types.index("EpisodeFailed") + 1] == "EpisodeResumed" and types[-1] == "EpisodeScored"
            out = CliRunner().invoke(main, ["replay", s.stream_id.removeprefix(STREAM_PREFIX), "--db", url, "-q"])
            assert "replay: identical" in out.output, out.output


def test_shards_and_duplicate_workers_on_postgres_record_every_cell_once(tmp_path):
    url = fresh_pg_database()
    EventStore(url).close()
    suite = write_suite(tmp_path, "shards")
    procs = [cli("suite", "run", str(suite), "--db", url, "--shard", s) for s in ("1/3", "2/3", "3/3", "1/3")]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    # Lost races end in unique-key conflicts; psycopg's executemany pipeline used to leave
    # "error ignored terminating <psycopg.Pipeline [INERROR]>" on stderr for each.
    assert not any("Pipeline" in err or "error ignored" in err for _, err in outs), [o[1][-500:] for o in outs]
    streams = logs(url)
    assert len(streams) == 54
    assert all(
        evs[-1][0] == "EpisodeScored" and [t for t, _ in evs].count("EpisodeStarted") == 1 for evs in streams.values()
    )
    with EventStore(url) as store:
        assert store.verify().ok
    # Only one process can append a cell's final event: the others saw it finished or lost a race.
    done = [int(o[0].split(" done now")[0].rsplit(", ", 1)[1]) for o in outs]
    assert sum(done) == 54


def test_suite_errors_name_the_file_and_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ntrees = ["synthetic-chain-7"]\nagents = ["random"]\nrandomnes = [0]\n')
    with pytest.raises(SuiteError, match=r"bad.toml: unknown key 'randomnes'"):
        Suite.load(bad)
    bad.write_text('name = "x"\ntrees = ["synthetic-chain-7"]\nagents = ["random"]\nrandomness = [12]\n')
    with pytest.raises(SuiteError, match=r"randomness 12: levels are integers 0..10"):
        Suite.load(bad)
    bad.write_text('name = "x"\ntrees = "synthetic-chain-7"\nagents = ["random"]\n')
    with pytest.raises(SuiteError, match=r"trees = 'synthetic-chain-7': expected list"):
        Suite.load(bad)
    with pytest.raises(SuiteError, match=r"--shard '3/2'"):
        parse_shard("3/2")


def test_a_malformed_tree_stops_the_suite_before_any_episode(tmp_path):
    tree = tmp_path / "broken.json"
    tree.write_text('{"schema": "inquitree/research-tree@1", "id": "broken"')
    suite = write_suite(tmp_path, "t", f'name = "t"\ntrees = ["{tree}"]\nagents = ["random"]\nembedder = "hash"\n')
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    out = CliRunner().invoke(main, ["suite", "run", str(suite), "--db", url])
    assert out.exit_code == 2 and f"{tree}: not valid JSON: line 1" in out.output
    with EventStore(url) as store:
        assert store.last_position() == 0


def test_a_wrong_agent_spec_stops_the_suite_with_one_line(tmp_path):
    suite = write_suite(
        tmp_path, "a", 'name = "a"\ntrees = ["synthetic-diamond-4"]\nagents = ["gpt-7"]\nembedder = "hash"\n'
    )
    out = CliRunner().invoke(main, ["suite", "run", str(suite), "--db", f"sqlite:///{tmp_path / 'e.sqlite'}"])
    assert (
        out.exit_code == 2
        and "--agent 'gpt-7': expected random, random-all, oracle" in out.output
        and "Traceback" not in out.output
    )


def test_agent_timeout_is_a_retryable_failure():
    from inquitree.core.calls.settings import CallSettings
    from inquitree.core.players.agents import AgentError, ModelConfig, OpenAIChatAgent

    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        server.faults = ["timeout"]
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings(max_retries=0, timeout=0.5)))
        with pytest.raises(AgentError, match="no complete answer within 0.5 s") as info:
            agent.reply("obs", "topic", 1)
    assert info.value.retryable and agent.history == []


def test_a_server_that_is_down_then_up_resumes_every_cell(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    body = (
        'name = "down"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nruns = 2\nembedder = "hash"\n'
        'retries = 0\nmax_turns = 2\nbase_url = "URL"\n'
    )
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    first = run_suite(Suite.load(write_suite(tmp_path, "down", body.replace("URL", dead))), EventStore(url))
    assert first.failed == 2 and all("[connection]" in e and "connection failed" in e for e in first.errors)
    with OpenAICompatibleServer(
        lambda m: "ACTION: (1) x" if "numbered" in m[-1]["content"] else "ACTION: hm"
    ) as server:
        again = run_suite(
            Suite.load(write_suite(tmp_path, "down", body.replace("URL", server.base_url))), EventStore(url)
        )
    assert (again.done, again.failed) == (2, 0)


def test_a_locked_sqlite_store_is_a_clear_failure_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("INQUITREE_SQLITE_BUSY_MS", "300")
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    EventStore(url).close()
    holder = sqlite3.connect(tmp_path / "e.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        suite = write_suite(
            tmp_path, "lk", 'name = "lk"\ntrees = ["synthetic-diamond-4"]\nagents = ["oracle"]\nembedder = "hash"\n'
        )
        report = run_suite(Suite.load(suite), EventStore(url))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (
        report.failed == 1 and "database is locked (another process holds a write lock on the file)" in report.errors[0]
    )
    assert run_suite(Suite.load(suite), EventStore(url)).done == 1  # and the next run records it


def test_rate_limiter_spaces_calls_across_threads():
    from inquitree.core.players.agents import RateLimiter

    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    rl = RateLimiter(120, clock=lambda: now[0], sleep=sleep)  # 2 a second, burst 2
    for _ in range(6):
        rl.acquire()
    assert now[0] == pytest.approx(2.0) and len(slept) == 4  # 2 at once, then one every 0.5 s


def test_suite_requests_per_minute_is_honoured(tmp_path):
    with OpenAICompatibleServer(
        lambda m: "ACTION: (1) x" if "numbered" in m[-1]["content"] else "ACTION: hm"
    ) as server:
        body = (
            'name = "rl"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nruns = 2\nembedder = "hash"\n'
            f'max_turns = 2\nconcurrency = 2\nrequests_per_minute = 300\nbase_url = "{server.base_url}"\n'
        )
        t0 = time.perf_counter()
        report = run_suite(
            Suite.load(write_suite(tmp_path, "rl", body)), EventStore(f"sqlite:///{tmp_path / 'e.sqlite'}")
        )
        elapsed = time.perf_counter() - t0
    assert report.done == 2 and len(server.requests) == 6
    assert elapsed >= (6 - 5) / 5  # 5 a second with a burst of 5: the 6th call waits about 0.2 s


def test_worker_shards_split_a_shard_into_exactly_its_cells():
    from inquitree.cli.suite import worker_shards

    for shard in [(1, 1), (2, 4), (3, 3)]:
        for workers in (1, 2, 3, 5):
            subs = [parse_shard(s) for s in worker_shards(shard, workers)]
            for cell in range(200):
                owners = [s for s in subs if cell % s[1] == s[0] - 1]
                assert len(owners) == (1 if cell % shard[1] == shard[0] - 1 else 0), (shard, workers, cell)


@pytest.mark.parametrize(("backend", "start"), [("sqlite", "fork"), ("sqlite", "spawn"), ("postgresql", "fork")])
def test_workers_run_every_cell_once_and_a_rerun_does_nothing(tmp_path, backend, start):
    """Workers forked from the command (the default on Linux) or started as new interpreters
    (macOS, Windows; INQUITREE_WORKERS_FORK=0) keep the same guarantees."""
    url = f"sqlite:///{tmp_path / 'w.sqlite'}" if backend == "sqlite" else fresh_pg_database()
    suite = write_suite(tmp_path, "workers")
    env = {**os.environ, "INQUITREE_WORKERS_FORK": "0" if start == "spawn" else "1"}
    first = cli("suite", "run", str(suite), "--db", url, "--workers", "3", env=env)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, out + err
    assert [line.split(":")[0] for line in out.splitlines() if " done now" in line] == [
        "worker 1/3",
        "worker 2/3",
        "worker 3/3",
    ]
    assert (
        sum(int(line.split(" done now")[0].rsplit(", ", 1)[1]) for line in out.splitlines() if " done now" in line)
        == 54
    )
    assert "conclusion score at randomness 0, judge embedding" in out  # said once, by the parent, after the workers
    assert out.count("conclusion score at randomness") == 1
    streams = logs(url)
    assert len(streams) == 54 and all([t for t, _ in evs].count("EpisodeScored") == 1 for evs in streams.values())
    again = cli("suite", "run", str(suite), "--db", url, "--workers", "2", env=env)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0 and out.count(" 0 done now") == 2, out + err
    assert logs(url) == streams


def test_a_forked_worker_relays_its_output_and_exit_code(monkeypatch):
    from inquitree import __version__
    from inquitree.cli.suite import _can_fork, _drain, _ForkedWorker

    monkeypatch.delenv("INQUITREE_WORKERS_FORK", raising=False)
    assert _can_fork() == (sys.platform != "darwin" and hasattr(os, "fork"))
    if not _can_fork():
        pytest.skip("workers are new interpreters on this platform")

    def says_version() -> int:
        print(__version__)
        return 0

    def exits() -> int:
        print("inquitree: error: no such suite file", file=sys.stderr)
        raise SystemExit(2)

    def crashes() -> int:
        raise RuntimeError("a bug in the worker")

    # A worker runs the campaign's API for its shard (cli/suite.py run_shard), not the command line.
    for work, code, text in ((says_version, 0, __version__), (exits, 2, "error"), (crashes, 2, "a bug in the worker")):
        worker = _ForkedWorker(work, dict(os.environ))
        out: list[str] = []
        _drain(worker.stdout, out)
        assert worker.wait() == code and text in "".join(out), out


def test_a_new_stream_that_exists_after_all_is_taken_not_written_twice(tmp_path):
    """A campaign starts the episodes whose streams it did not list without reading them back
    (new_stream): if another worker made the stream meanwhile, the first append is refused."""
    from inquitree.core.game.engine import Params
    from inquitree.core.game.prompts import TemplateSet
    from inquitree.core.game.tree import resolve_tree
    from inquitree.core.players.agents import RandomAgent
    from inquitree.core.players.embed import HashEmbedder
    from inquitree.core.run.runner import run_episode, stream_id
    from inquitree.core.run.setup import EpisodeSetup, Recording
    from inquitree.events.errors import ConcurrencyError

    tree, emb, templates = resolve_tree("synthetic-diamond-4"), HashEmbedder(), TemplateSet()
    p = Params(0.5, 4, 50, 0, 1, emb.id, templates.name, templates.hash)
    with EventStore(f"sqlite:///{tmp_path / 'e.sqlite'}") as store:
        setup, new = EpisodeSetup(templates, emb), Recording(store, "x", new_stream=True)
        first = run_episode(setup, tree, p, RandomAgent(tree, 1), None, new)
        before = [r.event_type for r in store.read_stream(stream_id("x"))]
        assert before[0] == "EpisodeStarted" and len(before) == len(first.events)
        with pytest.raises(ConcurrencyError):
            run_episode(setup, tree, p, RandomAgent(tree, 1), None, new)
        assert [r.event_type for r in store.read_stream(stream_id("x"))] == before


def _scored(path: Path) -> int:
    with sqlite3.connect(path) as c:
        try:
            return c.execute("SELECT count(*) FROM events WHERE event_type = 'EpisodeScored'").fetchone()[0]
        except sqlite3.OperationalError:  # the schema is not made yet
            return 0


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_a_campaign_at_step_boundaries_and_a_rerun_finishes_it(tmp_path, workers):
    """An interrupt drops the cells that wait (a pool left as it was would have run all of them
    first) and stops each episode in flight before its next call, nothing marked failed. With
    --workers the signal goes to the parent alone here, as `kill -INT` does; it relays it."""
    with OpenAICompatibleServer(
        lambda m: "ACTION: (1) x" if "numbered" in m[-1]["content"] else "ACTION: hm", delay=0.05
    ) as server:
        body = (
            'name = "int"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nruns = 60\nembedder = "hash"\n'
            f'max_turns = 6\nconcurrency = 4\nbase_url = "{server.base_url}"\n'
        )
        suite = write_suite(tmp_path, "int", body)
        db = tmp_path / "i.sqlite"
        url = f"sqlite:///{db}"
        proc = cli("suite", "run", str(suite), "--db", url, "--workers", str(workers))
        deadline = time.time() + 120
        while _scored(db) < 2 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, out + err
        assert "run the same command again" in out + err
        lines = [line for line in out.splitlines() if " stopped at a step" in line]
        stopped = [int(line.split(" stopped at a step")[0].rsplit(", ", 1)[1]) for line in lines]
        assert len(stopped) == workers and sum(stopped) >= 1, out  # episodes were in flight, and stopped
        streams = logs(url)
        assert len(streams) > 0 and _scored(db) < 60, "the interrupt did not land mid-campaign"
        assert not any(t == "EpisodeFailed" for evs in streams.values() for t, _ in evs)
        unfinished = [evs for evs in streams.values() if evs[-1][0] != "EpisodeScored"]
        assert all(evs[-1][0] == "EpisodeInterrupted" for evs in unfinished)  # each stop is recorded
        assert all(evs[-2][0] in ("ObservationEmitted", "ConclusionSubmitted") for evs in unfinished)
        # The interrupt is recorded (a CampaignEnded per process), not guessed from silence.
        said = CliRunner().invoke(main, ["suite", "status", str(suite), "--db", url])
        assert "campaign: interrupted (stopped by Ctrl-C)" in said.output, said.output
        again = cli("suite", "run", str(suite), "--db", url)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, out + err
    finished = logs(url)
    assert len(finished) == 60 and all([t for t, _ in evs].count("EpisodeScored") == 1 for evs in finished.values())
    for sid, evs in streams.items():  # the resumes continued the stopped episodes, not started again
        assert finished[sid][: len(evs)] == evs
    with EventStore(url) as store:
        assert store.verify().ok


def test_progress_is_called_once_per_cell_and_its_error_ends_the_campaign(tmp_path):
    """Cells are counted by the threads that ran them (the caller's thread only waits): the
    progress callback sees where the run starts, then every cell once, the count going down to 0,
    and an error it raises ends the campaign, the cells still queued not run."""
    body = GRID.replace("concurrency = 2", "concurrency = 1")
    suite = Suite.load(write_suite(tmp_path, "progress", body))
    seen: list[tuple[int, int]] = []
    with EventStore(f"sqlite:///{tmp_path / 'p.sqlite'}") as store:
        report = run_suite(suite, store, progress=lambda r, left: seen.append((r.done, left)))
    assert report.done == 54 and len(seen) == 55
    assert [left for _, left in seen] == list(range(54, -1, -1))
    assert [done for done, _ in seen] == list(range(0, 55))

    class Gone(Exception):
        pass

    def fails_at_the_third(r, left) -> None:
        if r.done == 3:
            raise Gone("the terminal went away")

    with EventStore(f"sqlite:///{tmp_path / 'q.sqlite'}") as store:
        with pytest.raises(Gone, match="terminal went away"):
            run_suite(suite, store, progress=fails_at_the_third)
        assert 3 <= len(store.streams_with_event(STREAM_PREFIX, "EpisodeScored")) < 54


def test_a_cell_that_raises_past_its_handler_ends_the_campaign_not_hangs_it(tmp_path, monkeypatch):
    """``one`` turns a cell's Exception into a failure; anything else (a BaseException) must still
    wake the caller, which waits for the last cell to be counted, and end the campaign with it."""
    import threading

    import inquitree.core.run.campaign as campaign

    class Fatal(BaseException):
        pass

    def fatal(*args, **kwargs):
        raise Fatal("not an Exception")

    monkeypatch.setattr(campaign, "run_episode", fatal)
    suite = Suite.load(write_suite(tmp_path, "fatal"))
    raised: list[BaseException] = []

    def run() -> None:
        with EventStore(f"sqlite:///{tmp_path / 'f.sqlite'}") as store:
            try:
                run_suite(suite, store)
            except BaseException as exc:  # what the campaign raised, checked below
                raised.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "run_suite still waits for a cell that ended with a BaseException"
    assert len(raised) == 1 and isinstance(raised[0], Fatal)


def test_labelled_script_agents_stay_apart_in_every_query(tmp_path):
    """A suite's `label` used to reach model agents only: two labelled script agents pooled as `script`."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.warehouse.warehouse import Warehouse

    from enginekit import always_miss_script

    tree = resolve_tree("synthetic-diamond-4")
    miss = always_miss_script(tree, 4, tmp_path / "miss.txt")
    suite = tmp_path / "labels.toml"
    suite.write_text(
        f"""
name = "labels"
trees = ["synthetic-diamond-4"]
agents = ["oracle", {{agent = "script:{miss}", label = "misser-a"}}, {{agent = "script:{miss}", label = "misser-b"}}]
runs = 1
embedder = "hash"
"""
    )
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    report = run_suite(Suite.load(suite), EventStore(url))
    assert report.done == 3
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(url)
        agents = wh.sql("SELECT agent, agent_kind FROM episodes ORDER BY agent").rows()
    assert agents == [("misser-a", "script"), ("misser-b", "script"), ("oracle", "oracle")]


@pytest.mark.parametrize("typo", ['trees = ["synthetic-chain-77"]', 'agents = ["oracel"]'])
def test_a_mistyped_tree_or_agent_is_refused_before_the_store_is_made(typo, tmp_path):
    body = 'name = "t"\ntrees = ["synthetic-chain-7"]\nagents = ["oracle"]\njudges = ["embedding"]\n'
    body += "randomness = [0]\nruns = 1\n"
    key = typo.split(" =")[0]
    body = "\n".join(typo if line.startswith(key + " =") else line for line in body.splitlines())
    suite = tmp_path / "t.toml"
    suite.write_text(body)
    out = CliRunner().invoke(main, ["suite", "run", str(suite), "--db", f"sqlite:///{tmp_path / 'e.sqlite'}"])
    assert out.exit_code == 2 and ("unknown tree id" in out.output or "'oracel'" in out.output), out.output
    assert not (tmp_path / "e.sqlite").exists()


def test_a_campaigns_state_is_read_from_its_recorded_runs():
    from inquitree.core.run.cells import ALIVE_WITHIN, RunState, run_status

    now = 1_000_000.0
    assert run_status([], now)[0] is None  # recorded before runs had ids
    assert run_status([RunState(now - 100, now - 5, None)], now)[0] == "running"
    assert run_status([RunState(now - 100, now - ALIVE_WITHIN - 1, None)], now)[0] == "died"
    assert run_status([RunState(now - 100, now - 50, "interrupted")], now) == ("interrupted", "stopped by Ctrl-C")
    two = [RunState(now - 100, now - 90, "finished"), RunState(now - 50, now - 40, "interrupted")]
    assert run_status(two, now)[0] == "interrupted"  # the latest run's end
    assert run_status([*two, RunState(now - 10, now - 1, None)], now)[0] == "running"


def test_a_running_campaign_is_heard_from_until_it_ends(tmp_path, monkeypatch):
    from inquitree.core.run import campaign
    from inquitree.events.names import campaign_stream

    monkeypatch.setattr(campaign, "HEARTBEAT_SECONDS", 0.02)
    suite = Suite.load(write_suite(tmp_path, "beat", GRID.replace("concurrency = 2", "concurrency = 1")))
    with EventStore(f"sqlite:///{tmp_path / 'b.sqlite'}") as store:
        assert run_suite(suite, store).done == 54
        recorded = [r.event for r in store.read_stream(campaign_stream("beat"))]
    kinds = [type(e).__name__ for e in recorded]
    assert kinds[0] == "CampaignStarted" and kinds[-1] == "CampaignEnded" and "CampaignAlive" in kinds
    alive = [e for e in recorded if type(e).__name__ == "CampaignAlive"]
    assert all(e.run_id == recorded[0].run_id for e in alive)
    assert all(e.done + e.left == 54 for e in alive)  # what it had ended, and what it had left
    assert (recorded[-1].how, recorded[-1].done) == ("finished", 54)


def test_suites_whose_names_hold_dots_stay_apart(tmp_path):
    """`qwen-1.5b` and `qwen-1.5b-random` were one campaign, "qwen-1": the suite's part of an id was
    taken to end at its first dot. Each is its own campaign in the store, in `suite status`, in
    the viewer's campaign list and in the pairing every comparison uses."""
    from inquitree.events.names import campaign_stream
    from inquitree.warehouse.warehouse import Warehouse

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    body = (
        'name = "{name}"\ntrees = ["synthetic-diamond-4"]\nagents = ["oracle"]\nrandomness = [0]\n'
        'runs = {runs}\nembedder = "hash"\n'
    )
    files = {
        "m-1.5b": write_suite(tmp_path, "m-1.5b", body.replace("{runs}", "2")),
        "m-1.5b-random": write_suite(tmp_path, "m-1.5b-random", body.replace("{runs}", "1")),
    }
    with EventStore(url) as store:
        for path in files.values():
            run_suite(Suite.load(path), store)
        assert {s.stream_id for s in store.streams("campaign/")} == {campaign_stream(n) for n in files}
    said = {n: CliRunner().invoke(main, ["suite", "status", str(p), "--db", url]).output for n, p in files.items()}
    assert "suite m-1.5b: 2 finished" in said["m-1.5b"] and "m-1.5b-random: 1 finished" in said["m-1.5b-random"]
    wh = str(tmp_path / "w.duckdb")
    with Warehouse(wh) as w:
        w.sync(url)
        suites = w.sql("SELECT pair_suite, count(*) AS n FROM pair_keys GROUP BY ALL ORDER BY 1").rows()
    assert suites == [("m-1.5b", 2), ("m-1.5b-random", 1)]
    pytest.importorskip("starlette")
    from inquitree.viewer.live import Campaigns

    live = Campaigns(url)
    try:
        assert live.names() == ["m-1.5b", "m-1.5b-random"]
        assert [live.summary(n)["cells"] for n in live.names()] == [2, 1]
    finally:
        live.close()


def test_a_campaign_whose_endpoint_refuses_every_call_stops_after_a_few_cells(tmp_path, monkeypatch):
    """Nothing listens at the base URL: instead of failing every cell in turn, each after its
    retries, the run stops after its first few failures of one kind, leaves the rest to a later run,
    and prints a `suite status` command that works as printed."""
    import shlex

    from inquitree.core.run.campaign import HALT_AFTER

    path, out = run_offline(tmp_path, monkeypatch, "offline", '["openai:no-such-server"]')
    assert out.exit_code == 1, out.output
    cells = len(Suite.load(path, trusted=True).cells())
    assert "0 done now" in out.output and "not started" in out.output
    stopped = next(line for line in out.output.splitlines() if line.startswith("stopped:"))
    assert f"the first {HALT_AFTER} cells of openai:no-such-server all failed the same way" in stopped
    assert "[connection]" in stopped
    hint = stopped.split("`")[-2]
    status = CliRunner().invoke(main, shlex.split(hint)[1:])
    assert status.exit_code == 0, status.output
    counts = dict(
        (k, int(v))
        for v, k in (part.split(" ", 1) for part in status.output.splitlines()[0].split(": ", 1)[1].split(", "))
    )
    assert counts["not started"] >= cells - 2 * HALT_AFTER and counts["finished"] == 0
    assert "campaign: failed" in status.output


def test_a_campaign_whose_every_reply_spends_its_budget_on_reasoning_stops_with_one_line(tmp_path, monkeypatch):
    """A failure no retry mends, the same in the first cells, stops the campaign as a dead port
    does; the failures are said once each, with how many cells failed that way."""
    from inquitree.core.run.campaign import HALT_AFTER

    with OpenAICompatibleServer(lambda m: "ACTION: nothing") as server:
        server.reasoning, server.reasoning_only = "Let me think. " * 20, True
        body = (
            GRID.replace('agents = ["random", "oracle"]', 'agents = ["openai:thinker"]').replace(
                "concurrency = 2", "concurrency = 1"
            )
            + f'base_url = "{server.base_url}"\nmax_retries = 0\nretries = 0\n'
        )
        path = write_suite(tmp_path, "thinking", body)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        out = CliRunner().invoke(
            main, ["suite", "run", str(path), "--db", f"sqlite:///{tmp_path / 't.sqlite'}", "--trust-suite"]
        )
    assert out.exit_code == 1, out.output
    stopped = [line for line in out.output.splitlines() if line.startswith("stopped:")]
    assert len(stopped) == 1 and "[reasoning_budget]" in stopped[0] and f"the first {HALT_AFTER} cells" in stopped[0]
    failed = [line for line in out.output.splitlines() if line.startswith("  failed (")]
    assert len(failed) == 1 and failed[0].startswith(f"  failed ({HALT_AFTER} cells, the first thinking."), failed


def test_a_campaign_that_has_succeeded_once_does_not_stop_on_failures():
    import threading

    from inquitree.core.run.campaign import HALT_AFTER, SameFailures

    stop = threading.Event()
    watch = SameFailures(stop)
    watch.succeeded()
    for _ in range(HALT_AFTER * 2):
        watch.failed("connection", "refused")
    assert not stop.is_set() and watch.reason is None
    mixed = SameFailures(stop)
    for kind in ["connection", "timeout", "connection", "connection"]:
        mixed.failed(kind, "x")
    assert not stop.is_set()  # the first failures differ: not one systemic cause
    systemic = SameFailures(stop)
    for _ in range(HALT_AFTER):
        systemic.failed("auth", "HTTP 401")
    assert stop.is_set() and systemic.reason == "[auth] HTTP 401"
    transient = SameFailures(again := threading.Event())
    for _ in range(HALT_AFTER):
        transient.failed("timeout", "no answer in 5 s", retryable=True)
    assert not again.is_set()  # a passing cause: the next cells may well succeed
    lasting = SameFailures(again)
    for _ in range(HALT_AFTER):
        lasting.failed("reasoning_budget", "spent its whole budget on reasoning", retryable=False)
    assert again.is_set() and lasting.reason.startswith("[reasoning_budget]")


def test_a_suite_names_an_embedding_judge_with_its_own_thresholds(tmp_path):
    """`judges = ["embedding", "embedding:0.78/0.74"]`: two judges, two cells per episode setting,
    each judge's id carrying its thresholds; a judge with thresholds out of order is refused before
    the store is made."""
    from inquitree.warehouse.warehouse import Warehouse

    body = """
name = "{name}"
trees = ["synthetic-diamond-4"]
agents = ["oracle"]
judges = ["embedding", "embedding:0.78/0.74"]
runs = 1
embedder = "hash"
"""
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    report = run_suite(Suite.load(write_suite(tmp_path, "judged", body)), EventStore(url))
    assert report.done == 2 and report.failed == 0
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(url)
        judges = wh.sql("SELECT DISTINCT judge_id FROM episode_scores ORDER BY judge_id").rows()
    assert judges == [("embedding:hash:char3-5-1024:0.78/0.74",), ("embedding:hash:char3-5-1024:0.85/0.7",)]
    bad = write_suite(tmp_path, "bad", body.replace("0.78/0.74", "0.7/0.9"))
    out = CliRunner().invoke(main, ["suite", "run", str(bad), "--db", f"sqlite:///{tmp_path / 'bad.sqlite'}"])
    assert out.exit_code != 0 and "0 < PARTIAL <= FULL <= 1" in out.output, out.output
    assert not (tmp_path / "bad.sqlite").exists()


def test_a_model_whose_first_cells_fail_is_stopped_while_the_baselines_play_on(tmp_path, monkeypatch):
    """A campaign that mixes baselines and a model never stopped: a baseline cell always succeeded
    first, so with nothing listening every model cell failed, one after another, each after its
    retries. The watch is now per agent: the model's cells stop after its first few, the baselines'
    are all played, and the line says which agent stopped and why."""
    from inquitree.core.run.campaign import HALT_AFTER

    path, out = run_offline(tmp_path, monkeypatch, "mixed", '["random", "oracle", "openai:nobody-home"]')
    assert out.exit_code == 1, out.output
    per_agent = len(Suite.load(path, trusted=True).cells()) // 3
    stopped = next(line for line in out.output.splitlines() if line.startswith("stopped:"))
    assert f"the first {HALT_AFTER} cells of openai:nobody-home all failed the same way" in stopped
    assert "[connection]" in stopped
    summary = next(line for line in out.output.splitlines() if line.startswith("suite mixed"))
    assert f"{2 * per_agent} done now" in summary  # every baseline cell
    failed = int(summary.split(" failed")[0].rsplit(", ", 1)[1])
    assert HALT_AFTER <= failed <= HALT_AFTER + 2  # the model's first few (two run at once), not its 27


def test_a_campaign_run_again_against_another_endpoint_says_what_it_kept(tmp_path):
    """Run again against a new checkpoint served under the model's name elsewhere, `suite run`
    answered "2 already finished" and played nothing: the cells now record the endpoint and the
    fingerprint they were played against, and the run says which it kept and how to play them anew."""
    body = (
        'name = "moved"\ntrees = ["synthetic-diamond-4"]\nagents = [AGENT]\nruns = 2\nembedder = "hash"\n'
        'max_turns = 4\nbase_url = "URL"\n'
    )
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    reply = lambda m: "ACTION: (1) x" if "numbered" in m[-1]["content"] else "ACTION: hm"  # noqa: E731
    with OpenAICompatibleServer(reply) as old, OpenAICompatibleServer(reply) as new:
        old.fingerprint, new.fingerprint = "fp_old", "fp_new"
        first = write_suite(tmp_path, "moved", body.replace("URL", old.base_url).replace("AGENT", '"openai:m"'))
        assert run_suite(Suite.load(first), EventStore(url)).done == 2
        with EventStore(url) as store:
            replies = [r.event for s in store.streams(STREAM_PREFIX) for r in store.read_stream(s.stream_id)]
        assert {e.fingerprint for e in replies if e.TYPE == "AgentReplied"} == {"fp_old"}

        moved = write_suite(tmp_path, "moved", body.replace("URL", new.base_url).replace("AGENT", '"openai:m"'))
        out = CliRunner().invoke(main, ["suite", "run", str(moved), "--db", url])
        assert out.exit_code == 0 and "2 already finished, 0 done now" in out.output, out.output
        said = " ".join(out.output.split())
        assert f"2 finished cell(s) of agent openai:m were played against m at {old.base_url}" in said
        assert f"(its replies came from m, fingerprint fp_old), not m at {new.base_url}" in said
        assert 'give it its own label ({agent = "openai:m", label = "m-new"} in the suite)' in said
        assert new.chat_calls == 0

        labelled = body.replace("URL", new.base_url).replace("AGENT", '{{agent = "openai:m", label = "m-new"}}')
        again = run_suite(Suite.load(write_suite(tmp_path, "moved", labelled)), EventStore(url))
        assert (again.done, again.skipped, again.reused_elsewhere) == (2, 0, [])
        same = run_suite(Suite.load(first), EventStore(url))  # against the endpoint it was played on: no word
        assert (same.skipped, same.reused_elsewhere) == (2, [])


def test_the_progress_says_when_its_tokens_are_streamed_chunks(tmp_path):
    """llama.cpp's server reports no usage for a stream: the run counted its chunks as tokens, unsaid."""
    body = (
        'name = "{name}"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nruns = 2\nembedder = "hash"\n'
        'max_turns = 3\nstream = true\nbase_url = "URL"\n'
    )
    with OpenAICompatibleServer(lambda m: "ACTION: hm") as server:
        server.streams = True
        suite = write_suite(tmp_path, "chunks", body.replace("URL", server.base_url))
        out = CliRunner().invoke(main, ["suite", "run", str(suite), "--db", f"sqlite:///{tmp_path / 'e.sqlite'}"])
    assert out.exit_code == 0, out.output
    assert "tokens (streamed chunks, where no usage was reported)" in out.output


@pytest.mark.parametrize(
    "line, said",
    [
        ("tau = nan", "tau = nan: expected a finite number"),
        ("tau = inf", "tau = inf: expected a finite number"),
        ("max_hints = 0", "max_hints = 0: expected at least 1"),
        ('match_rule = "<script>"', "match_rule = '<script>': expected one of paper, fitted"),
        ('max_turns = "9"', "max_turns = '9': expected int"),
        ("max_reasks = true", "max_reasks = True: expected int"),
    ],
)
def test_a_suites_episode_options_are_checked_by_their_declaration(tmp_path, line, said):
    """A suite's episode options are refused as `play` and the inspect task refuse them, naming the
    file, the key and the value (TOML can spell nan and inf, which no threshold may be)."""

    path = tmp_path / "bad.toml"
    path.write_text(f'name = "t"\ntrees = ["synthetic-chain-7"]\nagents = ["random"]\n{line}\n')
    with pytest.raises(SuiteError) as refused:
        Suite.load(path)
    assert str(refused.value) == f"{path}: {said}"
