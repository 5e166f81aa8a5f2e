"""How an episode's steps reach the store.

A model agent's step is appended before its next call (one append per step). A replayable
agent's steps (random, oracle, script) share appends; what a run that stops early had not yet
appended is played again identically on resume.
"""

from __future__ import annotations

import threading

import pytest

from inquitree.core.game.tree import resolve_tree
from inquitree.core.players.agents import AgentError, RandomAgent
from inquitree.core.players.embed import HashEmbedder
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.run.runner import EpisodeFailure, EpisodeStopped, Recorder, run_episode, stream_id
from inquitree.core.run.setup import Recording
from inquitree.events.store import EventStore

from enginekit import params, setup

TREE = resolve_tree("synthetic-chain-7")
EMB = HashEmbedder()


class ModelLike:
    """The random agent's replies from an agent that does not say it is replayable, as a model
    agent would not."""

    def __init__(self, seed: int):
        self.inner = RandomAgent(TREE, seed)
        self.description = self.inner.description

    def resume(self, events):
        self.inner.resume(events)

    def reply(self, observation, state, turn):
        return self.inner.reply(observation, state, turn)


class Stops(RandomAgent):
    """The random agent, stopped at one turn by ``exc``."""

    def __init__(self, seed: int, turn: int, exc: BaseException):
        super().__init__(TREE, seed)
        self.turn, self.exc = turn, exc

    def reply(self, observation, state, turn):
        if turn == self.turn:
            raise self.exc
        return super().reply(observation, state, turn)


class CostlyJudge(EmbeddingJudge):
    """The embedding judge, saying what a judge that calls a model says: judging again costs."""

    replayable = False


def appends_of(store: EventStore) -> list[list[str]]:
    """Record the event types of every append the store makes."""
    seen: list[list[str]] = []
    inner = store.append

    def append(sid, events, expected):
        seen.append([e.TYPE for e in events])
        return inner(sid, events, expected)

    store.append = append  # type: ignore[method-assign]
    return seen


def play(agent, store, episode_id, resume=False, judge=EmbeddingJudge, stop=None):
    p = params(TREE, EMB, seed=3, randomness=5)
    return run_episode(setup(EMB), TREE, p, agent, judge(EMB), Recording(store, episode_id, resume=resume), stop)


def stored(store: EventStore, episode_id: str) -> list[tuple[str, bytes]]:
    return [(r.event_type, r.event.to_json()) for r in store.read_stream(stream_id(episode_id))]


MARKERS = ("EpisodeInterrupted", "EpisodeResumed")


def played(store: EventStore, episode_id: str) -> list[tuple[str, bytes]]:
    """The episode's events but the interruption and the resume that followed it: what an
    uninterrupted run records."""
    return [(t, e) for t, e in stored(store, episode_id) if t not in MARKERS]


def test_a_model_agent_appends_each_step_and_a_replayable_one_shares_appends(sqlite_url, monkeypatch):
    monkeypatch.setattr(Recorder, "BATCH_EVENTS", 1000)  # this episode's 260 events in one append
    monkeypatch.setattr(Recorder, "BATCH_SECONDS", 60.0)
    with EventStore(sqlite_url) as store:
        seen = appends_of(store)
        play(ModelLike(3), store, "model")
        per_step, seen[:] = list(seen), []
        play(RandomAgent(TREE, 3), store, "random")
        shared, seen[:] = list(seen), []
        play(RandomAgent(TREE, 3), store, "claimed", judge=CostlyJudge)
        claimed = list(seen)
        steps = sum(t.count("AgentReplied") for t in per_step)
        assert steps > 5
        # one append per step, after the start; then the verdicts, then the score
        start = ["EpisodeStarted", "ObservationEmitted"]
        assert per_step[0] == start and [t.count("AgentReplied") for t in per_step[1:-2]] == [1] * steps
        assert per_step[-2] == ["JudgeVerdict"] * len(TREE.conclusions) and per_step[-1] == ["EpisodeScored"]
        # everything in one append; before a judge that costs, the start at once (it claims the stream)
        assert len(shared) == 1 and shared[0][:2] == start and shared[0][-1] == "EpisodeScored"
        assert claimed[0] == start and len(claimed) == 2 and claimed[1][-1] == "EpisodeScored"
        # the same events, in other appends
        assert stored(store, "model")[1:] == stored(store, "random")[1:] == stored(store, "claimed")[1:]
        assert store.verify().ok


def test_a_long_episode_is_appended_in_bounded_batches(sqlite_url, monkeypatch):
    monkeypatch.setattr(Recorder, "BATCH_EVENTS", 10)
    with EventStore(sqlite_url) as store:
        seen = appends_of(store)
        out = play(RandomAgent(TREE, 3), store, "ep")
        assert len(seen) > 3 and sum(map(len, seen)) == len(out.events) == len(stored(store, "ep"))
        for types in seen[1:]:  # each append holds whole steps: it ends where a step ends
            assert types[0] in ("AgentReplied", "JudgeVerdict", "EpisodeScored"), types
            assert types[-1] in ("ObservationEmitted", "ConclusionSubmitted", "JudgeVerdict", "EpisodeScored"), types
        assert seen[0][:2] == ["EpisodeStarted", "ObservationEmitted"]
        assert all(len(t) < 10 + 10 for t in seen[:-2])  # closed on the step that reaches 10


def test_an_agent_error_keeps_every_step_before_it(sqlite_url):
    with EventStore(sqlite_url) as store:
        with pytest.raises(EpisodeFailure):
            play(Stops(3, 6, AgentError("the agent gave up")), store, "ep")
        types = [t for t, _ in stored(store, "ep")]
        assert types.count("AgentReplied") == 5 and types[-1] == "EpisodeFailed"


def test_an_interrupt_keeps_whole_steps_and_a_resume_equals_an_uninterrupted_run(sqlite_url):
    with EventStore(sqlite_url) as store:
        with pytest.raises(KeyboardInterrupt):
            play(Stops(3, 6, KeyboardInterrupt()), store, "ep")
        types = [t for t, _ in stored(store, "ep")]
        assert types.count("AgentReplied") == 5 and types[-2:] == ["ObservationEmitted", "EpisodeInterrupted"]
        interrupted = store.read_stream(stream_id("ep"))[-1].event
        assert (interrupted.step, interrupted.reason, interrupted.during) == (5, "interrupt", "agent call")
        play(RandomAgent(TREE, 3), store, "ep", resume=True)
        play(RandomAgent(TREE, 3), store, "reference")
        types = [t for t, _ in stored(store, "ep")]
        at = types.index("EpisodeInterrupted")
        assert types[at + 1] == "EpisodeResumed"  # the resume says it continues an interrupted episode
        resumed = store.read_stream(stream_id("ep"))[at + 1].event
        assert resumed.after_error == "interrupted (interrupt)" and resumed.step == 5
        assert played(store, "ep")[1:] == stored(store, "reference")[1:]


@pytest.mark.parametrize("judge", [EmbeddingJudge, CostlyJudge])
def test_steps_lost_with_the_process_are_played_again_identically(sqlite_url, monkeypatch, judge):
    """A run that dies before its batch is appended leaves the stream empty, or at its start when
    it claimed it; the resume plays the same steps (the kill -9 test in test_campaign.py does this
    to a whole campaign)."""
    real = Recorder.flush

    def only_the_claim(self):  # what a kill leaves: the claim (if any), none of the batch
        if self.claim and self.version == 0:
            real(self)

    with EventStore(sqlite_url) as store:
        monkeypatch.setattr(Recorder, "flush", only_the_claim)
        with pytest.raises(KeyboardInterrupt):
            play(Stops(3, 6, KeyboardInterrupt()), store, "ep", judge=judge)
        left = [t for t, _ in stored(store, "ep")]
        assert left == (["EpisodeStarted", "ObservationEmitted"] if judge is CostlyJudge else [])
        monkeypatch.undo()
        play(RandomAgent(TREE, 3), store, "ep", resume=True, judge=judge)
        play(RandomAgent(TREE, 3), store, "reference", judge=judge)
        assert stored(store, "ep")[1:] == stored(store, "reference")[1:]


@pytest.mark.parametrize("agent", [ModelLike, lambda seed: RandomAgent(TREE, seed)])
def test_a_stop_ends_the_episode_before_its_next_call_and_a_resume_continues_it(sqlite_url, agent):
    """What a campaign's Ctrl-C does to an episode in flight: its steps so far appended (a
    replayable agent's batch too), no failure recorded, and a resume plays on from there."""
    stop = threading.Event()

    class Stopping:
        def __init__(self):
            self.inner = agent(3)
            self.description, self.replayable = self.inner.description, getattr(self.inner, "replayable", False)

        def reply(self, observation, state, turn):
            if turn == 5:
                stop.set()  # Ctrl-C during the fifth call: its reply is still taken
            return self.inner.reply(observation, state, turn)

    with EventStore(sqlite_url) as store:
        with pytest.raises(EpisodeStopped):
            play(Stopping(), store, "ep", stop=stop)
        types = [t for t, _ in stored(store, "ep")]
        assert types.count("AgentReplied") == 5 and "EpisodeFailed" not in types
        assert types[-2:] == ["ObservationEmitted", "EpisodeInterrupted"]
        interrupted = store.read_stream(stream_id("ep"))[-1].event
        assert (interrupted.reason, interrupted.during) == ("campaign stopping", "between steps")
        play(agent(3), store, "ep", resume=True)
        play(agent(3), store, "reference")
        assert played(store, "ep")[1:] == stored(store, "reference")[1:]


@pytest.mark.parametrize("agent", [ModelLike, lambda seed: RandomAgent(TREE, seed)])
def test_a_new_episode_under_a_recorded_id_is_refused_not_appended_after_it(sqlite_url, agent):
    """Only a resume continues a stream; a second start under the same id used to follow the
    first episode in its stream (two EpisodeStarted, a replay that differs)."""
    from inquitree.events.errors import ConcurrencyError

    with EventStore(sqlite_url) as store:
        with pytest.raises(KeyboardInterrupt):
            play(Stops(3, 4, KeyboardInterrupt()), store, "ep")
        before = stored(store, "ep")
        seen = appends_of(store)
        with pytest.raises(ConcurrencyError):
            play(agent(3), store, "ep")
        assert stored(store, "ep") == before and len(seen) == 1  # refused at its first append
        assert store.verify().ok


def test_the_warehouse_tells_an_interrupted_episode_from_a_running_or_failed_one(sqlite_url, tmp_path):
    """Its status follows the latest of failure, interruption and resume (a resume that only
    changed settings used to make a later failure look like a running episode)."""
    from inquitree.warehouse import Warehouse

    def status(wh: Warehouse, url: str) -> str:
        wh.sync(url)
        return wh.sql("SELECT status FROM all_episodes WHERE episode_id = 'ep'").item()

    with EventStore(sqlite_url) as store, Warehouse(str(tmp_path / "w.duckdb")) as wh:
        with pytest.raises(KeyboardInterrupt):
            play(Stops(3, 6, KeyboardInterrupt()), store, "ep")
        assert status(wh, sqlite_url) == "interrupted"
        with pytest.raises(EpisodeFailure):
            play(Stops(3, 8, AgentError("the agent gave up")), store, "ep", resume=True)
        assert status(wh, sqlite_url) == "failed"  # after one resume and one failure
        play(RandomAgent(TREE, 3), store, "ep", resume=True)
        assert status(wh, sqlite_url) == "done"
        assert wh.sql("SELECT reason, during, step FROM ev_episode_interrupted").row(0) == (
            "interrupt",
            "agent call",
            5,
        )
