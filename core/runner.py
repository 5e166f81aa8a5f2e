"""Running an episode: the effects around the pure engine.

Each engine step's events are appended to the store as one atomic append (with
the expected stream version), so a run that dies loses at most the step in
flight. Without a store, events are only kept in memory.
"""

from __future__ import annotations

import dataclasses
import secrets
from typing import Callable

import numpy as np

from inquitree import __version__
from inquitree.core.agents import Agent, AgentError
from inquitree.core.engine import DONE, FAILED, Engine, EngineError, EpisodeState, Params, extract_action, fold
from inquitree.core.judges import Judge
from inquitree.core.templates import TemplateSet
from inquitree.core.tree import Tree
from inquitree.events.base import Event
from inquitree.events.store import EventStore
from inquitree.events.types import EpisodeScored

STREAM_PREFIX = "episode/"


def new_episode_id() -> str:
    return "ep-" + secrets.token_hex(6)


def stream_id(episode_id: str) -> str:
    return STREAM_PREFIX + episode_id


class Recorder:
    """Appends an episode's events to a store (or only keeps them, without one)."""

    def __init__(self, store: EventStore | None, episode_id: str, on_event: Callable[[Event], None] | None = None):
        self.store, self.stream = store, stream_id(episode_id)
        self.version = store.current_version(self.stream) if store else 0
        self.events: list[Event] = []
        self.appended = 0  # events this process recorded (a resumed episode may add none)
        self.on_event = on_event

    def record(self, events: list[Event]) -> None:
        if self.store is not None and events:
            self.version = self.store.append(self.stream, events, self.version)
        self.events.extend(events)
        self.appended += len(events)
        if self.on_event:
            for ev in events:
                self.on_event(ev)


def cosines(embedder, action: str, candidates: list[tuple[str, str]]) -> dict[str, float]:
    """Eq. 2 between the ACTION and each candidate's canonical text, rounded to 6 decimals."""
    vecs = embedder.embed([action] + [text for _, text in candidates])
    sims = vecs[1:] @ vecs[0]
    return {cid: round(float(c), 6) for (cid, _), c in zip(candidates, np.asarray(sims))}


@dataclasses.dataclass
class EpisodeOutcome:
    episode_id: str
    state: EpisodeState
    events: list[Event]
    scored: EpisodeScored | None
    appended: int = 0


def run_episode(tree: Tree, agent: Agent, judge: Judge | None, embedder, params: Params,
                templates: TemplateSet, store: EventStore | None = None, episode_id: str | None = None,
                on_event: Callable[[Event], None] | None = None, resume: bool = False) -> EpisodeOutcome:
    """Play one episode to its end (or first failure) and score it.

    With ``resume`` and an existing stream, continue it: the state is the fold of its events,
    a recorded failure is followed by ``EpisodeResumed``, the agent rebuilds its memory from
    the transcript, and only what is missing (turns, verdicts, the score) is added.
    """
    episode_id = episode_id or new_episode_id()
    engine = Engine(tree, params, templates)
    rec = Recorder(store, episode_id, on_event)
    existing = [r.event for r in store.read_stream(rec.stream)] if (store is not None and resume) else []
    if existing:
        started = existing[0]
        if started.params != dataclasses.asdict(params) or started.tree_hash != tree.content_hash:
            raise EngineError(f"episode {episode_id} was recorded with other parameters or another tree; "
                              "it cannot be continued with these")
        rec.events = list(existing)
        state = fold(existing)
        if state.state == FAILED:
            rec.record(engine.resume(state))
            state = fold(rec.events[-1:], state)
        agent.resume(existing)
    else:
        judge_desc = judge.description if judge else {"kind": "none"}
        rec.record(engine.start(episode_id, agent.description, judge_desc, __version__))
        state = fold(rec.events)
    while state.state != DONE:
        try:
            reply = agent.reply(state.last_observation, state.state, state.step + 1)
        except AgentError as exc:
            rec.record(engine.fail(state, str(exc), exc.retryable))
            raise
        cos = None
        if engine.needs_cosines(state):
            action = extract_action(reply.text)
            cos = cosines(embedder, action, engine.candidates(state)) if action else {}
        new = engine.step(state, reply, cos)
        rec.record(new)
        state = fold(new, state)
    scored = None
    if judge is not None:
        if judge.id not in state.verdicts:
            verdicts = judge.judge(tree, state.conclusion_items or [])
            rec.record(verdicts)
            state = fold(verdicts, state)
        if judge.id not in state.scored_judges:
            scored = engine.score(state, judge.id)
            rec.record([scored])
        else:
            scored = next(e for e in reversed(rec.events) if isinstance(e, EpisodeScored) and e.judge_id == judge.id)
    return EpisodeOutcome(episode_id, state, rec.events, scored, rec.appended)
