"""`inquitree play` end to end: recording, live output, bad input, failing agents."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.run.runner import stream_id
from inquitree.events.store import EventStore
from inquitree.events.types import EpisodeFailed

from openai_server import OpenAICompatibleServer
from tests_support import INTERRUPTIBLE


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_play_record_then_replay_offline(sqlite_url):
    played = run(
        "play",
        "--tree",
        "synthetic-diamond-4",
        "--agent",
        "oracle",
        "--record",
        "--db",
        sqlite_url,
        "--episode-id",
        "ep-test",
        "--transcript",
    )
    assert played.exit_code == 0, played.output
    assert "[1] AGENT (topic)" in played.output and "ENVIRONMENT (C.1.1)" in played.output
    assert "coverage 1.000   Q 3.000 (q_norm 1.000, k=3)" in played.output
    assert "steps 12 within [3n, n(2H+3)] = [12, 44]: yes" in played.output
    replayed = run("replay", "last", "--db", sqlite_url, "-q")
    assert replayed.exit_code == 0 and "replay: identical" in replayed.output
    listed = run("episodes", "list", "--db", sqlite_url)
    assert listed.output.splitlines()[1].startswith("ep-test\t")
    assert "\tsynthetic-diamond-4\toracle\t0\t0\tdone\t12\t1.000\t1.000" in listed.output


def test_a_recorded_play_closes_its_store_so_its_events_are_in_the_file_itself(tmp_path):
    """Not left in SQLite's write-ahead log for whoever copies the database file alone."""
    import gc

    db = tmp_path / "events.sqlite"
    gc.disable()  # whatever the collector would close, the command closes itself
    try:
        played = run(
            "play", "--tree", "synthetic-diamond-4", "--agent", "random", "--record", "--db", f"sqlite:///{db}"
        )
        assert played.exit_code == 0, played.output
        assert not db.with_name(db.name + "-wal").exists()
        with sqlite3.connect(f"file:{db}?immutable=1", uri=True) as con:
            assert con.execute("SELECT count(*) FROM events WHERE event_type = 'EpisodeScored'").fetchone() == (1,)
    finally:
        gc.enable()


def test_without_record_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = run("play", "--tree", "synthetic-diamond-4", "-q")
    assert out.exit_code == 0 and "not recorded" in out.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args,message",
    [
        (["--tree", "nope"], "unknown tree id 'nope'"),
        (["--randomness", "11"], "--randomness 11: the randomness level a must be an integer 0..10"),
        (["--tau", "0"], "--tau 0.0: tau must be in (0, 1]"),
        (["--tau", "1.2"], "--tau 1.2: tau must be in (0, 1]"),
        (["--agent", "gpt"], "--agent 'gpt': expected random, random-all, oracle, human, script:FILE or openai:MODEL"),
        (["--embedder", "bert"], "unknown embedder 'bert'"),
    ],
)
def test_bad_input_is_one_clear_line(args, message):
    out = run("play", "-q", *args)
    assert out.exit_code == 2
    assert out.output.startswith("inquitree: error: ") and message in out.output
    assert "Traceback" not in out.output


def test_openai_agent_plays_through_a_real_http_server(sqlite_url):
    with OpenAICompatibleServer(["THOUGHT: t\nACTION: nothing useful"] * 3 + ["ACTION: (1) done"]) as server:
        out = run(
            "play",
            "--tree",
            "synthetic-chain-7",
            "--agent",
            "openai:test-model",
            "--base-url",
            server.base_url,
            "--max-turns",
            "3",
            "--record",
            "--db",
            sqlite_url,
            "-q",
        )
        assert out.exit_code == 0, out.output
        first = server.requests[0]["body"]
        assert first["temperature"] == 0 and first["messages"][0]["role"] == "system"
        assert first["messages"][0]["content"].startswith("You are an expert research assistant")
        last = server.requests[-1]["body"]["messages"]
        assert [m["role"] for m in last] == ["system"] + ["user", "assistant"] * 3 + ["user"]  # full memory
        assert "max-turn-limitation" in last[-1]["content"]
    assert "steps 3 within" in out.output


@pytest.mark.parametrize(
    "fault,expect",
    [
        ("garbage", "HTTP 200 with an HTML page"),
        ("empty", "returned an empty reply"),
        (500, "HTTP 500: injected 500"),
    ],
)
def test_failing_agent_endpoint_records_episode_failed_and_keeps_the_rest(fault, expect, sqlite_url):
    with OpenAICompatibleServer(lambda messages: "THOUGHT: t\nACTION: nothing useful") as server:
        server.fail_after = (2, fault)  # two good turns, then every call fails
        out = run(
            "play",
            "--tree",
            "synthetic-chain-7",
            "--agent",
            "openai:test-model",
            "--base-url",
            server.base_url,
            "--record",
            "--db",
            sqlite_url,
            "--episode-id",
            "ep-fail",
            "-q",
            "--max-retries",
            "1",
        )
    assert out.exit_code == 2, out.output
    assert expect in out.output and "episode ep-fail failed" in out.output and "Traceback" not in out.output
    with EventStore(sqlite_url) as store:
        events = [r.event for r in store.read_stream(stream_id("ep-fail"))]
    assert isinstance(events[-1], EpisodeFailed) and expect in events[-1].error and events[-1].retryable
    assert events[-1].step == 2 and sum(e.TYPE == "AgentReplied" for e in events) == 2
    assert store_is_replayable(sqlite_url, "ep-fail")


def store_is_replayable(url: str, episode: str) -> bool:
    out = run("replay", episode, "--db", url, "-q")
    return out.exit_code == 0 and "replay: identical" in out.output


def _wait_for_replies(db, n: int) -> None:
    """Wait (up to 60 s) until the recording at ``db`` holds ``n`` agent replies."""
    deadline, steps = time.time() + 60, 0
    while steps < n and time.time() < deadline:
        time.sleep(0.02)
        if db.exists():
            with sqlite3.connect(db) as c, contextlib.suppress(sqlite3.OperationalError):
                steps = c.execute("SELECT count(*) FROM events WHERE event_type = 'AgentReplied'").fetchone()[0]


def test_an_interrupted_play_is_refused_under_its_id_and_resumed_with_resume(tmp_path):
    """Ctrl-C leaves the steps taken in the store and says how to continue; the same id without
    --resume used to start a second episode inside the first one's stream."""
    db = tmp_path / "p.sqlite"
    url = f"sqlite:///{db}"
    with OpenAICompatibleServer(lambda m: "ACTION: not sure yet", delay=0.05) as server:
        common = ["--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash", "--record", "--db", url]
        common += ["--episode-id", "p1"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "inquitree", "play", *common],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": "none"},
            **INTERRUPTIBLE,
        )
        _wait_for_replies(db, 3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, out + err
        assert "recorded in sqlite:///" in err and "as episode p1" in err and "this continues it: inquitree" in err
        with EventStore(url) as store:
            taken = [r.event_type for r in store.read_stream(stream_id("p1"))]
        assert taken[0] == "EpisodeStarted" and "EpisodeScored" not in taken and "EpisodeFailed" not in taken
        assert taken[-1] == "EpisodeInterrupted"  # recorded, not guessed from silence

        again = CliRunner().invoke(main, ["play", *common], env={"OPENAI_API_KEY": "none"})
        assert again.exit_code == 2 and "episode p1 is already recorded" in again.output, again.output
        missing = CliRunner().invoke(main, ["play", *common[:-1], "p2", "--resume"], env={"OPENAI_API_KEY": "none"})
        assert missing.exit_code == 2 and "no episode p2 is recorded" in missing.output, missing.output
        resumed = CliRunner().invoke(main, ["play", *common, "--resume"], env={"OPENAI_API_KEY": "none"})
        assert resumed.exit_code == 0, resumed.output
        assert "/0 " not in resumed.output and "/77 " in resumed.output  # the turn limit, not "of 0"
        assert "(it had been interrupted (interrupt))" in resumed.output, resumed.output
    with EventStore(url) as store:
        events = [r.event_type for r in store.read_stream(stream_id("p1"))]
    assert events[: len(taken)] == taken and events.count("EpisodeStarted") == 1 and events[-1] == "EpisodeScored"
    replayed = run("replay", "p1", "--db", url, "-q")
    assert replayed.exit_code == 0 and "replay: identical" in replayed.output, replayed.output


def test_an_interrupted_play_prints_the_command_that_resumes_it(tmp_path):
    """Without --episode-id the id is made up: the printed command carries it, and runs as printed."""
    import shlex

    db = tmp_path / "q.sqlite"
    url = f"sqlite:///{db}"
    env = {**os.environ, "OPENAI_API_KEY": "none"}
    # Replies slow enough that the 6 turns left take seconds: at 0.05 s each the episode could end
    # on a busy machine before Ctrl-C arrived, and exit 0.
    with OpenAICompatibleServer(lambda m: "ACTION: not sure yet", delay=0.5) as server:
        args = ["play", "--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash"]
        args += ["--record", "--db", url, "--max-turns", "8"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "inquitree", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            **INTERRUPTIBLE,
        )
        _wait_for_replies(db, 2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        command = shlex.split(err.split("this continues it: ", 1)[1].splitlines()[0])
        assert command[0] == "inquitree" and command[-1] == "--resume" and "--episode-id" in command
        resumed = subprocess.run(
            [sys.executable, "-m", "inquitree", *command[1:]], capture_output=True, text=True, env=env
        )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "(it had been interrupted (interrupt))" in resumed.stdout


def test_exporting_an_unknown_episode_is_an_error_not_an_empty_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--db", url).exit_code == 0
    out = run("episodes", "export", "nope", "--db", url, "--out", str(tmp_path / "x.jsonl"))
    assert out.exit_code == 2 and "no episode 'nope'" in out.output and not (tmp_path / "x.jsonl").exists()


def test_a_resume_with_other_request_settings_records_them_and_replays(tmp_path):
    """--resume --timeout 300 finished an episode whose log then did not say how."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    env = {"OPENAI_API_KEY": "none"}
    with OpenAICompatibleServer(lambda m: "ACTION: not sure yet") as server:
        server.fail_after = (2, 500)  # two turns, then the endpoint keeps failing: the episode fails
        common = ["--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash", "--record", "--db", url]
        common += ["--episode-id", "r1", "--max-retries", "0"]
        first = CliRunner().invoke(main, ["play", *common], env=env)
        assert first.exit_code == 2, first.output
    with EventStore(url) as store:
        before = [r.event for r in store.read_stream(stream_id("r1"))]
    assert before[0].agent["timeout"] == 60.0 and before[-1].TYPE == "EpisodeFailed"
    with OpenAICompatibleServer(lambda m: "ACTION: not sure yet") as server:
        common[3] = server.base_url
        resumed = CliRunner().invoke(main, ["play", *common, "--resume", "--timeout", "300"], env=env)
    assert resumed.exit_code == 0, resumed.output
    with EventStore(url) as store:
        after = [r.event for r in store.read_stream(stream_id("r1"))]
    note = next(e for e in after if e.TYPE == "EpisodeResumed")
    assert note.agent is not None and note.agent["timeout"] == 300.0 and note.judge is None
    assert "the agent settings changed and are recorded" in resumed.output
    replayed = run("replay", "r1", "--db", url, "-q")
    assert replayed.exit_code == 0 and "replay: identical" in replayed.output, replayed.output


def test_help_names_every_embedder_and_no_empty_range():
    """`play --help` printed `[x<=None]` after six options, and `--embedder`'s help had lost `nomic`:
    the list comes from the registry, and a number option without bounds says none."""
    from inquitree.core.players.kinds import kinds

    for command in ("play", "power", "trees"):
        out = CliRunner().invoke(main, [command, "--help"])
        assert out.exit_code == 0 and "None]" not in out.output, out.output
    said = " ".join(CliRunner().invoke(main, ["play", "--help"]).output.split())
    assert " | ".join(k.usage() for k in kinds("embedder")) in said and "nomic" in said
