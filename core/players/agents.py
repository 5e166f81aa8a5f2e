"""Agents: they read the observation text and reply in free text.

An agent sees the observation text and the public state name (which question is
being asked, as the template says anyway); nothing hidden. The oracle knows the
tree, as its name says, and recognizes fake results by comparing the text it
is shown with the tree's true result.

- ``random``: Appendix B's random agent: uniform choices among the available
  options (any subtopic at Topic, any study of the tree at Subtopic, any of the
  three decisions at Result), seeded and counter-based so a resumed episode
  continues the same sequence.
- ``oracle``: unlocked subtopics in dependency order, the intended study of
  each, redo exactly the fake results, conclude with the ground truth.
- ``script:FILE``: one reply per turn from a file (``.jsonl``: a JSON string or
  {"reply": ...} per line; otherwise replies separated by lines of ``---``).
- ``human``: plays in the terminal.
- ``openai:MODEL``: an OpenAI-compatible chat endpoint with the paper's system
  prompt and full step-wise memory (#24).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.calls import CallSettings, ChatModel, ModelCallError, call_cache, option_label
from inquitree.core.game import (
    CONCLUSION,
    RESULT,
    STUDY,
    SUBTOPIC,
    TOPIC,
    Reply,
    Tree,
    cut_where_it_repeats,
    repeats_itself,
    uniform,
)


def recorded_turns(events: list) -> list[tuple[str, Any]]:
    """(the observation the agent answered, its AgentReplied event) for every recorded reply."""
    from inquitree.events import AgentReplied, ObservationEmitted

    turns, last_obs = [], ""
    for ev in events:
        if isinstance(ev, ObservationEmitted):
            last_obs = ev.text
        elif isinstance(ev, AgentReplied):
            turns.append((last_obs, ev))
    return turns


class AgentError(InquiTreeError):
    """The agent could not produce a reply. ``retryable``: a later attempt may succeed."""

    def __init__(
        self, message: str, retryable: bool = False, kind: str = "agent", attempts: list[dict[str, Any]] | None = None
    ):
        super().__init__(message)
        self.retryable, self.kind = retryable, kind
        self.attempts = list(attempts or [])  # the model call's failed attempts, when one was made


class Agent(Protocol):
    description: dict[str, Any]
    # True when the agent's reply at each turn follows from its construction and the recorded
    # transcript alone, at no cost (random, oracle, script): a step lost when a run dies is played
    # again identically on resume, so the runner may commit several steps in one append.
    # Agents that call a model or ask a person leave it False: each step is committed at once.
    replayable: bool

    def reply(self, observation: str, state: str, turn: int) -> Reply: ...

    def resume(self, events: list) -> None:
        """Rebuild the agent's memory from an episode's recorded events, to continue it."""


class RandomAgent:
    """Appendix B's random agent: at each state it picks uniformly among the options that state
    offers, the engine's candidates C(s_t) (#8): at Topic every subtopic of the tree (visited,
    locked or not), at Subtopic the studies of the subtopic it is in, at a Result one of the
    three decisions. It answers the Study state's confirmation with OK and, having no
    knowledge, concludes by restating the results it was shown.

    ``visit_all`` (agent ``random-all``) never draws a conclusion before it has entered every
    subtopic: at a Result it then picks between redo_study and explore_new_subtopic. Appendix
    B's interval [3n, n(2H+3)] assumes every subtopic is visited; plain ``random`` concludes
    whenever it draws that decision, so its episodes can end below 3n.

    The agent reads which subtopic it is in from the Subtopic observation, which shows the
    subtopic's text (template C.2.1), as a human player would.

    ``rule`` (recorded in its description): how a draw is keyed. Rule 2, what new episodes
    play, keys each draw by seed, tree and turn, so one seed makes independent choices on
    different papers. Rule 1 (episodes recorded without a rule) keyed it by seed and turn
    only: with one seed it made the same choices on every tree (seeds 0 and 1 concluded at the
    first result everywhere), so a campaign's random cells were one sample repeated, not one
    per paper. Replay takes the recorded replies and needs neither; an episode of rule 1
    continued by this version records the change of agent (``EpisodeResumed``).
    """

    replayable = True
    RULES = (1, 2)

    def __init__(self, tree: Tree, seed: int, visit_all: bool = False, rule: int = 2):
        if rule not in self.RULES:
            raise AgentError(f"random agent: rule {rule}: this version knows rules 1 and 2")
        self.tree, self.seed, self.visit_all, self.rule = tree, seed, visit_all, rule
        self.key: int | str = seed if rule == 1 else f"{seed}:{tree.id}"
        self.description = {
            "kind": "random",
            "seed": seed,
            **({"rule": rule} if rule != 1 else {}),
            **({"label": "random-all"} if visit_all else {}),
        }
        self.observed: list[str] = []
        self.current: str | None = None  # the subtopic it is in
        self.visited: set[str] = set()

    def resume(self, events: list) -> None:
        self.observed, self.current, self.visited = [], None, set()
        for obs, r in recorded_turns(events):
            self._see(obs, r.state)

    def _see(self, observation: str, state: str) -> None:
        if state == SUBTOPIC:
            shown = [s for s in self.tree.subtopics if s.text in observation]
            if shown:  # a text inside another's: the longest one shown is the subtopic
                self.current = max(shown, key=lambda s: len(s.text)).id
                self.visited.add(self.current)
        elif state == RESULT:
            self.observed.append(_result_text(observation))

    def _pick(self, options: list[str], turn: int) -> str:
        return options[int(uniform(self.key, turn, "agent") * len(options))]

    def reply(self, observation: str, state: str, turn: int) -> Reply:
        self._see(observation, state)
        if state == TOPIC:
            action = self._pick([s.text for s in self.tree.subtopics], turn)
        elif state == SUBTOPIC:
            studies = self.tree.subtopic[self.current].studies if self.current else self.tree.study.values()
            action = self._pick([st.text for st in studies], turn)
        elif state == RESULT:
            decisions = ["redo_study", "explore_new_subtopic", "draw_conclusion"]
            if self.visit_all and len(self.visited) < self.tree.n:
                decisions = decisions[:2]
            action = self._pick(decisions, turn)
        elif state == STUDY:
            action = "OK"
        else:  # conclusion: it has no knowledge, so it restates what it was shown
            action = "\n".join(f"({i}) {t}" for i, t in enumerate(dict.fromkeys(self.observed), 1))
        return Reply(f"THOUGHT: random choice.\nACTION: {action}", model="random")


def _result_text(observation: str) -> str:
    """The result text inside a C.4.1 observation (between its first line and 'Based on these results')."""
    lines = observation.splitlines()
    try:
        start = max(i for i, ln in enumerate(lines) if ln.startswith("Hey, we've completed the study")) + 1
        end = next(i for i in range(start, len(lines)) if lines[i].startswith("Based on these results"))
        return "\n".join(lines[start:end]).strip()
    except (ValueError, StopIteration):
        return ""


class OracleAgent:
    replayable = True

    def __init__(self, tree: Tree):
        self.tree = tree
        self.description = {"kind": "oracle"}
        self.plan = [(sid, st.id) for sid in tree.topological_order() for st in tree.subtopic[sid].studies]
        self.i = 0

    def resume(self, events: list) -> None:
        self.i = sum(
            1
            for _, r in recorded_turns(events)
            if r.state == RESULT and r.action in ("explore_new_subtopic", "draw_conclusion")
        )

    def reply(self, observation: str, state: str, turn: int) -> Reply:
        if state == TOPIC:
            action = self.tree.subtopic[self.plan[self.i][0]].text
        elif state == SUBTOPIC:
            action = self.tree.study[self.plan[self.i][1]].text
        elif state == RESULT:
            truth = self.tree.study[self.plan[self.i][1]].result.text
            if _result_text(observation) != truth:
                action = "redo_study"
            else:
                self.i += 1
                action = "explore_new_subtopic" if self.i < len(self.plan) else "draw_conclusion"
        elif state == STUDY:
            action = "OK"
        else:
            action = "\n".join(f"({i}) {c.text}" for i, c in enumerate(self.tree.conclusions, 1))
        return Reply(f"THOUGHT: following the tree.\nACTION: {action}", model="oracle")


class ScriptAgent:
    replayable = True

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AgentError(f"script agent: cannot read {self.path}: {exc.strerror}") from exc
        if self.path.suffix == ".jsonl":
            self.replies = []
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    v = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise AgentError(f"script agent: {self.path} line {n}: not JSON ({exc.msg})") from exc
                self.replies.append(v["reply"] if isinstance(v, dict) else str(v))
        else:
            self.replies = [r.strip("\n") for r in text.split("\n---\n")]
        self.description = {"kind": "script", "file": str(self.path), "replies": len(self.replies)}
        self.i = 0

    def resume(self, events: list) -> None:
        self.i = len(recorded_turns(events))

    def reply(self, observation: str, state: str, turn: int) -> Reply:
        if self.i >= len(self.replies):
            raise AgentError(f"script agent: {self.path} ran out of replies after {self.i} (state {state})")
        self.i += 1
        return Reply(self.replies[self.i - 1], model="script")


class HumanAgent:
    replayable = False

    def __init__(self, prompt: Callable[[str], str] | None = None):
        import click

        self.description = {"kind": "human"}
        self._prompt = prompt or (lambda msg: click.prompt(msg, default="", show_default=False))

    def resume(self, events: list) -> None:
        pass  # the person remembers, or reads `inquitree episodes show`

    def reply(self, observation: str, state: str, turn: int) -> Reply:
        """Lines until an empty one; an empty first line asks again."""
        import click

        lines: list[str] = []
        t0 = time.perf_counter()
        while True:
            try:
                line = self._prompt(f"[{state}] your reply (end with an empty line)" if not lines else "")
            except (EOFError, click.exceptions.Abort):  # end of input (Ctrl-D, or a script's input ran out)
                raise AgentError(
                    f"end of input at turn {turn}: the person playing left the episode",
                    retryable=True,
                    kind="human_left",
                ) from None
            if line:
                lines.append(line)
            elif lines:
                break
        return Reply("\n".join(lines), model="human", latency_ms=(time.perf_counter() - t0) * 1000)


class RateLimiter:
    """At most ``per_minute`` calls a minute across every thread that shares it (a token bucket
    with a burst of one second's worth), so a campaign stays under a provider's quota instead of
    collecting 429s; the client's own backoff handles the 429s that still come."""

    def __init__(self, per_minute: float, clock=time.monotonic, sleep=time.sleep):
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.tokens = self.capacity
        self.clock, self.sleep = clock, sleep
        self.last = clock()
        self.lock = threading.Lock()

    def acquire(self) -> None:
        while True:
            with self.lock:
                now = self.clock()
                self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
                self.last = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.rate
            self.sleep(wait)


_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?```$", re.S)


def strip_code_fence(reply: str) -> str:
    """A model's reply without the Markdown code fence many models wrap JSON in
    (```json ... ```, ```JSON ... ```, or a bare ```), surrounding whitespace removed."""
    text = reply.strip()
    m = _FENCE.match(text)
    return m.group(1).strip() if m else text


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """How a model-backed agent or judge is called: endpoint, call settings, memory, label, cache.

    ``label`` names the agent in every query and leaderboard row (default: the model, with its
    options, e.g. ``gpt-5@reasoning_effort=high``), so runs of one model with different options
    stay apart."""

    base_url: str | None = None
    settings: CallSettings = dataclasses.field(default_factory=CallSettings)
    window: int | None = None
    label: str | None = None
    call_cache: str | None = None
    history_tokens: int | None = None  # the history's budget, estimated in tokens (see fit_history)
    transport: Any = None  # a lab's own Transport (core/calls/transport.py); None: HTTP to base_url

    def __post_init__(self) -> None:
        if self.window is not None and self.window < 1:
            raise AgentError(f"--window {self.window}: must be at least 1 turn")
        if self.history_tokens is not None and self.history_tokens < 1:
            raise AgentError(f"--history-tokens {self.history_tokens}: must be at least 1")

    def chat_model(self, model: str, who: str, rate_limiter=None, temperature: float | None = 0.0) -> ChatModel:
        return ChatModel(
            model,
            self.base_url,
            settings=self.settings,
            cache=call_cache(self.call_cache),
            rate_limiter=rate_limiter,
            temperature=temperature,
            who=who,
            transport=self.transport,
        )


def last_turns(history: list, window: int | None) -> list:
    """The memory sent with a call (#24): the whole history, or with a window of N turns the
    last N observations and the N - 1 replies between them (the history ends with the
    observation being answered)."""
    return history[-(2 * window - 1) :] if window else history


CHARS_PER_TOKEN = 3  # a cautious estimate: English text runs at about 4 characters a token
_CONTEXT_SIZE = re.compile(
    r"context (?:window|length|size) (?:of|is) (\d+)|maximum context length is (\d+)|n_ctx[^0-9]{0,12}(\d+)", re.I
)


def estimated_tokens(messages: list[dict[str, str]]) -> int:
    """A cautious token count without the model's tokenizer: characters / 3, plus 8 a message."""
    return sum(len(m.get("content") or "") // CHARS_PER_TOKEN + 8 for m in messages)


def fit_history(history: list, budget: int | None) -> list:
    """The latest turns whose estimated tokens fit ``budget``: whole turns (an observation and the
    reply to it) are dropped from the front, and the observation being answered is always kept."""
    if budget is None:
        return history
    start = 0
    while start + 1 < len(history) and estimated_tokens(history[start:]) > budget:
        start += 2 if history[start]["role"] == "user" and start + 2 < len(history) else 1
    return history[start:]


def context_size(message: str) -> int | None:
    """The context window an endpoint names in its context-length error (llama.cpp: "exceed context
    window of 4096"; OpenAI: "maximum context length is 128000"), or None."""
    m = _CONTEXT_SIZE.search(message)
    return int(next(g for g in m.groups() if g)) if m else None


def model_error(exc: ModelCallError) -> AgentError:
    return AgentError(str(exc), retryable=exc.retryable, kind=exc.kind, attempts=exc.attempts)


class OpenAIChatAgent:
    """A chat model behind an OpenAI-compatible endpoint, with step-wise memory (#24)."""

    replayable = False

    def __init__(
        self,
        model: str,
        system_prompt: str,
        config: ModelConfig | None = None,
        rate_limiter: RateLimiter | None = None,
        temperature: float | None = 0.0,
    ):
        config = config or ModelConfig()
        self.model, self.system_prompt, self.window = model, system_prompt, config.window
        try:
            self.chat = config.chat_model(model, "openai agent", rate_limiter, temperature)
        except ModelCallError as exc:
            raise model_error(exc) from None
        self.history: list[dict[str, str]] = []
        self.history_tokens = config.history_tokens
        self.max_tokens = config.settings.max_tokens
        self.label = config.label or option_label(model, config.settings.options)
        self.description = {"kind": "openai", "label": self.label, **self.chat.describe(), "window": self.window}
        if config.history_tokens is not None:
            self.description["history_tokens"] = config.history_tokens

    def _smaller_budget(self, exc: ModelCallError, sent: list[dict[str, str]]) -> int | None:
        """The history budget to try after ``exc``, or None when nothing is left to drop (or ``exc``
        is not a context-length error)."""
        if exc.kind != "context_length" or len(sent) <= 2:  # the system prompt and the observation alone
            return None
        used = estimated_tokens(sent)
        window = context_size(str(exc))
        budget = used // 2
        if window is not None:
            # the window's tokens less the reply's; the estimate counts more tokens than the model does
            budget = min(budget if self.history_tokens is not None else used, window - (self.max_tokens or 1024) - 64)
            budget = min(budget, used - 1)
        return max(1, budget)

    def resume(self, events: list) -> None:
        """Step-wise memory (#24) from the recorded transcript: each observation, then the reply to it."""
        self.history = []
        for obs, r in recorded_turns(events):
            self.history += [{"role": "user", "content": obs}, {"role": "assistant", "content": r.raw}]

    def messages(self) -> list[dict[str, str]]:
        system = {"role": "system", "content": self.system_prompt}
        budget = None if self.history_tokens is None else max(1, self.history_tokens - estimated_tokens([system]))
        return [system, *fit_history(last_turns(self.history, self.window), budget)]

    def reply(self, observation: str, state: str, turn: int) -> Reply:
        """One turn. A call the endpoint refuses as too long for its context is sent again with
        less history (to the window the error names, less the reply's tokens, when it names one;
        else half as much), down to the observation alone: a played episode is never lost to a
        long history, least of all at the conclusion prompt. The smaller budget is kept for the
        turns that follow."""
        self.history.append({"role": "user", "content": observation})
        while True:
            sent = self.messages()
            try:
                out = self.chat.chat(sent, stop=repeats_itself if state == CONCLUSION else None)
                break
            except ModelCallError as exc:
                smaller = self._smaller_budget(exc, sent)
                if smaller is None:
                    self.history.pop()
                    raise model_error(exc) from None
                self.history_tokens = smaller
        if state == CONCLUSION and out.finish_reason != "repeat" and (cut := cut_where_it_repeats(out.text)):
            # a reply that came whole (not streamed) gets the cut a streamed one gets as it arrives
            out = dataclasses.replace(out, text=cut, finish_reason="repeat")
        self.history.append({"role": "assistant", "content": out.text})
        return Reply(
            out.text,
            model=out.model,
            usage=out.usage,
            latency_ms=out.latency_ms,
            cache_hit=out.cache_hit,
            truncated_from=out.truncated_from,
            finish_reason=out.finish_reason,
            failed_attempts=out.failed,
            reasoning=out.reasoning,
            system_as_user=out.system_as_user,
            fingerprint=out.fingerprint,
        )
