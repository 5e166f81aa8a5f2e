"""Replay: golden logs re-simulate identically; tampering and changes are caught."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.game.engine import fold
from inquitree.core.game.tree import parse_tree, resolve_tree
from inquitree.core.run.golden import dump_jsonl, load_export, load_jsonl
from inquitree.core.run.replay import resimulate, transcript
from inquitree.events.types import AgentReplied, EpisodeScored, MatchScored, ResultDrawn

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.jsonl"))


def test_there_are_golden_logs_of_every_kind():
    kinds = {load_jsonl(p)[0].agent["kind"] for p in GOLDEN}
    assert kinds == {"random", "oracle", "script", "openai"}


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_log_replays_identically(path):
    events = load_jsonl(path)
    result = resimulate(events)
    assert result.identical, result.first_difference
    assert result.events == len(events)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_log_through_the_store_and_cli(path, sqlite_url, tmp_path):
    runner = CliRunner()
    imported = runner.invoke(main, ["episodes", "import", str(path), "--db", sqlite_url])
    assert imported.exit_code == 0, imported.output
    episode = load_jsonl(path)[0].episode_id
    out = runner.invoke(main, ["replay", episode, "--db", sqlite_url, "-q"])
    assert out.exit_code == 0, out.output
    assert "integrity: ok" in out.output and f"replay: identical ({len(load_jsonl(path))} events" in out.output
    exported = runner.invoke(main, ["episodes", "export", episode, "--db", sqlite_url, "--out", str(tmp_path / "e")])
    assert exported.exit_code == 0, exported.output
    # The export adds each event's hashes to the golden format; its events are the golden ones.
    assert dump_jsonl(load_export(tmp_path / "e").events) == path.read_text()
    assert load_export(tmp_path / "e").rows is not None


def test_golden_openai_episode_exercised_matching_blocks_hints_and_usage():
    events = load_jsonl(next(p for p in GOLDEN if p.stem.startswith("openai")))
    types = {e.TYPE for e in events}
    assert {"DependencyBlocked", "HintIssued", "MatchScored", "ResultDrawn", "JudgeVerdict", "EpisodeScored"} <= types
    replies = [e for e in events if isinstance(e, AgentReplied)]
    assert all(r.model == "local-paraphraser" and r.usage["output"] is not None for r in replies)
    accepted = [m for m in events if isinstance(m, MatchScored) and m.accepted]
    assert accepted[0].step == 1 and accepted[0].best_cosine == 1.0  # the scripted slip: s7's own text, blocked
    assert len(accepted) > 5 and all(m.best_cosine < 0.9 for m in accepted[1:])  # the rest are paraphrases


def test_a_changed_reply_is_reported_at_the_first_differing_event():
    events = load_jsonl(next(p for p in GOLDEN if "random" in p.stem))
    i = next(k for k, e in enumerate(events) if isinstance(e, ResultDrawn))
    events[i] = dataclasses.replace(events[i], draw=0.123)
    result = resimulate(events)
    assert not result.identical
    assert result.first_difference.startswith(f"event #{i} (ResultDrawn): draw: log 0.123 vs re-simulated ")


def test_a_changed_score_is_caught():
    events = load_jsonl(next(p for p in GOLDEN if "oracle" in p.stem))
    events[-1] = dataclasses.replace(events[-1], q_norm=0.9)
    assert "q_norm: log 0.9 vs re-simulated 1.0" in resimulate(events).first_difference


def test_a_changed_tree_is_refused():
    events = load_jsonl(next(p for p in GOLDEN if "oracle" in p.stem))
    tree = resolve_tree(events[0].tree_id)
    import json

    doc = json.loads(Path(tree.source).read_text())
    doc["topic"]["text"] += " (edited)"
    result = resimulate(events, parse_tree(doc, "edited.json"))
    assert not result.identical and "has changed since the episode was recorded" in result.first_difference


def test_fold_gives_transcript_and_final_state():
    events = load_jsonl(next(p for p in GOLDEN if "oracle" in p.stem))
    lines = transcript(events)
    assert lines[0][0] == "environment" and lines[1][0] == "agent"
    state = fold(events)
    scored = [e for e in events if isinstance(e, EpisodeScored)][-1]
    assert state.state == "done" and state.step == scored.steps == 31


def test_an_episode_recorded_before_the_call_fields_existed_still_replays():
    """Logs written before AgentReplied/JudgeVerdict gained cache_hit, truncated_from and usage
    (and before EpisodeStarted's params had max_reasks) decode with the defaults and replay identically."""
    path = Path(__file__).parent / "golden" / "before-call-fields" / "openai-chain-a2.jsonl"
    assert '"cache_hit"' not in path.read_text() and '"max_reasks"' not in path.read_text()
    events = load_jsonl(path)
    result = resimulate(events)
    assert result.identical, result.first_difference
    assert all(not e.cache_hit for e in events if e.TYPE == "AgentReplied")


def test_an_episode_recorded_before_replies_said_why_they_ended_still_replays():
    """Logs written while AgentReplied was version 2 (no finish_reason, no failed attempts) decode
    through the upcaster with neither and replay identically."""
    path = Path(__file__).parent / "golden" / "before-finish-reason" / "openai-chain-a2.jsonl"
    assert '"finish_reason"' not in path.read_text() and '"AgentReplied","version":2' in path.read_text()
    events = load_jsonl(path)
    result = resimulate(events)
    assert result.identical, result.first_difference
    replies = [e for e in events if e.TYPE == "AgentReplied"]
    assert replies and all(e.finish_reason is None and e.failed_attempts == [] for e in replies)
    # its verdicts are JudgeVerdict v1, from before verdicts kept their failed attempts
    assert '"JudgeVerdict","version":1' in path.read_text()
    verdicts = [e for e in events if e.TYPE == "JudgeVerdict"]
    assert verdicts and all(e.finish_reason is None and e.failed_attempts == [] for e in verdicts)
