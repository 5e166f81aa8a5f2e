"""Recorded episodes as inspect_ai eval logs (`inquitree episodes to-inspect`): an episode the
inspect task recorded comes out as the sample inspect logged for it; a campaign comes out as one
log per agent with its runs as epochs and inspect's metrics over the recorded scores."""

from __future__ import annotations

import contextlib
import statistics
import sys

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install 'inquitree[inspect]')")

from click.testing import CliRunner
from inspect_ai.log import read_eval_log
from test_inspect import EMB, replies_of, run_task, scripted

from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.core.inspect.export import episode_sample
from inquitree.core.players.agents import AgentError, RandomAgent
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.run.campaign import Suite, run_suite
from inquitree.core.run.runner import EpisodeFailure, run_episode, stream_id
from inquitree.core.run.setup import Recording
from inquitree.events.store import EventStore

from enginekit import TEMPLATES, OracleAgent, params, setup


def to_inspect(*args: str) -> str:
    out = CliRunner().invoke(main, ["episodes", "to-inspect", *args])
    assert out.exit_code == 0, out.output
    return out.output


def dialogue(sample) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in sample.messages]


def test_an_episode_the_inspect_task_recorded_exports_as_the_sample_inspect_logged(tmp_path):
    tree = resolve_tree("synthetic-diamond-4")
    texts, _ = replies_of(OracleAgent(tree), tree)
    log, db = run_task(tmp_path, scripted(texts), trees=tree.id, randomness=0)
    logged = log.samples[0]
    eid = logged.scores["inquitree_scores"].metadata["episode_id"]
    to_inspect(eid, "--db", db, "--log-dir", str(tmp_path / "out"))
    (path,) = (tmp_path / "out").glob("*.eval")
    exported = read_eval_log(str(path))
    (sample,) = exported.samples
    assert (sample.id, sample.epoch) == (logged.id, logged.epoch) == (f"{tree.id}.a0", 1)
    assert sample.input == logged.input and sample.target == logged.target
    assert dialogue(sample) == dialogue(logged)  # the system prompt, every observation and every reply
    assert sample.output.completion == logged.output.completion
    score, logged_score = sample.scores["inquitree_scores"], logged.scores["inquitree_scores"]
    assert (score.value, score.answer, score.explanation, score.metadata) == (
        logged_score.value,
        logged_score.answer,
        logged_score.explanation,
        logged_score.metadata,
    )
    for key in ("tree", "randomness", "n_subtopics", "inquitree"):
        assert sample.metadata[key] == logged.metadata[key]
    ((model, used),) = sample.model_usage.items()
    assert used.input_tokens == 100 * len(texts) and used.input_tokens_cache_read == 7 * len(texts)
    assert used.output_tokens == sum(len(t) // 4 for t in texts)
    assert exported.status == "success" and exported.eval.task == "inquitree/research_tree"
    metrics = {s.name: s.metrics["mean"].value for s in exported.results.scores}
    assert metrics == {"q_norm": 1.0, "coverage": 1.0, "own_coverage": 1.0, "steps": 3 * tree.n, "within_bounds": 1.0}
    assert "not by inspect eval" in exported.eval.metadata["note"]


def test_a_campaign_is_a_log_per_agent_with_its_runs_as_epochs_and_the_recorded_scores(tmp_path):
    suite = tmp_path / "grid.toml"
    suite.write_text(
        'name = "grid"\ntrees = ["synthetic-chain-7", "synthetic-diamond-4"]\nagents = ["random", "oracle"]\n'
        'randomness = [0, 6]\nruns = 3\nembedder = "hash"\nconcurrency = 2\n'
    )
    db = f"sqlite:///{tmp_path / 'grid.sqlite'}"
    with EventStore(db) as store:
        assert run_suite(Suite.load(suite), store).done == 24
    printed = to_inspect("--suite", "grid", "--db", db, "--log-dir", str(tmp_path / "logs"))
    assert "24 episode(s) in 2 log(s)" in printed and "inspect view --log-dir" in printed
    with EventStore(db, create=False) as store:
        recorded = {s.stream_id: [r.event for r in store.read_stream(s.stream_id)] for s in store.streams("episode/")}
    for agent in ("random", "oracle"):
        log = read_eval_log(str(tmp_path / "logs" / f"inquitree-{agent}.eval"))
        assert log.eval.model == f"inquitree/{agent}" and log.eval.config.epochs == 3
        assert log.eval.dataset.samples == 4  # before epochs, as inspect counts them (4 x 3 samples in the viewer)
        assert sorted((s.id, s.epoch) for s in log.samples) == sorted(
            (f"{t}.a{a}", e) for t in ("synthetic-chain-7", "synthetic-diamond-4") for a in (0, 6) for e in (1, 2, 3)
        )
        coverage: dict[str, list[float]] = {}
        for s in log.samples:
            events = recorded[stream_id(s.metadata["episode_id"])]
            assert s.total_time is not None and s.total_time >= 0
            started, scored = events[0], [e for e in events if e.TYPE == "EpisodeScored"][-1]
            assert f"{started.tree_id}.a{started.params['randomness']}" == s.id
            assert s.scores["inquitree_scores"].value["coverage"] == scored.coverage
            coverage.setdefault(str(s.id), []).append(scored.coverage)
            # each reply carries exactly the events the engine recorded after it, up to the next observation
            shown = [e for e in events if e.TYPE in ("ObservationEmitted", "AgentReplied")]
            assert [m.text for m in s.messages[1:]] == [
                e.text if e.TYPE == "ObservationEmitted" else e.raw for e in shown
            ]
            notes = [n["type"] for m in s.messages if m.role == "assistant" for n in m.metadata["engine"]]
            assert notes == [
                e.TYPE for e in events[events.index(shown[1]) :] if e.TYPE not in ("ObservationEmitted", "AgentReplied")
            ]
        # epochs by seed, in inspect's order
        for sid in {s.id for s in log.samples}:
            seeds = [s.metadata["seed"] for s in sorted(log.samples, key=lambda x: x.epoch) if s.id == sid]
            assert seeds == sorted(seeds)
        # inspect's mean over samples of the mean over epochs: the recorded coverages' own
        want = statistics.mean(statistics.mean(v) for v in coverage.values())
        got = next(sc for sc in log.results.scores if sc.name == "coverage").metrics["mean"].value
        assert got == pytest.approx(want, abs=1e-12)


class GivesUp(RandomAgent):
    def reply(self, observation, state, turn):
        if turn == 4:
            raise AgentError("the agent gave up")
        return super().reply(observation, state, turn)


def test_a_failed_episode_is_a_sample_with_its_error_and_no_score(store_url, tmp_path):
    tree = resolve_tree("synthetic-chain-7")
    db = store_url  # on both backends
    with EventStore(db) as store:
        for eid, agent in (("fails", GivesUp(tree, 1)), ("ends", RandomAgent(tree, 2))):
            with contextlib.suppress(EpisodeFailure):
                p = params(tree, EMB, seed=1)
                run_episode(setup(EMB), tree, p, agent, EmbeddingJudge(EMB), Recording(store, eid))
    to_inspect("fails", "ends", "--db", db, "--log-dir", str(tmp_path / "logs"))
    log = read_eval_log(str(tmp_path / "logs" / "inquitree-random.eval"))
    by_id = {s.metadata["episode_id"]: s for s in log.samples}
    assert by_id["fails"].scores is None and "the agent gave up" in by_id["fails"].error.message
    assert by_id["fails"].messages[-1].role == "user"  # the observation it did not answer
    assert by_id["ends"].error is None and by_id["ends"].scores
    assert log.status == "error"
    assert log.results.completed_samples == 1


class Recorded:
    def __init__(self, event, at="2026-11-24T00:00:00.000000Z"):
        self.event, self.recorded_at = event, at


def test_a_template_set_or_tree_not_the_recorded_one_is_left_out_and_said(tmp_path):
    tree = resolve_tree("synthetic-chain-7")
    out = run_episode(setup(EMB), tree, params(tree, EMB), OracleAgent(tree), EmbeddingJudge(EMB))
    started = out.events[0]
    changed = type(started)(
        **{
            **started.to_payload(),
            "tree_hash": "f" * 64,
            "params": {**started.params, "template_hash": "0" * 64},
        }
    )
    ex = episode_sample("e", [Recorded(changed), *(Recorded(e) for e in out.events[1:])])
    notes = ex.sample.metadata["export_notes"]
    assert "is not the one recorded" in notes["system_prompt"] and "is not the one recorded" in notes["target"]
    assert ex.sample.messages[0].role == "user" and ex.sample.target == ""
    intact = episode_sample("e", [Recorded(e) for e in out.events])
    assert intact.sample.messages[0].role == "system" and "export_notes" not in intact.sample.metadata
    assert intact.sample.messages[0].text == TEMPLATES.system_prompt


def test_without_inspect_installed_the_command_says_what_to_install(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    tree = resolve_tree("synthetic-chain-7")
    with EventStore(db) as store:
        run_episode(
            setup(EMB), tree, params(tree, EMB), RandomAgent(tree, 1), EmbeddingJudge(EMB), Recording(store, "ep")
        )
    import inquitree.core.inspect

    monkeypatch.delitem(sys.modules, "inquitree.core.inspect.export", raising=False)
    monkeypatch.delattr(inquitree.core.inspect, "export", raising=False)  # as if never imported
    for name in [m for m in sys.modules if m == "inspect_ai" or m.startswith("inspect_ai.")]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it now fails as if it were not installed
    out = CliRunner().invoke(main, ["episodes", "to-inspect", "ep", "--db", db, "--out", str(tmp_path / "logs")])
    assert out.exit_code != 0 and "pip install '.[inspect]' in InquiTree's checkout" in out.output, out.output
    assert not (tmp_path / "logs").exists()


def test_the_transcript_holds_the_episodes_calls_and_engine_notes_as_real_events(tmp_path):
    """exported logs carried no transcript events, so inspect's Transcript tab said they
    had been removed for size. Each reply is a model event (what the window sent, the reply, its
    tokens), each engine note an info event, in the recorded order, and the score comes last."""
    from inspect_ai.event import InfoEvent, ModelEvent, ScoreEvent

    tree = resolve_tree("synthetic-diamond-4")
    texts, _ = replies_of(OracleAgent(tree), tree)
    log, db = run_task(tmp_path, scripted(texts), trees=tree.id, randomness=0)
    eid = log.samples[0].scores["inquitree_scores"].metadata["episode_id"]
    to_inspect(eid, "--db", db, "--log-dir", str(tmp_path / "out"))
    (path,) = (tmp_path / "out").glob("*.eval")
    (sample,) = read_eval_log(str(path), resolve_attachments=True).samples  # inspect stores repeats once
    calls = [e for e in sample.events if isinstance(e, ModelEvent)]
    notes = [e for e in sample.events if isinstance(e, InfoEvent)]
    assert [c.output.completion for c in calls] == texts
    assert [(m.role, m.text) for m in calls[0].input] == dialogue(sample)[:2]  # the system prompt, the topic
    assert [(m.role, m.text) for m in calls[-1].input] == dialogue(sample)[:-1]  # no window: the whole dialogue
    assert all(c.output.usage is not None and c.output.usage.input_tokens == 100 for c in calls)
    assert notes and all(n.source == "inquitree engine" for n in notes)
    assert {n.data["type"] for n in notes} >= {"MatchScored", "Transitioned", "ResultDrawn", "EpisodeScored"}
    assert isinstance(sample.events[-1], ScoreEvent) and sample.events[-1].score.value["coverage"] == 1.0
    stamps = [e.timestamp for e in sample.events[:-1]]
    assert stamps == sorted(stamps)  # in the order, and at the times, they were recorded


def test_unknown_token_usage_is_not_written_as_zero():
    """llama.cpp's server reports no usage for a stream: the reply records its chunks and no token
    counts, which the export wrote as 0 input, 0 output, 0 total."""
    from types import SimpleNamespace

    from inquitree.core.inspect.export import _reply_usage

    streamed = SimpleNamespace(usage={"input": None, "cached_input": None, "output": None, "output_chunks": 29})
    assert _reply_usage(streamed) is None
    counted = _reply_usage(SimpleNamespace(usage={"input": 90, "cached_input": 10, "output": 7}))
    assert (counted.input_tokens, counted.output_tokens, counted.total_tokens) == (90, 7, 107)
