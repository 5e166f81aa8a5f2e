"""The InquiTree game engine (paper Sec. 3.1-3.5, Appendix B and C): a pure state machine.

``Engine.step(state, reply, cosines)`` takes the episode state (a fold over its
events), the agent's reply and the cosines between the reply's ACTION and the
current candidates, and returns the new events. It does no I/O: embeddings,
the store, the clock and the agent live outside. Randomness is counter-based
(a hash of the seed and the draw index), so the state needs no generator
object and a fold of the events restores it exactly.

Defaults where the paper is silent follow docs/DECISIONS.md; the
numbers (#4, #5, ...) below refer to it.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import re
from typing import TYPE_CHECKING, Any, Iterable

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.game import matching
from inquitree.events import (
    AgentReplied,
    ConclusionSubmitted,
    DecisionParsed,
    DependencyBlocked,
    EpisodeFailed,
    EpisodeInterrupted,
    EpisodeResumed,
    EpisodeScored,
    EpisodeStarted,
    Event,
    HintIssued,
    JudgeVerdict,
    LimitReached,
    MatchScored,
    ObservationEmitted,
    ResultDrawn,
    Transitioned,
    TurnLimitReached,
)

if TYPE_CHECKING:  # the prompts (and Jinja) and the tree are loaded by whoever builds an engine, not by a fold
    from inquitree.core.game.prompts import TemplateSet
    from inquitree.core.game.tree import Tree

TOPIC, SUBTOPIC, STUDY, RESULT, CONCLUSION, DONE, FAILED = (
    "topic",
    "subtopic",
    "study",
    "result",
    "conclusion",
    "done",
    "failed",
)
DECISIONS = ("redo_study", "explore_new_subtopic", "draw_conclusion")
_DECISION_RE = {d: re.compile(r"\b" + r"[_\s]+".join(d.split("_")) + r"\b", re.IGNORECASE) for d in DECISIONS}
_ITEM_RE = re.compile(r"^\s*(?:[-*\u2022]\s*)?(?:\(\d+\)|\d+[.)]|[-*\u2022])\s+(.+?)\s*$")


def threshold_at(state: str, tau: float, tau_study: float | None) -> float:
    """The threshold a match at ``state`` must reach: ``tau_study`` at the Subtopic state (one
    candidate, the subtopic's study) when it is set, else ``tau``."""
    return tau_study if state == SUBTOPIC and tau_study is not None else tau


class EngineError(InquiTreeError):
    pass


@dataclasses.dataclass(frozen=True)
class Params:
    """A run's parameters; every one is recorded in EpisodeStarted."""

    tau: float
    max_hints: int
    max_turns: int
    randomness: int
    seed: int
    embedder: str
    template_set: str
    template_hash: str
    max_reasks: int | None = 3  # C.4.2 re-asks in one Result visit before the engine asks for the conclusion
    tau_study: float | None = None  # the threshold at the Subtopic state (one candidate); None: tau (#1)
    action_rule: int = 1  # which text is the ACTION (#12): 1 as first written, 2 drops a leading THOUGHT: label
    # How the fake-result draws are keyed (#13): 1 by the seed alone, so every tree of a run drew the
    # same numbers (at a=3 in the Qwen study all 18 first results drew 0.649: no fake anywhere);
    # 2 by the seed and the tree, so papers draw independently (agents on one tree still share them).
    draw_rule: int = 2
    # What a conclusion submits: 1 every item as listed; 2 each distinct item once (a small model may
    # list five items three times over), and from a reply cut short (by max_tokens, the call limit or
    # the size limit) not the last item, which the cut may have left a fragment.
    conclusion_rule: int = 1
    # How a free-text ACTION is matched (core/game/matching.py): None, the paper's rule; else the
    # fitted rule whole (its coefficients and thresholds), so a replay never reads a later refit.
    # Recorded only when set, so that episodes under the paper's rule record what they always did.
    match_rule: dict[str, Any] | None = None

    # Recorded before these existed: the value that replays such an episode as it ran.
    _ABSENT = {
        "max_reasks": None,
        "tau_study": None,
        "action_rule": 1,
        "draw_rule": 1,
        "conclusion_rule": 1,
        "match_rule": None,
    }

    @classmethod
    def from_dict(cls, recorded: dict[str, Any]) -> "Params":
        """The parameters as recorded in EpisodeStarted (keys this version does not know are ignored).

        A parameter added after an episode was recorded gets the value it had then (``_ABSENT``):
        no bound on re-asks, one tau for both states, the first ACTION rule, so it replays as it ran."""
        values: dict[str, Any] = {
            f.name: recorded.get(f.name, cls._ABSENT[f.name]) if f.name in cls._ABSENT else recorded[f.name]
            for f in dataclasses.fields(cls)
        }
        return cls(**values)

    def tau_at(self, state: str) -> float:
        """The threshold a match at ``state`` must reach."""
        return threshold_at(state, self.tau, self.tau_study)

    def validate(self) -> None:
        if not (0 < self.tau <= 1):
            raise EngineError(f"--tau {self.tau}: tau must be in (0, 1]")
        if self.tau_study is not None and not (0 < self.tau_study <= 1):
            raise EngineError(f"--tau-study {self.tau_study}: tau must be in (0, 1]")
        if self.action_rule not in ACTION_RULES:
            raise EngineError(f"action_rule {self.action_rule}: this version knows rules {sorted(ACTION_RULES)}")
        if self.draw_rule not in (1, 2):
            raise EngineError(f"draw_rule {self.draw_rule}: this version knows rules 1 and 2")
        if self.conclusion_rule not in (1, 2):
            raise EngineError(f"conclusion_rule {self.conclusion_rule}: this version knows rules 1 and 2")
        if self.randomness not in range(0, 11):
            raise EngineError(
                f"--randomness {self.randomness}: the randomness level a must be an integer 0..10 "
                "(a fake result is shown with probability 10a%)"
            )
        if self.max_hints < 1:
            raise EngineError(f"--max-hints {self.max_hints}: H must be at least 1")
        if self.max_turns < 1:
            raise EngineError(f"--max-turns {self.max_turns}: must be at least 1")
        if self.max_reasks is not None and self.max_reasks < 0:
            raise EngineError(f"--max-reasks {self.max_reasks}: must be 0 or more")
        if self.match_rule is not None:
            try:
                matching.check_rule(self.match_rule)
            except matching.MatchRuleError as exc:
                raise EngineError(str(exc)) from None

    def recorded(self) -> dict[str, Any]:
        """The parameters as EpisodeStarted records them (``match_rule`` only when set)."""
        found = dataclasses.asdict(self)
        if found["match_rule"] is None:
            del found["match_rule"]
        return found


@dataclasses.dataclass(frozen=True)
class Reply:
    """What an agent said, with what its maker reports about the call."""

    text: str
    model: str | None = None
    usage: dict[str, int | None] = dataclasses.field(default_factory=dict)
    latency_ms: float | None = None
    cache_hit: bool = False  # served from the call cache, not by a new call
    truncated_from: int | None = None  # the reply's length before it was cut to the size limit
    finish_reason: str | None = None  # why the reply ended, as the call reports it
    failed_attempts: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # the call's attempts before
    reasoning: str | None = None  # a reasoning model's thinking, kept apart: the engine reads only ``text``
    system_as_user: bool = False  # the system text went as the start of the first user message
    fingerprint: str | None = None  # the endpoint's system_fingerprint, when it sent one

    def replied(self, step: int, state: str, action: str) -> AgentReplied:
        return AgentReplied(
            step=step,
            state=state,
            raw=self.text,
            action=action,
            model=self.model,
            usage=dict(self.usage),
            latency_ms=self.latency_ms,
            cache_hit=self.cache_hit,
            truncated_from=self.truncated_from,
            finish_reason=self.finish_reason,
            failed_attempts=list(self.failed_attempts),
            reasoning=self.reasoning,
            system_as_user=self.system_as_user,
            fingerprint=self.fingerprint,
        )


ACTION_RULES = {1, 2}
ACTION_RULE = 2  # what new episodes are played with
_THOUGHT_LABEL = re.compile(r"^\W*THOUGHT\W*:\W*", re.IGNORECASE)


def extract_action(reply: str, rule: int = ACTION_RULE) -> str:
    """#12: the text after the last ``ACTION:``; without one, the whole reply; trimmed. Rule 2
    also drops a leading ``THOUGHT:`` label from a reply that has no ``ACTION:``: a
    real model that forgets the marker writes ``THOUGHT: I will study ...``, and the label made
    the action's text score lower against every candidate."""
    idx = reply.rfind("ACTION:")
    text = reply[idx + len("ACTION:") :] if idx >= 0 else reply
    if idx < 0 and rule >= 2:
        text = _THOUGHT_LABEL.sub("", text.strip(), count=1)
    return text.strip().strip("*").strip()


def parse_decision(action: str) -> tuple[str | None, list[str]]:
    """#11: exactly one distinct keyword is a decision; none or several is invalid."""
    found = [d for d in DECISIONS if _DECISION_RE[d].search(action)]
    return (found[0] if len(found) == 1 else None), found


def _plain(text: str) -> str:
    """Text for comparison: no Markdown emphasis or heading marks, one space, lower case."""
    return " ".join(re.sub(r"[*_#`>]+", " ", text).split()).lower()


def split_conclusion(action: str, prompt_lines: frozenset[str] = frozenset()) -> list[str]:
    """#16: the conclusion's items are its numbered or bulleted lines (else the whole text).

    A line with no content is not an item: no letter or digit (``...``, bare punctuation), or a
    line of the prompt echoed back (``prompt_lines``, compared after :func:`_plain`), such as
    the conclusion template's own example list."""

    def has_content(item: str) -> bool:
        return bool(re.search(r"[^\W_]", item)) and _plain(item) not in prompt_lines

    items = [m.group(1) for line in action.splitlines() if (m := _ITEM_RE.match(line))]
    if items:
        return [i for i in items if has_content(i)]
    return [action.strip()] if action.strip() and has_content(action.strip()) else []


CONCLUSION_RULE = 2  # what new episodes are played with (Params.conclusion_rule)
CUT_SHORT = frozenset({"length", "call_limit", "max_reply_chars"})  # finish reasons of a reply cut mid-text


def submitted_items(items: list[str], finish_reason: str | None, truncated: bool) -> list[str]:
    """Conclusion rule 2: each distinct item once (compared after :func:`_plain`), in the order first
    listed; when the reply was cut short, its last item is left out unless it ends a sentence (the
    cut may have stopped it mid-claim). Nothing is invented: an empty list stays empty."""
    kept: list[str] = []
    seen: set[str] = set()
    for item in items:
        key = _plain(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    if kept and (finish_reason in CUT_SHORT or truncated) and not re.search(r"[.!?)\]]\s*$", kept[-1]):
        kept.pop()
    return kept


REPEATED_ITEMS = 3  # a conclusion reply is cut once this many of its lines repeat earlier ones


def repeats_itself(reply: str) -> bool:
    """Whether a conclusion reply goes round in circles: :data:`REPEATED_ITEMS` of its complete
    lines (items with their numbers and bullets dropped, compared after :func:`_plain`) repeat
    earlier ones. A small model at temperature 0 can list the same five items until its token
    limit (17 items, 5 distinct); a model agent stops reading its reply here (the
    reply records ``finish_reason`` ``repeat``), and the items it listed stay as they were."""
    return cut_where_it_repeats(reply) is not None


def cut_where_it_repeats(reply: str) -> str | None:
    """The reply up to the end of the line where :data:`REPEATED_ITEMS` of its complete lines have
    repeated earlier ones (the same cut a streamed reply gets), or None when it does not go round."""
    lines = reply.splitlines(keepends=True)
    if lines and not reply.endswith("\n"):
        lines = lines[:-1]  # a line still being written is not complete
    seen: set[str] = set()
    repeats, at = 0, 0
    for line in lines:
        at += len(line)
        m = _ITEM_RE.match(line.rstrip("\n"))
        key = _plain(m.group(1) if m else line)
        if not key:
            continue
        if key in seen:
            repeats += 1
            if repeats >= REPEATED_ITEMS:
                return reply[:at]
        seen.add(key)
    return None


def uniform(seed: int | str, index: int, purpose: str) -> float:
    """A uniform number in [0, 1) from (seed, index, purpose): counter-based, replayable."""
    h = hashlib.sha256(f"{seed}:{index}:{purpose}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def _node(ev: Transitioned) -> str:
    """The node a transition into a Subtopic or Study names (always set for those)."""
    if ev.node is None:
        raise EngineError(f"step {ev.step}: a transition to {ev.to_state} names no node")
    return ev.node


@dataclasses.dataclass
class EpisodeState:
    """Everything the engine needs, rebuilt by folding the episode's events (``apply``)."""

    episode_id: str = ""
    params: Params | None = None
    state: str = TOPIC
    step: int = 0
    subtopic: str | None = None
    study: str | None = None
    failures: int = 0  # hints issued in the current state visit (#6)
    reasks: int = 0  # invalid decisions in a row in the current Result visit
    hint_target: str | None = None
    visits: dict[str, int] = dataclasses.field(default_factory=dict)  # V^sub with visit counts
    # the subtopics entered by the agent's own recognised move, not by a forced transition (#32)
    own_visits: set[str] = dataclasses.field(default_factory=set)
    study_runs: dict[str, int] = dataclasses.field(default_factory=dict)
    draws: int = 0
    true_results: set[str] = dataclasses.field(default_factory=set)
    last_observation: str = ""
    hints_issued: int = 0
    forced_transitions: int = 0
    conclusion_items: list[str] | None = None
    verdicts: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)
    error: str | None = None
    failed_from: str | None = None  # the state a failure interrupted, for EpisodeResumed
    interrupted: str | None = None  # why it was stopped from outside, until it is resumed
    scored_judges: set[str] = dataclasses.field(default_factory=set)

    @property
    def in_subtopic(self) -> str:
        """The subtopic the episode is in (an error outside one: the events are inconsistent)."""
        if self.subtopic is None:
            raise EngineError(f"step {self.step}: no subtopic has been entered")
        return self.subtopic

    @property
    def in_study(self) -> str:
        """The study the episode is in (an error outside one)."""
        if self.study is None:
            raise EngineError(f"step {self.step}: no study has been entered")
        return self.study

    def copy(self) -> "EpisodeState":
        new = copy.copy(self)
        new.visits, new.study_runs = dict(self.visits), dict(self.study_runs)
        new.true_results, new.own_visits = set(self.true_results), set(self.own_visits)
        new.verdicts = {k: dict(v) for k, v in self.verdicts.items()}
        new.scored_judges = set(self.scored_judges)
        return new

    def apply(self, ev: Event) -> None:  # noqa: C901 - the fold: one branch an event type
        """Fold one event into the state."""
        if isinstance(ev, EpisodeStarted):
            self.episode_id = ev.episode_id
            self.params = Params.from_dict(ev.params)
        elif isinstance(ev, AgentReplied):
            if ev.state != CONCLUSION:
                self.step = ev.step
        elif isinstance(ev, ObservationEmitted):
            self.last_observation = ev.text
        elif isinstance(ev, HintIssued):
            self.failures = ev.level
            self.hint_target = ev.target
            self.hints_issued += 1
        elif isinstance(ev, DecisionParsed):
            self.reasks = 0 if ev.valid else self.reasks + 1
        elif isinstance(ev, Transitioned):
            self.state = ev.to_state
            self.failures, self.hint_target, self.reasks = 0, None, 0
            if ev.forced:
                self.forced_transitions += 1
            if ev.to_state == SUBTOPIC:
                self.subtopic = node = _node(ev)
                self.visits[node] = self.visits.get(node, 0) + 1
                if not ev.forced:
                    self.own_visits.add(node)
            elif ev.to_state == STUDY:
                self.study = ev.node
            elif ev.to_state == TOPIC:
                self.subtopic = self.study = None
        elif isinstance(ev, ResultDrawn):
            self.draws += 1
            self.study_runs[ev.study_id] = self.study_runs.get(ev.study_id, 0) + 1
            if not ev.fake:
                self.true_results.add(ev.result_id)
        elif isinstance(ev, ConclusionSubmitted):
            self.conclusion_items = list(ev.items)
            self.state = DONE
        elif isinstance(ev, JudgeVerdict):
            self.verdicts.setdefault(ev.judge_id, {})[ev.item_id] = ev.score
        elif isinstance(ev, EpisodeScored):
            self.scored_judges.add(ev.judge_id)
        elif isinstance(ev, EpisodeFailed):
            self.failed_from, self.state, self.error = self.state, FAILED, ev.error
        elif isinstance(ev, EpisodeInterrupted):
            self.interrupted = ev.reason
        elif isinstance(ev, EpisodeResumed):
            self.interrupted = None
            if self.state == FAILED:  # else: after an interruption, or only a change of settings
                self.state, self.error, self.failed_from = self.failed_from or TOPIC, None, None


def _target(state: EpisodeState) -> str:
    """The hint target of the state visit, which a forced transition goes to (#5)."""
    if state.hint_target is None:
        raise EngineError(f"step {state.step}: a forced transition without a hint target")
    return state.hint_target


# The event types whose branch of ``EpisodeState.apply`` sets ``state`` or ``step`` (a failure
# keeps the state it left, so Transitioned is one): folding only these gives the same state and
# step as folding the whole episode, which is all a listing shows (tests/test_engine.py checks it).
STATE_AND_STEP_EVENTS: tuple[str, ...] = tuple(
    cls.TYPE for cls in (EpisodeStarted, AgentReplied, Transitioned, ConclusionSubmitted, EpisodeFailed, EpisodeResumed)
)


def fold(events: Iterable[Event], state: EpisodeState | None = None) -> EpisodeState:
    state = state or EpisodeState()
    for ev in events:
        state.apply(ev)
    return state


class _Step:
    """Collects one step's events, applying each to a working copy of the state."""

    def __init__(self, state: EpisodeState):
        self.state = state.copy()
        self.events: list[Event] = []
        self.templates: list[str] = []
        self.texts: list[str] = []
        self.hidden: dict[str, Any] = {}

    def emit(self, ev: Event) -> None:
        self.events.append(ev)
        self.state.apply(ev)

    def show(self, template_id: str, text: str, **hidden: Any) -> None:
        self.templates.append(template_id)
        self.texts.append(text)
        self.hidden.update(hidden)

    def observe(self, step: int) -> None:
        self.emit(
            ObservationEmitted(
                step=step,
                state=self.state.state,
                templates=self.templates,
                text="\n\n".join(self.texts),
                hidden=self.hidden,
            )
        )


_PROMPT_LINES: dict[str, frozenset[str]] = {}  # template set hash -> its conclusion prompts' lines


def _prompt_lines(templates: TemplateSet) -> frozenset[str]:
    """The conclusion prompts' own lines (echoed back, they are not conclusion items), rendered
    once per template set: every episode's engine used to render them again (bench/engine.py)."""
    lines = _PROMPT_LINES.get(templates.hash)
    if lines is None:
        lines = _PROMPT_LINES[templates.hash] = frozenset(
            p
            for tid in ("C.5", "C.6")
            for line in templates.render(tid).splitlines()
            if (p := _plain(m.group(1) if (m := _ITEM_RE.match(line)) else line))
        )
    return lines


class Engine:
    def __init__(self, tree: Tree, params: Params, templates: TemplateSet):
        params.validate()
        self.tree, self.p, self.t = tree, params, templates
        self.prompt_lines = _prompt_lines(templates)

    # -- public API ----------------------------------------------------------------------------
    def action_of(self, reply_text: str) -> str:
        """The ACTION of a reply, by this episode's rule (#12)."""
        return extract_action(reply_text, self.p.action_rule)

    def start(self, episode_id: str, agent: dict[str, Any], judge: dict[str, Any], code_version: str) -> list[Event]:
        s = _Step(EpisodeState())
        s.emit(
            EpisodeStarted(
                episode_id=episode_id,
                tree_id=self.tree.id,
                tree_hash=self.tree.content_hash,
                tree_title=self.tree.title,
                n_subtopics=self.tree.n,
                params=self.p.recorded(),
                agent=agent,
                judge=judge,
                code_version=code_version,
            )
        )
        s.show("C.1.1", self.t.render("C.1.1", content=self.tree.topic))
        s.observe(0)
        return s.events

    def candidates(self, state: EpisodeState) -> list[tuple[str, str]]:
        """C(s_t) as (id, canonical text): #8."""
        if state.state == TOPIC:
            return [(s.id, s.text) for s in self.tree.subtopics]
        if state.state == SUBTOPIC:
            return [(st.id, st.text) for st in self.tree.subtopic[state.in_subtopic].studies]
        return []

    def anchors(self, state: EpisodeState) -> list[tuple[str, str]]:
        """What the ACTION is embedded against in ``state``, as (key, text): the candidates' texts,
        and under the fitted rule their hints and the topic's text (core/game/matching.py)."""
        subtopic = state.in_subtopic if state.state == SUBTOPIC else None
        return matching.match_anchors(self.tree, state.state, subtopic, self.p.match_rule is not None)

    def needs_cosines(self, state: EpisodeState) -> bool:
        return state.state in (TOPIC, SUBTOPIC)

    def step(self, state: EpisodeState, reply: Reply, cosines: dict[str, float] | None = None) -> list[Event]:
        """One agent reply -> the new events (state is not modified)."""
        if state.state in (DONE, FAILED):
            raise EngineError(f"episode {state.episode_id} is {state.state}: it takes no more replies")
        s = _Step(state)
        action = self.action_of(reply.text)
        if state.state == CONCLUSION:
            s.emit(reply.replied(state.step, CONCLUSION, action))
            items = split_conclusion(action, self.prompt_lines)
            if self.p.conclusion_rule == 2:
                items = submitted_items(items, reply.finish_reason, reply.truncated_from is not None)
            s.emit(ConclusionSubmitted(items=items))
            return s.events
        step = state.step + 1
        s.emit(reply.replied(step, state.state, action))
        if state.state == TOPIC:
            self._topic(s, step, action, cosines)
        elif state.state == SUBTOPIC:
            self._subtopic(s, step, action, cosines)
        elif state.state == RESULT:
            self._result(s, step, action)
        elif state.state == STUDY:
            self._run_study(s, step, redo=True)
        if s.state.state != CONCLUSION and step >= self.p.max_turns:  # #3
            s.emit(TurnLimitReached(step=step, max_turns=self.p.max_turns))
            s.emit(
                Transitioned(step=step, from_state=s.state.state, to_state=CONCLUSION, node=None, reason="turn_limit")
            )
            s.show("C.6", self.t.render("C.6"))
        s.observe(step)
        return s.events

    def fail(
        self,
        state: EpisodeState,
        error: str,
        retryable: bool,
        error_class: str = "",
        kind: str = "",
        attempts: list[dict[str, Any]] | None = None,
    ) -> list[Event]:
        return [
            EpisodeFailed(
                step=state.step,
                error=error,
                retryable=retryable,
                error_class=error_class,
                kind=kind,
                attempts=list(attempts or []),
            )
        ]

    def end_by_limit(self, state: EpisodeState, limit: str, threshold: float, used: float) -> list[Event]:
        """A run limit (tokens, cost, wall time, the campaign's budget) was reached before the next
        call: the episode ends here with no conclusion items, and is scored on what it reached."""
        if state.state in (DONE, FAILED):
            raise EngineError(f"episode {state.episode_id} is {state.state}: no limit can end it")
        events: list[Event] = [LimitReached(step=state.step, limit=limit, threshold=threshold, used=used)]
        if state.state != CONCLUSION:
            events.append(
                Transitioned(
                    step=state.step,
                    from_state=state.state,
                    to_state=CONCLUSION,
                    node=None,
                    forced=True,
                    reason=f"limit:{limit}",
                )
            )
        events.append(ConclusionSubmitted(items=[]))
        return events

    def resume(
        self, state: EpisodeState, agent: dict[str, Any] | None = None, judge: dict[str, Any] | None = None
    ) -> list[Event]:
        """Continue a failed or interrupted episode, or an unfinished one whose agent or judge
        settings changed; ``agent``/``judge``: the changed descriptions it continues with."""
        if (
            state.state != FAILED
            and not state.interrupted
            and (state.state == DONE or (agent is None and judge is None))
        ):
            raise EngineError(f"episode {state.episode_id} is {state.state}, not failed: nothing to resume")
        after = state.error or (f"interrupted ({state.interrupted})" if state.interrupted else "")
        return [EpisodeResumed(step=state.step, after_error=after, agent=agent, judge=judge)]

    def interrupt(self, state: EpisodeState, reason: str, during: str) -> list[Event]:
        """The episode is stopped from outside (see :class:`EpisodeInterrupted`); its state stays."""
        if state.state == FAILED or state.scored_judges:
            raise EngineError(f"episode {state.episode_id} has ended: there is nothing to interrupt")
        return [EpisodeInterrupted(step=state.step, reason=reason, during=during)]

    def score(self, state: EpisodeState, judge_id: str) -> EpisodeScored:
        """Eq. 7 (coverage), Eq. 8 (evidence), Eq. 9 (Q) with q_norm = Q/k (#15), and Eq. 11-12 bounds."""
        verdicts = state.verdicts.get(judge_id, {})
        scores = {c.id: verdicts.get(c.id) for c in self.tree.conclusions}
        evidence = {}
        for c in self.tree.conclusions:
            req = c.requires_results
            evidence[c.id] = 1.0 if not req else sum(r in state.true_results for r in req) / len(req)  # #14
        k = len(self.tree.conclusions)
        if any(v is None for v in scores.values()):
            q_sum = q_norm = float("nan")
        else:
            q_sum = sum((evidence[i] * float(scores[i] or 0.0) for i in scores), 0.0)
            q_norm = q_sum / k
        lo, hi = self.tree.bounds(self.p.max_hints)
        return EpisodeScored(
            judge_id=judge_id,
            coverage=len(state.visits) / self.tree.n,
            evidence=evidence,
            scores=scores,
            q_sum=None if math.isnan(q_sum) else q_sum,
            q_norm=None if math.isnan(q_norm) else q_norm,
            k=k,
            steps=state.step,
            lower_bound=lo,
            upper_bound=hi,
            within_bounds=lo <= state.step <= hi,
            visited_subtopics=sorted(state.visits, key=list(self.tree.subtopic).index),
            hints_issued=state.hints_issued,
            forced_transitions=state.forced_transitions,
        )

    # -- states ----------------------------------------------------------------------------------
    def _match(self, s: _Step, step: int, action: str, cosines: dict[str, float] | None) -> tuple[str | None, bool]:
        """Eq. 2-4 (or the fitted rule): the best candidate (ties: tree order) and whether it is accepted."""
        cands = [cid for cid, _ in self.candidates(s.state)]
        if not action:
            s.emit(
                MatchScored(
                    step=step,
                    state=s.state.state,
                    candidates=[],
                    best=None,
                    best_cosine=None,
                    tau=self.p.tau_at(s.state.state),
                    accepted=False,
                )
            )
            return None, False
        keys = [key for key, _ in self.anchors(s.state)]
        if cosines is None or set(keys) - set(cosines):
            raise EngineError(f"step {step}: cosines are needed for every candidate of {s.state.state}: {keys}")
        for key in keys:
            if not math.isfinite(cosines[key]):
                raise EngineError(f"step {step}: cosine for {key} is {cosines[key]}, not a finite number")
        tau = self.p.tau_at(s.state.state)
        found = matching.read_match(cands, {k: cosines[k] for k in keys}, s.state.state, tau, self.p.match_rule)
        s.emit(
            MatchScored(
                step=step,
                state=s.state.state,
                candidates=found.candidates,
                best=found.best,
                best_cosine=found.best_cosine,
                tau=tau,
                accepted=found.accepted,
                rule=found.rule,
            )
        )
        return found.best, found.accepted

    def _missing_prerequisites(self, state: EpisodeState, subtopic_id: str) -> list[str]:
        """Eq. 5: the prerequisites of ``subtopic_id`` not yet visited (empty: it is unlocked)."""
        return [d for d in self.tree.subtopic[subtopic_id].depends_on if d not in state.visits]

    def _topic(self, s: _Step, step: int, action: str, cosines: dict[str, float] | None) -> None:
        best, accepted = self._match(s, step, action, cosines)
        if accepted and best is not None:
            missing = self._missing_prerequisites(s.state, best)
            if not missing:
                return self._enter_subtopic(s, step, best, forced=False)
            s.emit(DependencyBlocked(step=step, subtopic_id=best, missing=missing))
        if s.state.failures >= self.p.max_hints:  # #5: attempt H+1 is forced
            return self._enter_subtopic(s, step, _target(s.state), forced=True)
        valid = [x.id for x in self.tree.subtopics if not self._missing_prerequisites(s.state, x.id)]
        target = min(valid, key=lambda sid: s.state.visits.get(sid, 0))  # #7: fewest visits, tree order
        self._issue_hint(s, step, TOPIC, target, self.tree.subtopic[target].hints, "C.1.2")

    def _enter_subtopic(self, s: _Step, step: int, subtopic_id: str, forced: bool) -> None:
        s.emit(
            Transitioned(
                step=step,
                from_state=TOPIC,
                to_state=SUBTOPIC,
                node=subtopic_id,
                forced=forced,
                reason="forced" if forced else "match",
            )
        )
        s.show("C.2.1", self.t.render("C.2.1", content=self.tree.subtopic[subtopic_id].text), subtopic=subtopic_id)

    def _subtopic(self, s: _Step, step: int, action: str, cosines: dict[str, float] | None) -> None:
        best, accepted = self._match(s, step, action, cosines)
        if accepted and best is not None:
            return self._enter_study(s, step, best, forced=False)
        if s.state.failures >= self.p.max_hints:
            return self._enter_study(s, step, _target(s.state), forced=True)
        studies = self.tree.subtopic[s.state.in_subtopic].studies
        target = min((st.id for st in studies), key=lambda sid: s.state.study_runs.get(sid, 0))  # #7
        self._issue_hint(s, step, SUBTOPIC, target, self.tree.study[target].hints, "C.2.2")

    def _issue_hint(self, s: _Step, step: int, state: str, target: str, hints: tuple[str, ...], template: str) -> None:
        """Sec. 3.4: the next hint level towards ``target`` (#6: final exactly at level H).

        With H > 4 the level-4 (explicit) hint is repeated above level 4."""
        level = s.state.failures + 1
        final = level == self.p.max_hints
        s.emit(HintIssued(step=step, state=state, target=target, level=level, final=final))
        hint = hints[min(level, len(hints)) - 1]
        s.show(
            template,
            self.t.render(template, hints=hint, final_hint=final, finalhint=final),
            hint_target=target,
            hint_level=level,
        )

    def _enter_study(self, s: _Step, step: int, study_id: str, forced: bool) -> None:
        s.emit(
            Transitioned(
                step=step,
                from_state=SUBTOPIC,
                to_state=STUDY,
                node=study_id,
                forced=forced,
                reason="forced" if forced else "match",
            )
        )
        s.show("C.3.1", self.t.render("C.3.1", content=self.tree.study[study_id].text))
        self._run_study(s, step, redo=False)

    def _run_study(self, s: _Step, step: int, redo: bool) -> None:
        """The Study state runs the study and shows its Result (Sec. 3.5, #13)."""
        study = self.tree.study[s.state.in_study]
        result = study.result
        k = s.state.draws
        probability = self.p.randomness / 10
        key = self.p.seed if self.p.draw_rule == 1 else f"{self.p.seed}:{self.tree.id}"
        draw = uniform(key, k, "fake")
        fake = draw < probability
        fake_index = int(uniform(key, k, "choice") * len(result.fakes)) if fake else None
        s.emit(
            ResultDrawn(
                step=step,
                study_id=study.id,
                result_id=result.id,
                probability=probability,
                draw=draw,
                fake=fake,
                fake_index=fake_index,
                redo=redo,
            )
        )
        s.emit(
            Transitioned(
                step=step, from_state=STUDY, to_state=RESULT, node=result.id, reason="redo" if redo else "auto"
            )
        )
        shown = result.fakes[fake_index] if fake_index is not None else result.text
        s.show("C.4.1", self.t.render("C.4.1", content=shown), result=result.id, fake=fake)

    def _result(self, s: _Step, step: int, action: str) -> None:
        decision, found = parse_decision(action)
        s.emit(DecisionParsed(step=step, decision=decision, keywords=found, valid=decision is not None))
        if decision is None and self.p.max_reasks is not None and s.state.reasks > self.p.max_reasks:
            # docs/design.md: after max_reasks re-asks the engine stops the inquiry and asks for
            # the conclusion; it never takes a research decision (redo, explore) for the agent
            s.emit(
                Transitioned(
                    step=step, from_state=RESULT, to_state=CONCLUSION, node=None, forced=True, reason="reask_limit"
                )
            )
            s.show("C.5", self.t.render("C.5"))
        elif decision is None:
            s.show("C.4.2", self.t.render("C.4.2"))
        elif decision == "redo_study":
            study = self.tree.study[s.state.in_study]
            s.emit(Transitioned(step=step, from_state=RESULT, to_state=STUDY, node=study.id, reason="redo"))
            s.show("C.3.2", self.t.render("C.3.2", content=study.text))
        elif decision == "explore_new_subtopic":  # #10: hub-and-spoke
            s.emit(Transitioned(step=step, from_state=RESULT, to_state=TOPIC, node=None, reason="explore"))
            s.show("C.1.3", self.t.render("C.1.3", content=self.tree.topic))
        else:
            s.emit(Transitioned(step=step, from_state=RESULT, to_state=CONCLUSION, node=None, reason="conclude"))
            s.show("C.5", self.t.render("C.5"))
