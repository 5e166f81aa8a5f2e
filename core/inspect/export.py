"""Recorded InquiTree episodes as inspect_ai eval logs, for ``inspect view`` (``inquitree episodes
to-inspect``; needs ``pip install 'inquitree[inspect]'``).

Each log holds the episodes of one agent, in the shape the inspect task (``core/inspect/task.py``)
gives its own samples, so a campaign run by ``suite run`` reads in the viewer like a run of
``inspect eval inquitree/research_tree``:

- a sample per tree and randomness level (id ``TREE.aLEVEL``), its episodes as epochs in the
  order of their seeds; the episode id is in the sample's metadata;
- the messages are the episode's dialogue: the paper's system prompt, each observation and each
  reply. Each reply carries what the engine recorded after it (match, hints, transitions, result
  draws) in its metadata, as events;
- the transcript (what inspect's Transcript tab shows) holds real events, in the order they were
  recorded and at the times they were: a model event per agent reply (the messages the agent's
  window kept, the reply, its tokens, why it ended, how long it took), an info event per engine
  note (source ``inquitree engine``), and the score. A window trimmed further by a token budget
  (``--history-tokens``) is not reconstructed: the model event then shows the window's turns;
- the scores are the episode's own ``EpisodeScored`` (the last one, after any re-judging), the
  conclusion score first, and own coverage beside coverage (the subtopics its recorded transitions
  entered by the agent's own moves), under the task's scorer name; the log's metrics are computed
  from them by inspect;
- an episode that failed, or that has no score yet, is a sample with an error and no score.

Nothing else is computed: every text and number comes from the store. Where the recorded template
set or tree is not the one installed here (another version, a tree file), the system prompt or
the target is left out and the sample's metadata says why.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from inspect_ai.event import InfoEvent, ModelEvent, ScoreEvent
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalSample,
    EvalSpec,
    EvalStats,
    recompute_metrics,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)

from inquitree import __version__
from inquitree.boundary.errors import InquiTreeError
from inquitree.core.game import TemplateSet, Tree, fold, resolve_tree
from inquitree.core.inspect.task import SCORE_KEYS, SCORER_NAME, episode_score, own_coverage
from inquitree.core.players import last_turns
from inquitree.events import (
    AgentReplied,
    ConclusionSubmitted,
    EpisodeFailed,
    EpisodeScored,
    EpisodeStarted,
    ObservationEmitted,
    agent_name,
)

TASK = "inquitree/research_tree"


@dataclasses.dataclass
class Exported:
    """One episode read from the store, ready to become a sample."""

    episode_id: str
    started: EpisodeStarted
    sample: EvalSample


class Installed:
    """The template sets and trees installed here, each loaded once per export."""

    def __init__(self) -> None:
        self._templates: dict[str, TemplateSet | InquiTreeError] = {}
        self._trees: dict[str, Tree | InquiTreeError] = {}

    def templates(self, name: str) -> TemplateSet:
        return _once(self._templates, name, TemplateSet)

    def tree(self, tree_id: str) -> Tree:
        return _once(self._trees, tree_id, resolve_tree)


def _once(memo: dict, key: str, load):
    if key not in memo:
        try:
            memo[key] = load(key)
        except InquiTreeError as exc:
            memo[key] = exc
    found = memo[key]
    if isinstance(found, InquiTreeError):
        raise found
    return found


def episode_sample(episode_id: str, records: list, installed: Installed | None = None) -> Exported:
    """The sample of one recorded episode (``records``: its stream, as the store reads it)."""
    installed = installed or Installed()
    events = [r.event for r in records]
    if not events or not isinstance(events[0], EpisodeStarted):
        raise InquiTreeError(f"episode {episode_id}: its stream does not begin with EpisodeStarted")
    started = events[0]
    notes: dict[str, str] = {}
    messages: list[ChatMessage] = []
    system = _system_prompt(started, notes, installed)
    if system is not None:
        messages.append(ChatMessageSystem(content=system))
    engine_notes: list[dict[str, Any]] | None = None  # what the engine recorded after the last reply
    usage: dict[str, ModelUsage] = {}
    scored: EpisodeScored | None = None
    failed: EpisodeFailed | None = None
    items: list[str] = []
    transcript: list[Any] = []
    begun = _when(records[0].recorded_at)
    window = started.agent.get("window") if isinstance(started.agent.get("window"), int) else None
    name = agent_name(started.agent)
    for record, ev in zip(records[1:], events[1:], strict=True):
        at = _when(record.recorded_at)
        since = (at - begun).total_seconds() if at and begun else 0.0
        if isinstance(ev, ObservationEmitted):  # the last one may be unanswered (a limit or a failure ended it)
            messages.append(ChatMessageUser(content=ev.text, metadata={"step": ev.step, "state": ev.state}))
            engine_notes = None
        elif isinstance(ev, AgentReplied):
            sent = messages[:1] + last_turns(messages[1:], window) if system else last_turns(messages, window)
            engine_notes = []
            messages.append(
                ChatMessageAssistant(
                    content=ev.raw,
                    model=ev.model,
                    metadata={"step": ev.step, "action": ev.action, "engine": engine_notes},
                )
            )
            used = _reply_usage(ev)
            if used is not None:
                _add_usage(usage, ev.model or "unknown", used)
            transcript.append(_model_event(ev, name, list(sent), used, at, since))
        else:
            if isinstance(ev, EpisodeScored):
                scored = ev
            elif isinstance(ev, EpisodeFailed):
                failed = ev
            elif isinstance(ev, ConclusionSubmitted):
                items = list(ev.items)
            if engine_notes is not None:
                engine_notes.append({"type": ev.TYPE, **ev.to_payload()})
            transcript.append(_note(ev, at, since))
    completion = "\n".join(f"({i}) {x}" for i, x in enumerate(items, 1))
    target = _target(started, notes, installed)
    first = next((ev.text for ev in events if isinstance(ev, ObservationEmitted)), "")
    metadata: dict[str, Any] = {
        "tree": started.tree_id,
        "randomness": started.params.get("randomness"),
        "n_subtopics": started.n_subtopics,
        "episode_id": episode_id,
        "seed": started.params.get("seed"),
        "agent": started.agent,
        "judge": started.judge,
    }
    if scored is not None:
        metadata["inquitree"] = {
            "episode_id": episode_id,
            **scored.to_payload(),
            "own_coverage": own_coverage(fold(events), started.n_subtopics),
        }
    if notes:
        metadata["export_notes"] = notes
    error = None
    if scored is None:
        why = f"the episode failed: {failed.error}" if failed is not None else "the episode has no score yet"
        error = EvalError(message=why, traceback="", traceback_ansi="")
    score = episode_score(metadata["inquitree"], completion) if scored is not None else None
    if score is not None:
        transcript.append(ScoreEvent(score=score, target=target))
    sample = EvalSample(
        id=f"{started.tree_id}.a{started.params.get('randomness')}",
        epoch=1,
        input=first,
        target=target,
        messages=messages,
        output=ModelOutput.from_content(model=agent_name(started.agent), content=completion),
        scores={SCORER_NAME: score} if score is not None else None,
        metadata=metadata,
        model_usage=usage,
        error=error,
        events=transcript,
        started_at=records[0].recorded_at,
        completed_at=records[-1].recorded_at,
        total_time=_seconds_between(records[0].recorded_at, records[-1].recorded_at),
    )
    return Exported(episode_id, started, sample)


def _model_event(
    ev: AgentReplied, name: str, sent: list[ChatMessage], used: ModelUsage | None, at: datetime | None, since: float
) -> ModelEvent:
    """One agent call as inspect records a model call: what was sent, what came back, its tokens,
    why it ended and how long it took (from the reply's recorded latency)."""
    # Any: inspect_ai's versions type stop_reason as a Literal or a plain str, and the one mapped is valid in both
    stop: Any = _STOP_REASONS.get(ev.finish_reason or "", "unknown")
    output = ModelOutput.from_content(model=ev.model or name, content=ev.raw, stop_reason=stop)
    output.usage = used
    seconds = (ev.latency_ms or 0.0) / 1000
    output.time = seconds
    event = ModelEvent(
        model=ev.model or name,
        input=sent,
        tools=[],
        tool_choice="none",
        config=GenerateConfig(),
        output=output,
        working_start=max(0.0, since - seconds),
        working_time=seconds,
        cache="read" if ev.cache_hit else None,
    )
    if at is not None:
        event.timestamp = at
        event.completed = at
    return event


_STOP_REASONS = {"stop": "stop", "length": "max_tokens", "max_reply_chars": "max_tokens"}  # ours -> inspect's


def _note(ev: Any, at: datetime | None, since: float) -> InfoEvent:
    """An engine event as an info event of the transcript, at the time it was recorded."""
    note = InfoEvent(source="inquitree engine", data={"type": ev.TYPE, **ev.to_payload()}, working_start=since)
    if at is not None:
        note.timestamp = at
    return note


def _when(recorded_at: str) -> datetime | None:
    """A recorded timestamp as an aware datetime (None if it cannot be read)."""
    try:
        when = datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _seconds_between(start: str, end: str) -> float | None:
    """Seconds from one recorded timestamp to another (None if either cannot be read)."""
    try:
        a, b = (datetime.fromisoformat(t) for t in (start, end))
    except ValueError:
        return None
    return round((b - a).total_seconds(), 3)


def _system_prompt(started: EpisodeStarted, notes: dict[str, str], installed: Installed) -> str | None:
    name, digest = started.params.get("template_set"), started.params.get("template_hash")
    try:
        templates = installed.templates(str(name))
    except InquiTreeError as exc:
        notes["system_prompt"] = f"left out: template set {name!r} is not installed here ({exc})"
        return None
    if templates.hash != digest:
        notes["system_prompt"] = (
            f"left out: the installed template set {name!r} is not the one recorded "
            f"(hash {digest}, here {templates.hash})"
        )
        return None
    return templates.system_prompt


def _target(started: EpisodeStarted, notes: dict[str, str], installed: Installed) -> str:
    try:
        tree = installed.tree(started.tree_id)
    except InquiTreeError as exc:
        notes["target"] = f"left out: tree {started.tree_id!r} is not shipped here ({exc})"
        return ""
    if tree.content_hash != started.tree_hash:
        notes["target"] = f"left out: the shipped tree {started.tree_id!r} is not the one recorded (another content)"
        return ""
    return "\n".join(f"({i}) {c.text}" for i, c in enumerate(tree.conclusions, 1))


def _add_usage(totals: dict[str, ModelUsage], model: str, usage: ModelUsage) -> None:
    totals[model] = totals[model] + usage if model in totals else usage


def _reply_usage(ev: AgentReplied) -> ModelUsage | None:
    """An agent call's tokens as inspect counts them (InquiTree's ``input`` excludes cached reads).
    None when the endpoint reported no count (llama.cpp's server says nothing of a stream's tokens:
    only its chunks are counted): unknown is not zero, and a log that said 0/0/0 would be wrong."""
    u = ev.usage or {}
    tokens_in, tokens_out = u.get("input"), u.get("output")
    if tokens_in is None or tokens_out is None:
        return None
    return ModelUsage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=tokens_in + tokens_out + (u.get("cached_input") or 0),
        input_tokens_cache_read=u.get("cached_input"),
    )


def eval_logs(store, episode_ids: list[str], progress: Callable[[int, int], None] | None = None) -> dict[str, EvalLog]:
    """One eval log per agent label over the given episodes (see the module docstring);
    ``progress(read, total)`` after each episode read."""
    from inquitree.core.run import stream_id
    from inquitree.events import redact

    by_agent: dict[str, list[Exported]] = defaultdict(list)
    installed = Installed()
    for n, eid in enumerate(episode_ids, start=1):
        records = store.read_stream(stream_id(eid))
        if not records:
            raise InquiTreeError(f"no episode {eid!r} in {store!r} (see `inquitree episodes list`)")
        ex = episode_sample(eid, records, installed)
        by_agent[agent_name(ex.started.agent)].append(ex)
        if progress:
            progress(n, len(episode_ids))
    logs = {}
    for label, exported in sorted(by_agent.items()):
        epochs: dict[Any, int] = defaultdict(int)
        # a sample's epochs in the order of their seeds, as inspect numbers a task's epochs
        ordered = sorted(exported, key=lambda x: (str(x.sample.id), x.started.params.get("seed") or 0, x.episode_id))
        for ex in ordered:
            epochs[ex.sample.id] += 1
            ex.sample.epoch = epochs[ex.sample.id]
        samples = [ex.sample for ex in ordered]  # by sample, then epoch
        sample_ids = sorted({s.id for s in samples}, key=str)
        first = exported[0].started
        created = min(str(s.started_at) for s in samples)  # inspect keeps them as UTC ISO text: they sort
        completed = max(str(s.completed_at) for s in samples)
        usage: dict[str, ModelUsage] = {}
        for sample in samples:
            for model, used in sample.model_usage.items():
                _add_usage(usage, model, used)
        log = EvalLog(
            status="success" if all(s.error is None for s in samples) else "error",
            eval=EvalSpec.model_validate(
                dict(
                    created=created,
                    task=TASK,
                    task_args={
                        k: first.params.get(k) for k in ("tau", "max_hints", "max_reasks", "embedder", "template_set")
                    },
                    # the samples before epochs, as inspect counts a task's dataset
                    dataset=EvalDataset(name="inquitree episodes", samples=len(sample_ids), sample_ids=sample_ids),
                    model=f"inquitree/{label}",
                    config=EvalConfig(epochs=max(epochs.values())),
                    # the task's scorer and metrics, by inspect's names: inspect computes the log's metrics
                    scorers=[
                        {
                            "name": SCORER_NAME,
                            "metrics": {
                                k: [{"name": "inspect_ai/mean"}, {"name": "inspect_ai/stderr"}] for k in SCORE_KEYS
                            },
                        }
                    ],
                    metadata={
                        "exported_by": f"inquitree {__version__} (episodes to-inspect)",
                        "store": redact(store.url),
                        "agent": first.agent,
                        "judge": first.judge,
                        "note": (
                            "episodes recorded by InquiTree's own runner (play, suite run), not by inspect eval; "
                            "the engine, prompts, observations and scores are the inspect task's"
                        ),
                    },
                )
            ),
            stats=EvalStats(started_at=created, completed_at=completed, model_usage=usage),
            samples=samples,
        )
        recompute_metrics(log)
        logs[label] = log
    return logs


def write_logs(logs: dict[str, EvalLog], log_dir: str | Path) -> list[Path]:
    """Write each log as ``inquitree-LABEL.eval`` in ``log_dir`` (made if missing); their paths."""
    import re

    out = Path(log_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for label, log in logs.items():
        path = out / f"inquitree-{re.sub(r'[^A-Za-z0-9_.-]+', '-', label)}.eval"
        write_eval_log(log, str(path))
        paths.append(path)
    return paths
