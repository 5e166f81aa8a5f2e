"""InquiTree as an inspect_ai task, offline: inspect's mock model plays scripted agents (the oracle
and the always-missing worst case); the engine, events, replay and warehouse are InquiTree's."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install 'inquitree[inspect]')")

from click.testing import CliRunner
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.core.inspect.task import research_tree
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.players.kinds import make_embedder
from inquitree.core.run.runner import run_episode
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse

from enginekit import OracleAgent, ScriptAgent, always_miss_script, params, setup

EMB = make_embedder("hash")


def scripted(texts: list[str]):
    """inspect's mock model answering with ``texts`` in order, with token usage (without it the
    mock counts tokens with tiktoken, which downloads its tables)."""
    outs = []
    for t in texts:
        out = ModelOutput.from_content("mockllm", t)
        out.usage = ModelUsage(
            input_tokens=100, output_tokens=len(t) // 4, total_tokens=100 + len(t) // 4, input_tokens_cache_read=7
        )
        outs.append(out)
    return get_model("mockllm/model", custom_outputs=iter(outs), memoize=False)


def replies_of(agent, tree, **kw) -> tuple[list[str], list]:
    """What ``agent`` says in ``inquitree play`` with these parameters, and the events it records."""
    out = run_episode(setup(EMB), tree, params(tree, EMB, **kw), agent, EmbeddingJudge(EMB))
    return [e.raw for e in out.events if e.TYPE == "AgentReplied"], out.events


def run_task(tmp_path, model, **task_args):
    db = f"sqlite:///{tmp_path / 'inspect.sqlite'}"
    logs = inspect_eval(
        research_tree(embedder="hash", db=db, **task_args), model=model, log_dir=str(tmp_path / "logs"), display="none"
    )
    assert logs[0].status == "success", logs[0].error
    return logs[0], db


@pytest.mark.parametrize("tree_id", ["synthetic-diamond-4", "synthetic-chain-7"])
def test_the_oracle_takes_exactly_3n_steps_and_the_run_replays_and_matches_the_warehouse(tree_id, tmp_path):
    tree = resolve_tree(tree_id)
    texts, played = replies_of(OracleAgent(tree), tree)
    log, db = run_task(tmp_path, scripted(texts), trees=tree_id, randomness=0)
    score = log.samples[0].scores["inquitree_scores"]
    assert score.value == {
        **{"q_norm": 1.0, "coverage": 1.0, "own_coverage": 1.0},
        **{"steps": 3 * tree.n, "within_bounds": 1.0},
    }
    assert list(score.value)[:3] == ["q_norm", "coverage", "own_coverage"]  # `inspect view` shows the first
    eid = score.metadata["episode_id"]
    assert eid == f"inspect.{tree_id}.a0.e1"
    # the same events as `inquitree play` with the same replies (but for who played and the call details)
    with EventStore(db) as store:
        recorded = [r.event for r in store.read_stream(f"episode/{eid}")]
    same = (
        "ObservationEmitted",
        "MatchScored",
        "HintIssued",
        "Transitioned",
        "ResultDrawn",
        "DecisionParsed",
        "ConclusionSubmitted",
        "JudgeVerdict",
        "EpisodeScored",
    )
    assert [e.TYPE for e in recorded] == [e.TYPE for e in played]
    assert [e.to_payload() for e in recorded if e.TYPE in same] == [e.to_payload() for e in played if e.TYPE in same]
    assert [e.text for e in recorded if e.TYPE == "ObservationEmitted"] == [
        e.text for e in played if e.TYPE == "ObservationEmitted"
    ]
    replies = [e for e in recorded if e.TYPE == "AgentReplied"]
    assert [r.raw for r in replies] == texts
    assert replies[0].usage == {"input": 100, "cached_input": 7, "cache_write": None, "output": len(texts[0]) // 4}
    out = CliRunner().invoke(main, ["replay", eid, "--db", db, "-q"])
    assert out.exit_code == 0 and "replay: identical" in out.output, out.output
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(db)
        row = wh.sql(
            f"SELECT e.coverage, s.q_norm, e.steps FROM episodes e JOIN episode_scores s USING (episode_id) "
            f"WHERE episode_id = '{eid}'"
        ).to_dicts()[0]
    assert (row["coverage"], row["q_norm"], row["steps"]) == (
        score.value["coverage"],
        score.value["q_norm"],
        score.value["steps"],
    )


def test_the_worst_case_takes_exactly_n_2h_plus_3_steps(tmp_path):
    tree = resolve_tree("synthetic-chain-7")
    texts, _ = replies_of(ScriptAgent(always_miss_script(tree, 4, tmp_path / "miss.txt")), tree)
    log, db = run_task(tmp_path, scripted(texts), trees="synthetic-chain-7", randomness=0)
    value = log.samples[0].scores["inquitree_scores"].value
    assert value["steps"] == tree.n * (2 * 4 + 3) and value["within_bounds"] == 1.0
    assert CliRunner().invoke(main, ["replay", "last", "--db", db, "-q"]).output.count("replay: identical") == 1


def test_epochs_are_runs_with_their_own_seeds_and_the_grader_role_judges(tmp_path):
    tree = resolve_tree("synthetic-diamond-4")
    runs = [replies_of(OracleAgent(tree), tree, randomness=5, seed=s)[0] for s in (0, 1)]
    model = scripted(runs[0] + runs[1])
    verdicts = [json.dumps({"score": 1.0, "rationale": "it states the finding"})] * (2 * len(tree.conclusions))
    db = f"sqlite:///{tmp_path / 'g.sqlite'}"
    logs = inspect_eval(
        research_tree(trees="synthetic-diamond-4", randomness=5, embedder="hash", db=db, judge="grader"),
        model=model,
        model_roles={"grader": scripted(verdicts)},
        epochs=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
    log = logs[0]
    assert log.status == "success", log.error
    ids = sorted(s.scores["inquitree_scores"].metadata["episode_id"] for s in log.samples)
    assert ids == ["inspect.synthetic-diamond-4.a5.e1", "inspect.synthetic-diamond-4.a5.e2"]
    with EventStore(db) as store:
        seeds = sorted(
            r.event.params["seed"] for s in store.streams(prefix="episode/") for r in store.read_stream(s.stream_id)[:1]
        )
        judged = [
            r.event
            for s in store.streams(prefix="episode/")
            for r in store.read_stream(s.stream_id)
            if r.event_type == "JudgeVerdict"
        ]
    assert seeds == [0, 1]
    assert all(v.score == 1.0 and v.judge_id.startswith("inspect-grader:") for v in judged)
    assert {s.scores["inquitree_scores"].value["q_norm"] for s in log.samples} == {1.0}
    means = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert means["coverage"] == 1.0 and "stderr" in log.results.scores[0].metrics


def test_the_task_registers_with_inspect_by_its_entry_point(tmp_path):
    """``inspect eval inquitree/research_tree`` resolves through the entry point, from a lab's own
    folder (inspect does not namespace tasks whose file lies under the current directory, so this
    runs in a fresh process elsewhere)."""
    import subprocess
    import sys
    from importlib.metadata import entry_points

    assert any(ep.name == "inquitree" for ep in entry_points(group="inspect_ai"))
    tree = resolve_tree("synthetic-diamond-4")
    texts, _ = replies_of(OracleAgent(tree), tree)
    code = f"""
import json
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model
outs = []
for t in {texts!r}:
    o = ModelOutput.from_content("mockllm", t)
    o.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    outs.append(o)
log = inspect_eval("inquitree/research_tree", model=get_model("mockllm/model", custom_outputs=iter(outs)),
                   log_dir="logs", display="none", task_args={{"trees": "synthetic-diamond-4", "embedder": "hash"}})[0]
print(json.dumps([log.status, log.samples[0].scores["inquitree_scores"].value["steps"]]))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["success", 12]


def test_a_retried_sample_resumes_its_episode_and_a_rerun_records_nothing_new(tmp_path):
    tree = resolve_tree("synthetic-diamond-4")
    texts, _ = replies_of(OracleAgent(tree), tree)

    def failing_after(n: int):
        def outputs():
            for t in texts[:n]:
                out = ModelOutput.from_content("mockllm", t)
                out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
                yield out
            raise ConnectionError("the provider went away")

        return get_model("mockllm/model", custom_outputs=outputs(), memoize=False)

    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    task_args = dict(trees="synthetic-diamond-4", embedder="hash", db=db)
    broken = inspect_eval(
        research_tree(**task_args), model=failing_after(5), log_dir=str(tmp_path / "l1"), display="none"
    )[0]
    assert broken.status == "error"
    eid = "inspect.synthetic-diamond-4.a0.e1"
    with EventStore(db) as store:
        assert store.read_stream(f"episode/{eid}")[-1].event_type == "EpisodeFailed"
    again = inspect_eval(
        research_tree(**task_args), model=scripted(texts[5:]), log_dir=str(tmp_path / "l2"), display="none"
    )[0]
    assert again.status == "success", again.error
    assert again.samples[0].scores["inquitree_scores"].value["steps"] == 3 * tree.n
    with EventStore(db) as store:
        types = [r.event_type for r in store.read_stream(f"episode/{eid}")]
    assert types.count("EpisodeFailed") == 1 and types[types.index("EpisodeFailed") + 1] == "EpisodeResumed"
    assert CliRunner().invoke(main, ["replay", eid, "--db", db, "-q"]).output.count("replay: identical") == 1
    third = inspect_eval(research_tree(**task_args), model=scripted([]), log_dir=str(tmp_path / "l3"), display="none")[
        0
    ]
    assert third.status == "success" and third.samples[0].scores["inquitree_scores"].value["steps"] == 3 * tree.n
    with EventStore(db) as store:
        assert [r.event_type for r in store.read_stream(f"episode/{eid}")] == types  # nothing new


def test_inquitrees_own_models_run_the_task_offline_and_play_like_the_built_in_agents(tmp_path):
    """An offline route for the inspect integration: inspect's mock model fetches tokenizer tables
    and fails without a network. `inquitree/oracle` plays the oracle through inspect's model
    interface, taking the same replies as `inquitree play --agent oracle` (redos of fakes included);
    `inquitree/script` replies from a file as `--agent script:FILE` does."""
    tree = resolve_tree("synthetic-chain-7")
    expected, _ = replies_of(OracleAgent(tree), tree, seed=0, randomness=5)
    log, db = run_task(
        tmp_path, get_model("inquitree/oracle", tree="synthetic-chain-7"), trees="synthetic-chain-7", randomness=5
    )
    with EventStore(db, create=False) as store:
        (stream,) = store.streams()
        said = [r.event.raw for r in store.read_stream(stream.stream_id) if r.event_type == "AgentReplied"]
    assert said == expected and log.samples[0].scores["inquitree_scores"].value["q_norm"] == 1.0
    script = tmp_path / "replies.txt"
    script.write_text("nothing useful\n---\nstill nothing\n")
    log, _ = run_task(tmp_path / "s", get_model("inquitree/script", file=str(script)), trees="synthetic-diamond-4")
    assert log.samples[0].messages[2].text == "nothing useful"
    with pytest.raises(Exception, match="share this topic"):
        from inquitree.core.inspect.model import _tree_of

        _tree_of(f"topic: {tree.topic}", None)


def test_play_a_campaign_and_the_inspect_task_record_the_same_cell_identically(tmp_path):
    """One episode specification (core/run/spec.py) builds every entry point's parameters. The same cell
    (tree, level, seed) under the same episode id: `inquitree play` and `suite run` record
    byte-identical EpisodeStarted payloads; the inspect task records the same parameters, tree and
    judge, and only its agent differs (inspect's model played, not the built-in oracle)."""
    from inquitree.events.base import canonical_json

    tree = "synthetic-diamond-4"
    suite = tmp_path / "one.toml"
    suite.write_text(f'name = "one"\ntrees = ["{tree}"]\nagents = ["oracle"]\nrandomness = [3]\nembedder = "hash"\n')
    suite_db = f"sqlite:///{tmp_path / 'suite.sqlite'}"
    assert CliRunner().invoke(main, ["suite", "run", str(suite), "--db", suite_db]).exit_code == 0

    def started(url: str) -> dict:  # the episode's start (a campaign's store begins with its CampaignStarted)
        with EventStore(url, create=False) as store:
            return next(r.event for r in store.read_all() if r.event_type == "EpisodeStarted").to_payload()

    by_suite = started(suite_db)
    play_db = f"sqlite:///{tmp_path / 'play.sqlite'}"
    out = CliRunner().invoke(
        main,
        ["play", "--tree", tree, "--agent", "oracle", "--embedder", "hash", "--randomness", "3", "--seed", "0"]
        + ["--record", "--db", play_db, "--episode-id", by_suite["episode_id"], "-q"],
    )
    assert out.exit_code == 0, out.output
    assert canonical_json(started(play_db)) == canonical_json(by_suite)
    _, inspect_db = run_task(tmp_path, get_model("inquitree/oracle", tree=tree), trees=tree, randomness=3)
    by_inspect = started(inspect_db)
    same = ("tree_id", "tree_hash", "tree_title", "n_subtopics", "params", "judge", "code_version")
    assert canonical_json({k: by_inspect[k] for k in same}) == canonical_json({k: by_suite[k] for k in same})
    assert by_inspect["agent"]["kind"] == "inspect" and by_suite["agent"] == {"kind": "oracle"}
