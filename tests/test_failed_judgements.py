"""A judge whose verdicts fail is said, never ranked: `judge` counts the failures by cause and exits
1 when every verdict failed, Ctrl-C keeps what was judged (exit 130); the warehouse gives that
judge's rows no score and no rank, with the failed verdicts beside them and a warning; `judge_flags`
names the judge; a table of two judges keeps them apart at 80 columns; the viewer shows the
recorded cause, and each score beside the judge that gave it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inquitree.core.game.tree import resolve_tree
from inquitree.core.run.campaign import Suite, run_suite
from inquitree.core.run.runner import STREAM_PREFIX
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse

from openai_server import OpenAICompatibleServer
from tests_support import INTERRUPTIBLE

SUITE = """
name = "fj"
trees = ["synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7"]
agents = ["random", "oracle"]
randomness = [0]
runs = 2
embedder = "hash"
"""
NOT_JSON = "I think the agent got it mostly right."
ITEMS = sum(
    len(resolve_tree(t).conclusions) for t in ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7")
)


def inquitree(*args: str, env: dict | None = None, columns: int = 80, **kw) -> subprocess.CompletedProcess:
    environment = {**os.environ, "COLUMNS": str(columns), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "inquitree", *args], capture_output=True, text=True, env=environment, timeout=300, **kw
    )


@pytest.fixture()
def campaign(tmp_path) -> tuple[str, Path]:
    suite_file = tmp_path / "fj.toml"
    suite_file.write_text(SUITE)
    url = f"sqlite:///{tmp_path / 'fj.sqlite'}"
    with EventStore(url) as store:
        assert run_suite(Suite.load(suite_file), store).done == 12
    return url, tmp_path


def test_a_judge_whose_every_verdict_fails_is_said_and_never_ranked(campaign):
    url, tmp = campaign
    with OpenAICompatibleServer(lambda messages: NOT_JSON) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
        run = inquitree("judge", "--all", "--prefix", "fj.", "--judge", "openai:broken", "--db", url, env=env)
        calls = len(server.requests)
    assert run.returncode == 1, run.stdout + run.stderr
    # it stops once the first episodes' verdicts all failed of one cause: the other 9 would spend
    # their requests the same way (a campaign's 128 episodes, 1,024 requests, after 65 of 65 had failed)
    said = " ".join(run.stderr.split())
    assert "stopped: the first 3 episodes'" in said and "all failed the same way" in said
    assert "9 episodes not judged" in said and "retries every failed verdict" in said
    items = int(re.search(r"(\d+) of \1 verdicts failed \(no score", run.stderr).group(1))
    assert f"  {items} x unparseable judge output (JSONDecodeError)" in run.stderr  # one line per cause, with its count
    assert calls <= 2 * items  # each item asked once and re-asked once, for 3 episodes alone

    wh_path = str(tmp / "w.duckdb")
    with Warehouse(wh_path) as wh:
        wh.sync(url)
        board = {(r["agent"], r["judge_id"]): r for r in wh.query("table2_leaderboard").to_dicts()}
        flags = {r["judge_id"]: r for r in wh.query("judge_flags").to_dicts()}
    broken = "openai:broken:llm-judge-v2"
    judged = [agent for agent in ("random", "oracle") if (agent, broken) in board]
    assert judged and sum(board[(a, broken)]["failed_verdicts"] for a in judged) == items
    for agent in judged:
        row = board[(agent, broken)]
        assert row["conclusion_score"] is None and row["rank"] is None
        assert "no conclusion score and no rank" in row["interval_warning"]
        ranked = next(r for (a, j), r in board.items() if a == agent and j != broken)
        assert ranked["rank"] is not None and ranked["failed_verdicts"] == 0
    assert flags[broken]["failed_verdicts"] == items and flags[broken]["verdicts"] == items
    assert f'{items} x "unparseable judge output (JSONDecodeError)"' in flags[broken]["flag_warning"]

    # At 80 columns each judge's table has the judge's id above it: no row is left without its judge.
    table = inquitree("query", "table2_leaderboard", "--warehouse", wh_path, "--db", url)
    assert table.returncode == 0, table.stderr
    assert f"judge {broken}:" in table.stdout and "judge embedding:hash" in table.stdout
    broken_part = table.stdout.split(f"judge {broken}:")[1]
    assert "failed_verdicts" in broken_part and "no conclusion score and no rank" in broken_part.replace("\n  ", " ")
    assert all(len(line) <= 80 for line in table.stdout.splitlines()), table.stdout
    flagged = inquitree("query", "judge_flags", "--warehouse", wh_path, "--db", url)
    assert f"judge {broken}:" in flagged.stdout and "failed_verdicts" in flagged.stdout


def test_the_viewer_shows_the_recorded_cause_and_the_score_of_the_judge_it_names(campaign):
    pytest.importorskip("starlette", reason="the viewer's extra is not installed (pip install 'inquitree[view]')")
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    url, tmp = campaign
    with OpenAICompatibleServer(lambda messages: NOT_JSON) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
        assert inquitree("judge", "--all", "--judge", "openai:broken", "--db", url, env=env).returncode == 1
    wh_path = str(tmp / "w.duckdb")
    with Warehouse(wh_path) as wh:
        wh.sync(url)
    client = TestClient(create_app(wh_path), base_url="http://127.0.0.1")
    home = client.get("/", params={"agent": "oracle"}).text
    # A judge that failed on every episode does not hide the scores another gave: each row shows the
    # embedding judge's 1.000 and says that the broken judge failed.
    rows = [row for row in home.split("<tr>") if "<td>" in row and "embedding:hash" in row]
    assert rows and all("1.000" in line for line in rows), home
    assert any("openai:broken:llm-judge-v2 failed: no score" in row for row in rows)  # it stopped after 3
    episode = "fj.synthetic-chain-7.oracle.embedding.a0.r0"
    tree = client.get("/trees/synthetic-chain-7", params={"episode": episode}).text
    assert "openai:broken:llm-judge-v2: no score (judge error)" in tree and ": None" not in tree
    assert "unparseable judge output (JSONDecodeError)" in tree


def test_ctrl_c_in_judge_keeps_what_was_judged_and_says_how_to_go_on(campaign):
    url, _ = campaign
    verdict = json.dumps({"score": 1.0, "rationale": "stated in conclusion 1"})
    with OpenAICompatibleServer(lambda messages: verdict, delay=0.2) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "inquitree", "judge", "--all", "--judge", "openai:slow", "--db", url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            **INTERRUPTIBLE,
        )
        deadline = time.monotonic() + 60
        while server.chat_calls < 16 and time.monotonic() < deadline:  # past the first episodes' items
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "interrupted at episode" in err and "the same command, run again, judges the rest" in err
    with EventStore(url) as store:
        judged = [
            s
            for s in store.streams_with_event(STREAM_PREFIX, "JudgeVerdict")
            if any(getattr(r.event, "judge_id", "").startswith("openai:slow") for r in store.read_stream(s))
        ]
    assert 1 <= len(judged) < 12  # what was judged is kept; the rest is left for the same command


def test_the_same_judge_command_retries_the_verdicts_that_failed(campaign):
    """Run again after a failure, `judge` answered "0 episodes judged, 128 already had its verdicts":
    a failed verdict was a verdict. The same command now judges again every episode whose latest
    verdict from this judge failed, and the rest it had not reached."""
    url, _ = campaign
    args = ("judge", "--all", "--judge", "openai:flaky", "--db", url)
    with OpenAICompatibleServer(lambda messages: NOT_JSON) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
        assert inquitree(*args, env=env).returncode == 1
    good = json.dumps({"score": 1.0, "rationale": "stated in conclusion 1"})
    with OpenAICompatibleServer(lambda messages: good) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
        again = inquitree(*args, env=env)
        third = inquitree(*args, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "12 episodes judged, 0 already had its usable verdicts" in again.stdout
    assert "0 episodes judged, 12 already had its usable verdicts" in third.stdout
