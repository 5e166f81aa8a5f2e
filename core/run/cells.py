"""A campaign's state, computed in one place: its runs (the ``suite run`` processes, alive, died
or ended) and each cell's episode (pending, running, interrupted, failed, ended by a limit,
finished).

``suite status``, the viewer's live list and a resumed ``suite run`` used to tell a cell's state
each in their own way, from other events and with other rules, which is how a page came to show
another answer than the terminal. Each now folds the episode's events with :class:`CellFold` and
asks :func:`cell_state`; a run's state is :func:`run_status` of its :class:`RunState` folds.
`suite status` and resume read only the state events (:data:`STATE_EVENTS`: a cell's state, steps
and note need no reply); the viewer reads the calls too, for tokens and cost.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable

from inquitree.core.run.limits import tokens_of
from inquitree.events import (
    EPISODE_PREFIX,
    CampaignEnded,
    CampaignStarted,
    Event,
    campaign_stream,
    episode_prefix,
    epoch_of,
    registered_types,
)

if TYPE_CHECKING:
    from inquitree.core.run.limits import PriceTable
    from inquitree.events import EventStore, RecordedEvent

__all__ = [
    "ALIVE_WITHIN",
    "CELL_EVENTS",
    "ENDED",
    "HEARTBEAT_SECONDS",
    "MOST_DONE",
    "STALE_SECONDS",
    "STATES",
    "STATE_EVENTS",
    "CellFold",
    "RunState",
    "cell_note",
    "cell_state",
    "endpoint_label",
    "fold_cell",
    "fold_run",
    "recorded_cells",
    "recorded_runs",
    "run_status",
    "share_done",
]

HEARTBEAT_SECONDS = 15.0  # a running campaign's CampaignAlive, so a page can tell it from a dead one
# A run not heard from for this long, and not ended, has died (two heartbeats missed, and slack).
ALIVE_WITHIN = 2 * HEARTBEAT_SECONDS + 15
# A cell of a campaign that recorded no runs, with nothing recorded for this long, was stopped.
STALE_SECONDS = 300.0

STATES = ("pending", "running", "interrupted", "failed", "limit", "finished")
ENDED = ("limit", "finished")  # a cell in either is scored: a campaign run again skips it
# The events a cell's state and steps are folded from (what `suite status` and resume read), and
# the calls its tokens and cost come from (the viewer's list reads those too).
STATE_EVENTS = (
    "EpisodeStarted",
    "EpisodeFailed",
    "EpisodeInterrupted",
    "EpisodeResumed",
    "LimitReached",
    "TurnLimitReached",
    "EpisodeScored",
)
CELL_EVENTS = ("AgentReplied", "JudgeVerdict", *STATE_EVENTS)
_VERSIONS = {name: cls.VERSION for name, cls in registered_types().items() if name in CELL_EVENTS}


@dataclasses.dataclass
class RunState:
    """One run of a campaign (a ``suite run`` process, shard or worker): when it started, when it
    was last heard from, and how it ended (None: not yet)."""

    started: float
    last: float
    how: str | None = None


def fold_run(runs: dict[str, RunState], ev: Event, at: float) -> None:
    """Fold one event of a campaign's stream (recorded at ``at``) into its runs, by run id. Runs
    recorded before runs had ids are left out."""
    run_id = getattr(ev, "run_id", None)
    if run_id is None:
        return
    if isinstance(ev, CampaignStarted):
        runs[run_id] = RunState(at, at)
    elif (run := runs.get(run_id)) is not None:
        run.last = at
        if isinstance(ev, CampaignEnded):
            run.how = ev.how


def run_status(runs: Iterable[RunState], now: float) -> tuple[str | None, str]:
    """A campaign's state from its runs: running (a run heard from within ALIVE_WITHIN seconds and
    not ended), died (the latest run not ended and not heard from since), else how the latest run
    ended (finished, interrupted, failed), with a note; None where the runs were recorded before
    runs had ids (their cells are all there is to go by)."""
    runs = list(runs)
    if not runs:
        return None, "recorded before campaigns reported their state"
    live = [r.last for r in runs if r.how is None and now - r.last <= ALIVE_WITHIN]
    if live:
        return "running", f"{len(live)} process(es) running, heard from {now - max(live):.0f} s ago"
    latest = max(runs, key=lambda r: r.started)
    if latest.how is None:
        return "died", f"its process stopped without ending (last heard from {now - latest.last:.0f} s ago)"
    notes = {"finished": "every cell it took ended", "interrupted": "stopped by Ctrl-C", "failed": "an error ended it"}
    return latest.how, notes.get(latest.how, latest.how)


def recorded_runs(store: EventStore, name: str) -> list[RunState]:
    """Suite ``name``'s runs as its stream records them (for :func:`run_status`)."""
    runs: dict[str, RunState] = {}
    for r in store.read_stream(campaign_stream(name)):
        fold_run(runs, r.event, epoch_of(r.recorded_at))
    return list(runs.values())


@dataclasses.dataclass
class CellFold:
    """A cell's episode as its events tell it: the state they record, the step it reached, the
    tokens and cost of its calls, when it started, ended and was last heard of, and why it failed,
    stopped or was cut short. Plain fields, so a fold can be saved and taken up again (the
    viewer's snapshot)."""

    state: str = "running"
    step: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    started: float = 0.0
    ended: float | None = None
    last: float = 0.0
    limit: str | None = None
    reason: str | None = None
    # the models its agent and judge asked for: a call is priced by these, never by the name an
    # endpoint answers with (OpenAI answers gpt-4o-2024-08-06 to gpt-4o)
    agent_model: str | None = None
    judge_model: str | None = None
    # the endpoints its model agent and judge were played against (endpoint_label), and the model
    # name and fingerprint its agent's first reply came with: a campaign run again against another
    # endpoint says which finished cells it kept
    agent_endpoint: str | None = None
    judge_endpoint: str | None = None
    answered: str | None = None

    def fold(self, kind: str, ev: dict[str, Any], at: float, prices: PriceTable | None = None) -> None:
        """One event of the episode, as its type and payload, recorded at ``at``."""
        self.last = at
        if kind == "EpisodeStarted":
            self.agent_model = (ev.get("agent") or {}).get("model")
            self.judge_model = (ev.get("judge") or {}).get("model")
            self.agent_endpoint = endpoint_label(ev.get("agent") or {})
            self.judge_endpoint = endpoint_label(ev.get("judge") or {})
        elif kind in ("AgentReplied", "JudgeVerdict"):
            if kind == "AgentReplied" and self.answered is None and ev.get("model"):
                fingerprint = ev.get("fingerprint")
                self.answered = str(ev["model"]) + (f", fingerprint {fingerprint}" if fingerprint else "")
            usage = ev.get("usage") or {}
            self.tokens += tokens_of(usage)
            ms = ev.get("latency_ms")
            asked = self.agent_model if kind == "AgentReplied" else self.judge_model
            cost = prices.cost(asked or ev.get("model"), usage, None if ms is None else ms / 1000) if prices else None
            if cost is None:
                self.unpriced_calls += int(bool(tokens_of(usage)))
            else:
                self.cost_usd += cost
            if kind == "AgentReplied":
                self.step = max(self.step, ev["step"])
        elif kind == "EpisodeFailed":
            retry = ", retryable" if ev.get("retryable") else ""
            self.state, self.ended = "failed", at
            self.step = max(self.step, ev.get("step") or 0)  # the steps taken: read without the replies too
            self.reason = f"[{ev.get('kind') or ev.get('error_class') or '?'}{retry}] {ev.get('error')}"
        elif kind == "EpisodeInterrupted":
            self.state, self.reason = "interrupted", "Ctrl-C" if ev.get("reason") == "interrupt" else ev.get("reason")
            self.step = max(self.step, ev.get("step") or 0)
        elif kind == "EpisodeResumed":
            self.state, self.ended, self.reason = "running", None, None
        elif kind == "LimitReached":
            self.limit = f"{ev['limit']} ({ev['used']:g} of {ev['threshold']:g})"
        elif kind == "TurnLimitReached":
            self.limit = f"max_turns ({ev['max_turns']})"
        elif kind == "EpisodeScored":
            self.state, self.ended = ("limit" if self.limit else "finished"), at
            self.step = max(self.step, ev.get("steps") or 0)


def endpoint_label(described: dict[str, Any]) -> str | None:
    """``MODEL at URL`` for a model agent's or judge's description (as EpisodeStarted records it,
    the URL without its secrets); None for one that calls no endpoint."""
    if not isinstance(described, dict) or "base_url" not in described or not described.get("model"):
        return None
    return f"{described['model']} at {described.get('base_url') or 'OpenAI'}"


# The most of its work a cell in flight is taken to have done: one past its expected steps has
# not ended, so some of its time is still ahead (an estimate that reached 0 s said a running
# campaign was done).
MOST_DONE = 0.95


def share_done(step: int, expected_steps: float | None) -> float:
    """How much of its work an episode at ``step`` has done, when it is expected to take
    ``expected_steps`` (0 when nothing is known): what a time-left estimate counts of the cells
    in flight, so that it does not grow while long cells run, as one from ended cells alone did."""
    if not expected_steps or expected_steps <= 0:
        return 0.0
    return min(max(step, 0) / expected_steps, MOST_DONE)


def cell_state(fold: CellFold | None, now: float, alive: bool | None, stale_seconds: float = STALE_SECONDS) -> str:
    """The cell's state (one of STATES). ``alive``: whether a run of its campaign is alive
    (:func:`run_status`), None for a campaign that recorded no runs. An episode in the middle is
    interrupted as soon as no run is alive, or, without recorded runs, once nothing was recorded
    for ``stale_seconds``; a failed episode resumed since is in the middle again."""
    if fold is None:
        return "pending"
    if fold.state == "running" and (alive is False or (alive is None and now - fold.last > stale_seconds)):
        return "interrupted"
    return fold.state


def cell_note(fold: CellFold | None, state: str, now: float) -> str:
    """What a person reads beside the cell's state."""
    if fold is None:
        return "not started"
    if state == "running":
        return f"step {fold.step}"
    if state == "interrupted" and fold.state == "interrupted":  # recorded
        return f"stopped at step {fold.step} ({fold.reason})"
    if state == "interrupted":
        return f"stopped at step {fold.step}: nothing recorded for {now - fold.last:.0f} s"
    if state == "failed":
        return f"failed at step {fold.step}: {fold.reason}"
    if state == "limit":
        return f"ended by {fold.limit} at step {fold.step}"
    return f"finished in {fold.step} steps"


def fold_cell(folds: dict[str, CellFold], r: RecordedEvent, prices: PriceTable | None = None) -> None:
    """Fold one recorded event of a campaign's episode into ``folds`` (by episode id)."""
    at = epoch_of(r.recorded_at)
    fold = folds.setdefault(r.stream_id.removeprefix(EPISODE_PREFIX), CellFold(started=at))
    # The payload as the current event class has it: stored at the current version it is read as
    # it is (decoding every reply into its class was half of a large campaign's first fold).
    kind = r.event_type
    fold.fold(kind, r.payload if r.schema_version == _VERSIONS.get(kind) else r.event.to_payload(), at, prices)


def recorded_cells(
    store: EventStore, name: str, types: Iterable[str] = CELL_EVENTS, prices: PriceTable | None = None
) -> dict[str, CellFold]:
    """Every recorded episode of suite ``name``, by episode id, folded from one read of its events
    of ``types`` (:data:`STATE_EVENTS` are enough for every cell's state, steps and note)."""
    folds: dict[str, CellFold] = {}
    for r in store.read_prefix(EPISODE_PREFIX + episode_prefix(name), list(types), store.last_position()):
        fold_cell(folds, r, prices)
    return folds
