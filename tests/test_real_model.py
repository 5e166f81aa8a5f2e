"""Opt-in: a full episode through a real OpenAI-compatible server with a real (tiny) model.

Start the server with ``scripts/local-model.sh start`` (llama.cpp's server with
SmolLM2-135M-Instruct); point ``$INQUITREE_LOCAL_MODEL_URL`` elsewhere if needed. Without a
server this module is skipped with one line. A 135M model proves the plumbing, not science:
nothing here checks what it says, only that every part of the pipeline handles what it says.
"""

from __future__ import annotations

import os
import urllib.request

import pytest
from click.testing import CliRunner

URL = os.environ.get("INQUITREE_LOCAL_MODEL_URL", "http://127.0.0.1:8011/v1")
MODEL = os.environ.get("INQUITREE_LOCAL_MODEL", "smollm2-135m")

try:
    urllib.request.urlopen(URL.rstrip("/") + "/models", timeout=3).read()
except OSError:
    pytest.skip(
        f"no local model server at {URL} (start one with scripts/local-model.sh start)", allow_module_level=True
    )

from inquitree.cli import main
from inquitree.core.run.runner import stream_id
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse


def test_play_judge_replay_sync_and_report_with_a_real_model(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    cache = tmp_path / "calls.sqlite"
    args = [
        "play",
        "--tree",
        "it18-24-concept-neurons-relations",
        "--agent",
        f"openai:{MODEL}",
        "--base-url",
        URL,
        "--judge",
        f"openai:{MODEL}",
        "--judge-base-url",
        URL,
        "--max-turns",
        "6",
        "--window",
        "3",
        "--max-tokens",
        "96",
        "--judge-max-tokens",
        "96",
        "--timeout",
        "120",
        "--no-stream",  # llama.cpp's Python server reports token usage only on whole answers
        "--record",
        "--db",
        db,
        "--episode-id",
        "real-1",
        "--call-cache",
        str(cache),
        "-q",
    ]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    with EventStore(db) as store:
        events = [r.event for r in store.read_stream(stream_id("real-1"))]
    replies = [e for e in events if e.TYPE == "AgentReplied"]
    verdicts = [e for e in events if e.TYPE == "JudgeVerdict"]
    assert replies and all(r.latency_ms > 0 and r.usage["output"] for r in replies)  # real usage and timing
    assert events[-1].TYPE == "EpisodeScored" and len(verdicts) == events[-1].k
    assert all((v.score is not None) != v.error for v in verdicts)  # a score, or a recorded judge error
    assert all(v.usage.get("output") for v in verdicts if v.model is not None)
    replay = CliRunner().invoke(main, ["replay", "real-1", "--db", db, "-q"])
    assert replay.exit_code == 0 and "replay: identical" in replay.output, replay.output
    # the same episode again from the cache: no call reaches the server, the log is the same game
    again = CliRunner().invoke(main, [*args[:-5], "--episode-id", "real-2", "--call-cache", str(cache), "-q"])
    assert again.exit_code == 0, again.output
    with EventStore(db) as store:
        second = [r.event for r in store.read_stream(stream_id("real-2"))]
    assert all(e.cache_hit for e in second if e.TYPE == "AgentReplied")
    assert [e.raw for e in second if e.TYPE == "AgentReplied"] == [r.raw for r in replies]
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(db)
        costs = wh.query("costs")
        model_row = [r for r in costs.to_dicts() if r["level"] == "model" and r["model"]]
        assert sum(r["agent_calls"] for r in model_row) == len(replies)  # the cached episode paid nothing
        assert sum(r["cache_hits"] for r in model_row) >= len(replies)
    report = CliRunner().invoke(
        main, ["report", "--out", str(tmp_path / "report"), "--warehouse", str(tmp_path / "w.duckdb"), "--db", db]
    )
    assert report.exit_code == 0, report.output
    assert (tmp_path / "report" / "index.html").exists()
    # both episodes as an inspect log: the model's real token counts, its dialogue and its score
    pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install 'inquitree[inspect]')")
    from inspect_ai.log import read_eval_log

    exported = CliRunner().invoke(
        main, ["episodes", "to-inspect", "real-1", "real-2", "--db", db, "--log-dir", str(tmp_path / "logs")]
    )
    assert exported.exit_code == 0, exported.output
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert [s.epoch for s in log.samples] == [1, 2]
    first = next(s for s in log.samples if s.metadata["episode_id"] == "real-1")
    assert [m.text for m in first.messages if m.role == "assistant"] == [r.raw for r in replies]
    ((_, used),) = first.model_usage.items()
    assert used.output_tokens == sum(r.usage["output"] for r in replies) > 0
    assert first.scores["inquitree_scores"].value["coverage"] == events[-1].coverage
