"""Replay: fold a stored episode into its transcript and state, and re-simulate it.

Re-simulation feeds the recorded replies and the recorded cosines (Eq. 2 values
from ``MatchScored``) into a fresh engine built from the recorded parameters,
seed, tree and template set, and requires the identical event sequence. Judge
verdicts and failures are inputs from outside the engine and are taken as
recorded; a reached run limit is an outside input too, and the engine's ending is re-derived;
every ``EpisodeScored`` is recomputed. No model, no network.
"""

from __future__ import annotations

import dataclasses

from inquitree.core.game import (
    Engine,
    EngineError,
    EpisodeState,
    Params,
    Reply,
    TemplateError,
    TemplateSet,
    Tree,
    TreeError,
    fold,
    recorded_cosines,
    resolve_tree,
)
from inquitree.events import (
    AgentReplied,
    EpisodeFailed,
    EpisodeInterrupted,
    EpisodeResumed,
    EpisodeScored,
    EpisodeStarted,
    Event,
    JudgeVerdict,
    LimitReached,
    MatchScored,
    ObservationEmitted,
    canonical_json,
)


@dataclasses.dataclass
class ReplayResult:
    identical: bool
    events: int
    first_difference: str | None = None


def transcript(events: list[Event]) -> list[tuple[str, str, str]]:
    """(speaker, state, text) for every observation and reply, in order."""
    out = []
    for ev in events:
        if isinstance(ev, ObservationEmitted):
            out.append(("environment", ev.state, ev.text))
        elif isinstance(ev, AgentReplied):
            out.append(("agent", ev.state, ev.raw))
    return out


def _same(a: Event, b: Event) -> bool:
    return a.TYPE == b.TYPE and canonical_json(a.to_payload()) == canonical_json(b.to_payload())


def _describe(i: int, recorded: Event | None, produced: Event | None) -> str:
    if recorded is None:
        return f"event #{i}: the log ends, but re-simulation produced {produced.TYPE if produced else 'nothing'}"
    if produced is None:
        return f"event #{i}: re-simulation produced nothing, the log has {recorded.TYPE}"
    if recorded.TYPE != produced.TYPE:
        return f"event #{i}: the log has {recorded.TYPE}, re-simulation produced {produced.TYPE}"
    rp, pp = recorded.to_payload(), produced.to_payload()
    keys = [k for k in sorted(set(rp) | set(pp)) if canonical_json(rp.get(k)) != canonical_json(pp.get(k))]
    parts = [
        f"{k}: log {canonical_json(rp.get(k))[:120]} vs re-simulated {canonical_json(pp.get(k))[:120]}" for k in keys
    ]
    return f"event #{i} ({recorded.TYPE}): " + "; ".join(parts)


def resimulate(recorded: list[Event], tree: Tree | None = None, templates: TemplateSet | None = None) -> ReplayResult:  # noqa: C901 - the replay loop feeds each recorded input to the engine in its order
    if not recorded or not isinstance(recorded[0], EpisodeStarted):
        return ReplayResult(False, len(recorded), "event #0: the stream does not start with EpisodeStarted")
    started: EpisodeStarted = recorded[0]
    params = Params.from_dict(started.params)
    try:
        tree = tree or resolve_tree(started.tree_id)
        templates = templates or TemplateSet(params.template_set)
    except (TreeError, TemplateError) as exc:
        return ReplayResult(False, len(recorded), f"cannot rebuild the episode's inputs: {exc}")
    if tree.content_hash != started.tree_hash:
        return ReplayResult(
            False,
            len(recorded),
            f"tree {tree.id} ({tree.source}) has changed since the episode was "
            f"recorded (content hash {tree.content_hash[:12]} vs {started.tree_hash[:12]})",
        )
    if templates.hash != params.template_hash:
        return ReplayResult(
            False, len(recorded), f"template set {templates.name} has changed since the episode was recorded"
        )
    engine = Engine(tree, params, templates)
    produced = engine.start(started.episode_id, started.agent, started.judge, started.code_version)
    produced[0] = started  # the recorded start is the input (its code version is history)
    pos, state = 0, EpisodeState()
    while True:
        for j, ev in enumerate(produced):
            rec = recorded[pos + j] if pos + j < len(recorded) else None
            if rec is None or not _same(rec, ev):
                return ReplayResult(False, len(recorded), _describe(pos + j, rec, ev))
        state = fold(produced, state)
        pos += len(produced)
        if pos >= len(recorded):
            return ReplayResult(True, len(recorded))
        ev = recorded[pos]
        try:
            if isinstance(ev, AgentReplied):
                reply = Reply(
                    ev.raw,
                    ev.model,
                    dict(ev.usage),
                    ev.latency_ms,
                    ev.cache_hit,
                    ev.truncated_from,
                    ev.finish_reason,
                    [dict(a) for a in ev.failed_attempts],
                    ev.reasoning,
                    ev.system_as_user,
                    ev.fingerprint,
                )
                cos = None
                if engine.needs_cosines(state):
                    nxt = recorded[pos + 1] if pos + 1 < len(recorded) else None
                    cos = recorded_cosines(nxt.candidates, nxt.rule) if isinstance(nxt, MatchScored) else {}
                produced = engine.step(state, reply, cos)
            elif isinstance(ev, (JudgeVerdict, EpisodeFailed, EpisodeInterrupted)):  # facts from outside the engine
                produced = [ev]
            elif isinstance(ev, LimitReached):
                produced = engine.end_by_limit(state, ev.limit, ev.threshold, ev.used)
            elif isinstance(ev, EpisodeResumed):
                produced = engine.resume(state, ev.agent, ev.judge)
            elif isinstance(ev, EpisodeScored):
                produced = [engine.score(state, ev.judge_id)]
            else:
                return ReplayResult(
                    False, len(recorded), f"event #{pos}: unexpected {ev.TYPE} where a reply, verdict or score belongs"
                )
        except EngineError as exc:
            return ReplayResult(False, len(recorded), f"event #{pos}: the engine refused the recorded input: {exc}")
