"""The episode's event types: every fact of an InquiTree episode.

Step numbers count agent turns before the conclusion phase (DECISIONS.md #4).
Anything the agent must not see (the fake flag, hints above the current level,
ground truth) lives only in fields that never enter ``ObservationEmitted.text``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from inquitree.events.base import Event, Payload, event_type, upcaster

field = dataclasses.field


@event_type
class EpisodeStarted(Event):
    """All run parameters, so a replay never depends on a default that later changed."""

    TYPE = "EpisodeStarted"
    episode_id: str
    tree_id: str
    tree_hash: str
    tree_title: str
    n_subtopics: int
    params: dict[str, Any]  # tau, max_hints, max_turns, randomness, seed, embedder, template_set, ...
    agent: dict[str, Any]
    judge: dict[str, Any]
    code_version: str


@event_type
class ObservationEmitted(Event):
    """What the agent is shown. ``hidden`` holds annotations kept apart from the text."""

    TYPE = "ObservationEmitted"
    step: int
    state: str
    templates: list[str]
    text: str
    hidden: dict[str, Any] = field(default_factory=dict)


@event_type
class AgentReplied(Event):
    """One agent reply. v2 splits token usage (v1 had a single ``tokens`` total); v3 adds why the
    reply ended (``finish_reason``: ``stop``, ``length`` when ``max_tokens`` cut it, ``repeat``,
    ``call_limit``, ...) and the call's attempts that failed before it (kind, seconds, streamed
    chunks received): every attempt is accounted, failed ones too. Written only when set (``OPTIONAL``,
    so that logs recorded before them are unchanged): a reasoning model's thinking, kept apart from
    its answer (``reasoning``: shown in transcripts, never read as the action), whether the
    system text went as the start of the first user message (``system_as_user``: a chat template
    without a system role), and the endpoint's ``system_fingerprint`` (``fingerprint``: which
    backend configuration answered; a campaign run again against another says so)."""

    TYPE = "AgentReplied"
    VERSION = 3
    OPTIONAL = ("reasoning", "system_as_user", "fingerprint")
    step: int
    state: str
    raw: str
    action: str
    model: str | None = None
    usage: dict[str, int | None] = field(default_factory=dict)  # input, cached_input, cache_write, output
    latency_ms: float | None = None
    cache_hit: bool = False  # served from the call cache: no call was made
    truncated_from: int | None = None  # the reply's length in characters when it was cut to the size limit
    finish_reason: str | None = None  # None: not reported (replies recorded before v3, or agents without a call)
    failed_attempts: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str | None = None
    system_as_user: bool = False
    fingerprint: str | None = None


@upcaster("AgentReplied", 1)
def _agent_replied_v1_to_v2(p: Payload) -> Payload:
    total = p.pop("tokens", None)
    p["usage"] = {"input": None, "cached_input": None, "cache_write": None, "output": None, "total": total}
    return p


@upcaster("AgentReplied", 2, adds_only=True)
def _agent_replied_v2_to_v3(p: Payload) -> Payload:
    p["finish_reason"] = None  # a v2 reply did not record why it ended, nor failed attempts
    p["failed_attempts"] = []
    return p


@event_type
class MatchScored(Event):
    """Eq. 2-4: every candidate's cosine, the best one, tau and the outcome. Under the fitted match
    rule (core/game/matching.py) each candidate also carries its hints' cosines, ``best_cosine`` is
    the best of its text and hints, and ``rule`` holds what decided: the topic's cosine, the rule's
    features, its probability and threshold. Written only when set (``OPTIONAL``): episodes under
    the paper's rule record what they always did."""

    TYPE = "MatchScored"
    OPTIONAL = ("rule",)
    step: int
    state: str
    candidates: list[dict[str, Any]]  # [{"id": ..., "cosine": ...[, "hints": [...]]}] in candidate order
    best: str | None
    best_cosine: float | None
    tau: float
    accepted: bool
    rule: dict[str, Any] | None = None


@event_type
class DependencyBlocked(Event):
    """Eq. 5 failed: the best match is a subtopic whose prerequisites are not all visited."""

    TYPE = "DependencyBlocked"
    step: int
    subtopic_id: str
    missing: list[str]


@event_type
class HintIssued(Event):
    TYPE = "HintIssued"
    step: int
    state: str
    target: str
    level: int
    final: bool


@event_type
class Transitioned(Event):
    TYPE = "Transitioned"
    step: int
    from_state: str
    to_state: str
    node: str | None
    forced: bool = False
    reason: str = ""


@event_type
class ResultDrawn(Event):
    """Sec. 3.5: the Bernoulli(0.1 a) draw at a Result observation, and which text was shown."""

    TYPE = "ResultDrawn"
    step: int
    study_id: str
    result_id: str
    probability: float
    draw: float
    fake: bool
    fake_index: int | None
    redo: bool


@event_type
class DecisionParsed(Event):
    TYPE = "DecisionParsed"
    step: int
    decision: str | None
    keywords: list[str]
    valid: bool


@event_type
class TurnLimitReached(Event):
    TYPE = "TurnLimitReached"
    step: int
    max_turns: int


@event_type
class ConclusionSubmitted(Event):
    TYPE = "ConclusionSubmitted"
    items: list[str]


@event_type
class JudgeVerdict(Event):
    """S(c_i) for one ground-truth item. Re-judging appends; nothing is overwritten. v2 adds, as
    AgentReplied v3 did, why the judge's last answer ended (``finish_reason``) and the attempts of
    its calls that failed before the verdict (kind, seconds, streamed chunks received)."""

    TYPE = "JudgeVerdict"
    VERSION = 2
    judge_id: str
    judge: dict[str, Any]
    prompt_version: str
    item_id: str
    score: float | None  # None: the judge failed on this item (error in rationale)
    rationale: str
    raw_output: str
    error: bool = False
    model: str | None = None  # the model that answered (as the endpoint reports it)
    usage: dict[str, int | None] = field(default_factory=dict)  # summed over the attempts for this item
    latency_ms: float | None = None
    cache_hit: bool = False
    finish_reason: str | None = None  # None: not reported (verdicts before v2, judges without a call)
    failed_attempts: list[dict[str, Any]] = field(default_factory=list)


@upcaster("JudgeVerdict", 1, adds_only=True)
def _judge_verdict_v1_to_v2(p: Payload) -> Payload:
    p["finish_reason"] = None  # a v1 verdict did not record why its answer ended, nor failed attempts
    p["failed_attempts"] = []
    return p


@event_type
class EpisodeScored(Event):
    """Eq. 7-9 and the step bounds of Eq. 11-12, as computed by the engine."""

    TYPE = "EpisodeScored"
    judge_id: str
    coverage: float
    evidence: dict[str, float]
    scores: dict[str, float | None]
    q_sum: float | None  # None when no ground-truth item was scored
    q_norm: float | None
    k: int
    steps: int
    lower_bound: int
    upper_bound: int
    within_bounds: bool
    visited_subtopics: list[str]
    hints_issued: int
    forced_transitions: int


@event_type
class EpisodeFailed(Event):
    """The episode stopped on an error. ``error_class``: the exception's class; ``kind``: what went
    wrong in words a query can group by (timeout, context_length, wrong_shape, judge, ...). v2 adds
    ``attempts``: when a model call ended the episode, each of its attempts (kind, seconds,
    streamed chunks received), so the time and tokens of failed calls are accounted too."""

    TYPE = "EpisodeFailed"
    VERSION = 2
    step: int
    error: str
    retryable: bool
    error_class: str = ""
    kind: str = ""
    attempts: list[dict[str, Any]] = field(default_factory=list)


@upcaster("EpisodeFailed", 1)
def _episode_failed_v1_to_v2(p: Payload) -> Payload:
    p["attempts"] = []  # v1 did not record the failed call's attempts
    return p


@event_type
class LimitReached(Event):
    """A run limit was reached before the next call: ``limit`` is episode_tokens, episode_cost_usd,
    episode_seconds or campaign_tokens / campaign_cost_usd; the episode ends and is scored on what it reached."""

    TYPE = "LimitReached"
    step: int
    limit: str
    threshold: float
    used: float


@event_type
class ControlStarted(Event):
    """A decontextualized control run (Sec. 4.3, #21): who answers, on which trees, with which prompt."""

    TYPE = "ControlStarted"
    agent: dict[str, Any]
    trees: list[str]
    seed: int
    prompt_version: str
    items: int


@event_type
class ControlAnswered(Event):
    """The decontextualized control (Sec. 4.3, #21): one result text shown alone, the model's verdict."""

    TYPE = "ControlAnswered"
    agent: dict[str, Any]
    tree_id: str
    result_id: str
    shown_fake: bool
    fake_index: int | None
    answer: str | None  # "VALID" | "INVALID" | None when the reply is not exactly one of them
    correct: bool
    raw: str
    usage: dict[str, int | None] = field(default_factory=dict)
    latency_ms: float | None = None
    cache_hit: bool = False


@event_type
class EpisodeInterrupted(Event):
    """The episode was stopped from outside before its end, its steps so far recorded: ``reason``
    is ``interrupt`` (Ctrl-C, SIGINT) or ``campaign stopping`` (its campaign was interrupted and
    the episode stopped at its step boundary); ``during``: what it was doing (``agent call``,
    ``judging`` or ``between steps``). A resume continues it after an ``EpisodeResumed``."""

    TYPE = "EpisodeInterrupted"
    step: int
    reason: str
    during: str


@event_type
class EpisodeResumed(Event):
    """A failed or interrupted episode continues from the state it was left in (``--resume``, a
    campaign's rerun).

    ``agent`` and ``judge``: the descriptions it continues with where they differ from the ones
    recorded at its start (a longer timeout, other request options), so the log says how every
    step was played; None when nothing changed (and in episodes recorded before they existed)."""

    TYPE = "EpisodeResumed"
    step: int
    after_error: str
    agent: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None


@event_type
class CampaignStarted(Event):
    """``suite run`` (or one of its shards or workers) began: the suite's grid, enough to name every
    cell's episode (``core.run.campaign.Cell.episode_id``), so a viewer shows the cells not yet started.
    Stream ``campaign/<suite>``; no endpoint, key or option is recorded here."""

    TYPE = "CampaignStarted"
    name: str
    source: str
    trees: list[str]
    agents: list[str]  # labels, as the cells and episode ids name them
    judges: list[str]
    randomness: list[int]
    runs: int
    shard: list[int]  # [index, count]
    cells: int  # this shard's cells
    concurrency: int
    budget_tokens: int | None = None
    budget_cost_usd: float | None = None
    run_id: str | None = None  # this process's run: its CampaignAlive and CampaignEnded name it


@event_type
class CampaignAlive(Event):
    """A campaign's process is still running (``suite run``, a shard or a worker), appended every
    ``core.run.campaign.HEARTBEAT_SECONDS`` to ``campaign/<suite>``: a run whose heartbeats stop
    without a ``CampaignEnded`` died (killed, or its machine went down)."""

    TYPE = "CampaignAlive"
    run_id: str
    done: int  # cells this run has ended so far
    left: int  # cells this run has yet to end


@event_type
class CampaignEnded(Event):
    """A campaign's process ended: ``how`` is finished (every cell it took is ended), interrupted
    (Ctrl-C: the episodes in flight stopped at a step; the next run resumes them) or failed (an
    error ended the campaign itself, not one cell)."""

    TYPE = "CampaignEnded"
    run_id: str
    how: str  # finished | interrupted | failed
    done: int
    failed: int
    stopped: int
    not_started: int


@event_type
class EpisodeImported(Event):
    """``episodes import`` appended an episode made elsewhere. Stream ``import/<episode id>``, recorded
    beside the episode (whose own events keep the exporter's hashes). It says on whose word the
    episode stands: whether the file carried hashes, which key signed it, and which key, if any,
    checked that signature at import. The importing lab's key never signs the imported stream."""

    TYPE = "EpisodeImported"
    episode_id: str
    file_name: str
    file_sha256: str
    events: int
    hashes: bool  # the file carried each event's hashes, and they matched
    signed_by: str | None = None  # the key id the file's signature names
    checked_with: str | None = None  # the key that verified that signature at import (None: unchecked)


@event_type
class LabelRecorded(Event):
    """A person's reading of one sampled item of a campaign (``inquitree label``), appended to the
    stream ``labels/<sample_id>``: a move (``kind`` ``move``: the agent's reply at ``stream_id``'s
    version ``position``, an ``AgentReplied`` at the Topic or Subtopic) answered with the candidate
    it meant or ``none``; or a conclusion (``conclusion``: the ground-truth item ``item_id`` of the
    episode whose ``ConclusionSubmitted`` is at ``position``) answered ``stated``, ``partial`` or
    ``absent``; ``skip`` when the labeller passed. The sample's ``seed`` and ``size`` say how it was
    drawn; ``labeller`` who answered. Nothing is overwritten: a second labeller's answers stand
    beside the first's, and a later answer of the same labeller to the same item is the one read."""

    TYPE = "LabelRecorded"
    labeller: str
    sample_id: str
    kind: str  # move | conclusion
    suite: str
    seed: int
    size: int
    stream_id: str
    position: int
    answer: str
    item_id: str | None = None
