"""Running an episode: the effects around the pure engine.

Each engine step's events are appended to the store as one atomic append (with the expected
stream version) before the agent's next call, so a run that dies loses at most the step in
flight. A replayable agent's steps may share an append (see :class:`Recorder`). Without a
store, events are only kept in memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import threading
import time
from typing import TYPE_CHECKING, Callable

from inquitree import __version__
from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.text import shown
from inquitree.core.calls import call_deadline, redact_text
from inquitree.core.game import DONE, FAILED, Engine, EngineError, EpisodeState, Params, Reply, Tree, fold
from inquitree.core.players import Agent, Judge, embed_actions, embeds_queries_apart
from inquitree.core.run.limits import Budget, LimitError, Limits, tokens_of
from inquitree.core.run.setup import NOT_RECORDED, EpisodeSetup, Recording
from inquitree.events import (
    EPISODE_PREFIX,
    AgentReplied,
    EpisodeFailed,
    EpisodeResumed,
    EpisodeScored,
    Event,
    EventStore,
    episode_stream,
)

if TYPE_CHECKING:
    pass

STREAM_PREFIX = EPISODE_PREFIX


def new_episode_id() -> str:
    return "ep-" + secrets.token_hex(6)


def stream_id(episode_id: str) -> str:
    """The episode's stream; an id outside the grammar (``events/names.py``) is refused here."""
    return episode_stream(episode_id)


class Recorder:
    """Appends an episode's events to a store (or only keeps them, without one).

    With ``batch``, the events of several steps wait and go in one append: a failure and a score
    go at once, the others when 256 events or one second have gathered, or at :meth:`flush`.
    Only for agents whose steps are replayed identically on resume (``Agent.replayable``): a run
    that dies loses the steps not yet appended, and playing them again costs nothing. Each
    append is still all or nothing and holds whole steps. With ``claim`` as well, the first
    append (the start) goes at once: it claims the stream before work that costs (a judge that
    calls a model), so two runs of one cell never both pay for it; without it, a second run
    finds the stream taken at its first append, having spent only CPU."""

    BATCH_EVENTS, BATCH_SECONDS = 256, 1.0

    def __init__(
        self,
        store: EventStore | None,
        episode_id: str,
        on_event: Callable[[Event], None] | None = None,
        version: int = 0,
        batch: bool = False,
        claim: bool = True,
    ):
        """``version``: the stream's version, 0 for a new stream (what the first append expects)."""
        self.store, self.stream = store, stream_id(episode_id)
        self.version = version
        self.events: list[Event] = []
        self.pending: list[Event] = []  # recorded, not appended yet (``batch``)
        self.batch, self._since = batch and store is not None, time.monotonic()
        self.claim = claim
        self.appended = 0  # events this process recorded (a resumed episode may add none)
        self.on_event = on_event

    def record(self, events: list[Event]) -> None:
        if self.store is not None and events:
            self.pending.extend(events)
            if (
                not self.batch
                or (self.claim and self.version == 0)
                or isinstance(events[-1], (EpisodeScored, EpisodeFailed))
                or len(self.pending) >= self.BATCH_EVENTS
                or time.monotonic() - self._since >= self.BATCH_SECONDS
            ):
                self.flush()
        self.events.extend(events)
        self.appended += len(events)
        if self.on_event:
            for ev in events:
                self.on_event(ev)

    def flush(self) -> None:
        """Append the events that wait (one append; nothing without a store)."""
        if not self.pending or self.store is None:
            return
        events, self.pending = self.pending, []
        self.version = self.store.append(self.stream, events, self.version)
        self._since = time.monotonic()
        if self.store.signer is not None and isinstance(events[-1], (EpisodeScored, EpisodeFailed)):
            self.store.sign_recorded()  # a finished episode is covered by signed heads at once


def cosines(embedder, action: str, candidates: list[tuple[str, str]]) -> dict[str, float]:
    """Eq. 2 between the ACTION and each text of ``candidates`` (the engine's anchors: the
    candidates' canonical texts, and under the fitted rule their hints and the topic), rounded to
    6 decimals."""
    import numpy as np

    texts = [text for _, text in candidates]
    if not embeds_queries_apart(embedder):  # one batch, as every recorded episode was scored
        vecs = embedder.embed([action] + texts)
        sims = vecs[1:] @ vecs[0]
    else:  # the action is a query, the candidates documents (NomicEmbedder)
        sims = embedder.embed(texts) @ embed_actions(embedder, [action])[0]
    return {cid: round(float(c), 6) for (cid, _), c in zip(candidates, np.asarray(sims), strict=False)}


def _last_description(events: list, who: str) -> dict:
    """The agent's (or judge's) description an episode was last played with: its start's, or the
    latest resume that recorded a change."""
    found = dict(getattr(events[0], who) or {})
    for e in events:
        if isinstance(e, EpisodeResumed) and getattr(e, who) is not None:
            found = dict(getattr(e, who))
    found.pop("limits", None)
    return found


def _changed(before: dict, now: dict) -> dict | None:
    """``now`` when it differs from ``before`` (the run limits aside), else None."""
    now = {k: v for k, v in now.items() if k != "limits"}
    return now if now != before else None


@dataclasses.dataclass
class EpisodeOutcome:
    episode_id: str
    state: EpisodeState
    events: list[Event]
    scored: EpisodeScored | None
    appended: int = 0


class EpisodeFailure(InquiTreeError):
    """An episode stopped on an error, which is recorded as its ``EpisodeFailed`` event."""

    def __init__(self, message: str, episode_id: str, retryable: bool, kind: str, error_class: str):
        super().__init__(message)
        self.episode_id, self.retryable, self.kind, self.error_class = episode_id, retryable, kind, error_class


class EpisodeStopped(InquiTreeError):
    """The campaign is stopping (Ctrl-C): the episode stopped before its next agent or judge call,
    with every step it took recorded and nothing marked failed, so a resume continues it."""

    def __init__(self, episode_id: str):
        super().__init__(f"episode {episode_id} stopped before its next step (the campaign is stopping)")
        self.episode_id = episode_id


_KINDS = {"EmbedderError": "embedder", "EngineError": "engine", "JudgeError": "judge", "AgentError": "agent"}


def _failure(exc: BaseException, phase: str) -> tuple[str, bool, str, str]:
    """(message, retryable, kind, error class) of any exception raised while asking a model or
    embedder: InquiTree's own errors carry their kind; anything else is a bug or an unexpected
    answer, recorded with its class so it can be found, and retryable (the next attempt resumes)."""
    cls = type(exc).__name__
    kind = getattr(exc, "kind", None) or _KINDS.get(cls) or "unexpected"
    retryable = bool(getattr(exc, "retryable", not isinstance(exc, InquiTreeError)))
    message = str(exc) if isinstance(exc, InquiTreeError) else f"{phase}: {cls}: {exc}"
    return redact_text(message)[:2000], retryable, kind, cls


class Episode:
    """One episode being played: the engine, its recorder and state, and the steps around a
    model call. :func:`run_episode` drives it with a synchronous agent; the inspect_ai solver
    (``core/inspect/task.py``) drives the same object from its own event loop, so both record
    the same events.

    ``setup`` gives the templates, the embedder, the limits and prices; ``recording`` the store
    and id. A new episode starts with ``EpisodeStarted`` in a new stream (an existing one is
    refused at the first append, with :class:`ConcurrencyError`); with ``recording.resume`` and an
    existing stream it continues: the state is the fold of its events, and a recorded failure is
    followed by ``EpisodeResumed`` (``self.existing`` holds what was there, for the agent's
    memory). With ``recording.new_stream`` nothing is read; should the stream exist after all,
    the first append raises ConcurrencyError. ``batch`` and ``claim``: steps may share an append,
    and the start may wait with them (see :class:`Recorder`); the driver calls :meth:`flush` when
    it stops."""

    def __init__(
        self,
        setup: EpisodeSetup,
        tree: Tree,
        params: Params,
        agent_description: dict,
        judge_description: dict,
        recording: Recording = NOT_RECORDED,
        batch: bool = False,
        claim: bool = True,
    ):
        store, episode_id, resume = recording.store, recording.episode_id, recording.resume
        self.tree, self.episode_id = tree, episode_id or new_episode_id()
        self.engine = Engine(tree, params, setup.templates)
        recorded: list = []
        # Without ``resume`` the stream must be new: the first append expects version 0, so an id
        # already recorded is refused (ConcurrencyError) instead of a second episode following it.
        version = 0
        if store is not None and resume and not recording.new_stream:  # one read: what is there and the version
            recorded = store.read_stream(stream_id(self.episode_id))
            version = recorded[-1].stream_version if recorded else 0
        self.rec = Recorder(store, self.episode_id, recording.on_event, version, batch, claim)
        self.embedder = setup.embedder
        self.limits, self.budget, self.prices = setup.limits, setup.budget, setup.prices
        self.t0 = time.monotonic()
        self.state = EpisodeState()
        self.tokens = 0  # of the episode's agent calls so far, for its limits
        self.cost: float | None = 0.0  # likewise, in USD; None once a call has no price
        # A call is priced by the model asked for, never by the name an endpoint answers with
        # (OpenAI answers gpt-4o-2024-08-06 to gpt-4o): the answer's name picks no price, or another.
        self.priced_as: str | None = agent_description.get("model")
        self.judge_priced_as: str | None = judge_description.get("model")
        self.existing = [r.event for r in recorded]
        if self.existing:
            started = self.existing[0]
            asked = dataclasses.asdict(params)
            differ = sorted(k for k, v in started.params.items() if k in asked and asked[k] != v)
            if differ or started.tree_hash != tree.content_hash:
                what = ", ".join(f"{k} {started.params[k]!r} (now {asked[k]!r})" for k in differ) or "another tree"
                raise EngineError(
                    f"episode {self.episode_id} was recorded with {what}; it cannot be continued with these"
                )
            # Parameters added after it was recorded keep the values it was played with (Params._ABSENT).
            self.engine = Engine(tree, Params.from_dict(started.params), setup.templates)
            self.rec.events = list(self.existing)
            self.state = fold(self.existing)
            self._count(self.existing)
            agent_now = _changed(_last_description(self.existing, "agent"), agent_description)
            judge_now = _changed(_last_description(self.existing, "judge"), judge_description)
            if (
                self.state.state == FAILED
                or self.state.interrupted
                or (self.state.state != DONE and (agent_now or judge_now))
            ):
                self.record(self.engine.resume(self.state, agent_now, judge_now))
        else:
            agent_desc = dict(agent_description)
            if self.limits.describe():
                agent_desc["limits"] = self.limits.describe()
            self.record(self.engine.start(self.episode_id, agent_desc, judge_description, __version__))

    def record(self, events: list[Event]) -> None:
        self.rec.record(events)
        self.state = fold(events, self.state)
        self._count(events)

    def flush(self) -> None:
        self.rec.flush()

    def _count(self, events: list[Event]) -> None:
        for e in events:
            if isinstance(e, AgentReplied):
                self.tokens += tokens_of(e.usage)
                c = 0.0 if e.cache_hit else self._cost(self.priced_as or e.model, e.usage, e.latency_ms)
                self.cost = self.cost + c if c is not None and self.cost is not None else None

    @property
    def deadline(self) -> float | None:
        """When the episode's wall-time limit runs out (``time.monotonic()``), if it has one."""
        return None if self.limits.episode_seconds is None else self.t0 + self.limits.episode_seconds

    @property
    def playing(self) -> bool:
        """True while the agent has a turn to take (no limit reached); a reached limit ends it here."""
        if self.state.state == DONE:
            return False
        reached = _limit_reached(self.limits, self.budget, self.tokens, self.cost, time.monotonic() - self.t0)
        if reached:
            self.record(self.engine.end_by_limit(self.state, *reached))
            return False
        return True

    def take(self, reply: Reply) -> None:
        """The agent's reply to the current observation: cosines where the state matches, the
        engine's step, recorded as one append."""
        if self.budget is not None and not reply.cache_hit:
            self.budget.add(
                tokens_of(reply.usage), self._cost(self.priced_as or reply.model, reply.usage, reply.latency_ms)
            )
        cos = None
        if self.engine.needs_cosines(self.state):
            action = self.engine.action_of(reply.text)
            cos = cosines(self.embedder, action, self.engine.anchors(self.state)) if action else {}
        self.record(self.engine.step(self.state, reply, cos))

    def check_priced(self, reply: Reply) -> None:
        """Under a cost limit (the episode's or the campaign's), a model's reply that cannot be
        priced stops the episode: an unknown cost never means no limit."""
        costed = self.limits.episode_cost_usd is not None or (self.budget is not None and self.budget.cost_usd)
        if not costed or self.priced_as is None or self.cost is not None:
            return
        error = LimitError(
            f"a cost limit is set, and the reply to {shown(self.priced_as)} cannot be priced "
            + (
                "(its price is per hour and the call has no duration)"
                if self.prices is not None and self.prices.hourly(self.priced_as)
                else "(no price for it in the price table)"
            )
            + ": the episode stops here rather than run without a limit"
        )
        error.kind = "unpriced"  # type: ignore[attr-defined]
        raise error

    def interrupted(self, reason: str, during: str) -> None:
        """Record that the episode was stopped from outside (Ctrl-C, a stopping campaign), after
        whatever whole steps it had waiting; best effort: a store that cannot take it (a second
        interrupt, a lost connection) leaves the steps as they are, and a resume continues them."""
        if self.rec.store is None or self.state.state == FAILED:
            return
        with contextlib.suppress(Exception):
            self.record(self.engine.interrupt(self.state, reason, during))
            self.flush()

    def fail(self, exc: BaseException, phase: str) -> EpisodeFailure:
        """Record ``exc`` as the episode's failure; the error to raise."""
        message, retryable, kind, cls = _failure(exc, phase)
        attempts = getattr(exc, "attempts", None) or []  # a model call's failed attempts, when one ended it
        self.record(self.engine.fail(self.state, message, retryable, cls, kind, attempts))
        return EpisodeFailure(message, self.episode_id, retryable, kind, cls)

    def needs_verdicts(self, judge_id: str) -> bool:
        return judge_id not in self.state.verdicts

    def judged(self, verdicts: list) -> None:
        if self.budget is not None:
            for v in verdicts:
                if not v.cache_hit and v.usage:
                    self.budget.add(
                        tokens_of(v.usage), self._cost(self.judge_priced_as or v.model, v.usage, v.latency_ms)
                    )
        self.record(verdicts)

    def score(self, judge_id: str) -> EpisodeScored:
        """The engine's score under ``judge_id`` (recorded once; an existing one is returned)."""
        if judge_id not in self.state.scored_judges:
            scored = self.engine.score(self.state, judge_id)
            self.record([scored])
            return scored
        return next(e for e in reversed(self.rec.events) if isinstance(e, EpisodeScored) and e.judge_id == judge_id)

    def outcome(self, scored: EpisodeScored | None) -> EpisodeOutcome:
        return EpisodeOutcome(self.episode_id, self.state, self.rec.events, scored, self.rec.appended)

    def _cost(self, model: str | None, usage: dict, latency_ms: float | None) -> float | None:
        if not self.prices:
            return None
        return self.prices.cost(model, usage, None if latency_ms is None else latency_ms / 1000)


def run_episode(
    setup: EpisodeSetup,
    tree: Tree,
    params: Params,
    agent: Agent,
    judge: Judge | None,
    recording: Recording = NOT_RECORDED,
    stop: threading.Event | None = None,
) -> EpisodeOutcome:
    """Play one episode to its end (or first failure) and score it.

    With ``recording.resume`` and an existing stream, continue it (see :class:`Episode`); the agent
    rebuilds its memory from the transcript, and only what is missing (turns, verdicts, the
    score) is added.

    Any exception raised by the agent, the embedder, the engine or the judge is recorded as
    ``EpisodeFailed`` (message, class, kind, retryable) and raised as :class:`EpisodeFailure`;
    the store's own errors (a concurrent writer) propagate as they are. The setup's ``limits`` and
    a campaign's ``budget`` are checked before every agent call (see ``core/run/limits.py``).

    A replayable agent's steps share appends (see :class:`Recorder`); any other agent's step
    is appended before its next call. Once ``stop`` is set (a campaign's Ctrl-C), the episode
    raises :class:`EpisodeStopped` before its next agent or judge call, its steps appended.
    """
    ep = Episode(
        setup,
        tree,
        params,
        agent.description,
        judge.description if judge else {"kind": "none"},
        recording,
        batch=getattr(agent, "replayable", False),
        claim=judge is not None and not getattr(judge, "replayable", False),
    )
    during = "between steps"
    try:
        if ep.existing:
            agent.resume(ep.existing)
        while ep.playing:
            if stop is not None and stop.is_set():
                raise EpisodeStopped(ep.episode_id)
            try:
                during = "agent call"
                with call_deadline(ep.deadline):  # a slow endpoint cannot hold the episode past its time limit
                    reply = agent.reply(ep.state.last_observation, ep.state.state, ep.state.step + 1)
                during = "between steps"
                ep.take(reply)
                ep.check_priced(reply)
            except Exception as exc:  # every failure is recorded, then raised
                if getattr(exc, "kind", None) == "deadline" and not ep.playing:
                    break  # the wall-time limit, reached during the call: recorded as LimitReached
                raise ep.fail(exc, f"step {ep.state.step + 1} ({ep.state.state})") from exc
        scored = None
        if judge is not None:
            if ep.needs_verdicts(judge.id):
                if stop is not None and stop.is_set():
                    raise EpisodeStopped(ep.episode_id)
                try:
                    during = "judging"
                    verdicts = judge.judge(tree, ep.state.conclusion_items or [])
                except Exception as exc:
                    raise ep.fail(exc, "judging") from exc
                during = "between steps"
                ep.judged(verdicts)
            scored = ep.score(judge.id)
    except BaseException as exc:
        with contextlib.suppress(Exception):  # whole steps that wait are kept (an interrupt, a store error)
            ep.flush()
        if isinstance(exc, (KeyboardInterrupt, EpisodeStopped)):
            ep.interrupted("interrupt" if isinstance(exc, KeyboardInterrupt) else "campaign stopping", during)
        raise
    ep.flush()
    return ep.outcome(scored)


def _limit_reached(
    limits: Limits, budget: Budget | None, tokens: int, cost: float | None, elapsed: float
) -> tuple[str, float, float] | None:
    """(limit, threshold, used) of the first limit reached before the next call, or None."""
    if limits.episode_tokens is not None and tokens >= limits.episode_tokens:
        return "episode_tokens", float(limits.episode_tokens), float(tokens)
    if limits.episode_cost_usd is not None and cost is not None and cost >= limits.episode_cost_usd:
        return "episode_cost_usd", limits.episode_cost_usd, round(cost, 6)
    if limits.episode_seconds is not None and elapsed >= limits.episode_seconds:
        return "episode_seconds", limits.episode_seconds, round(elapsed, 3)
    return budget.spent() if budget is not None else None
