"""Campaigns as they run: every cell's state folded from the store's events, while ``suite run``
appends them in another process.

The warehouse is synced when the viewer starts; a campaign's grid cannot wait for the next sync,
so it is a projection of its own, kept here in memory and read from the store through a
read-only connection (``EventStore(read_only=True)``: SQLite's read-only mode, PostgreSQL's
read-only transactions). A ``CampaignStarted`` event (stream ``campaign/<suite>``, appended by
every ``suite run``, shard and worker) names the suite's grid, so cells not yet started are shown
too; each new campaign's episodes are read once, stream by stream, and after that only the events
appended since the last look.

A cell is *pending* (no episode yet), *running* (an episode with no end, its campaign alive),
*interrupted* (no end, and no run of its campaign alive: its process was stopped or died; the
next ``suite run`` resumes it), *failed* (with the recorded reason), *limit* (scored, but a turn
or run limit ended it) or *finished*: the fold and the rule are ``core/run/cells.py``'s, which
`suite status` and a resumed ``suite run`` use too. The estimate of time left weighs each cell left
by its agent's mean time per cell in this run, so a slow model's cells are not priced at a quick
baseline's rate, and a running cell by the part its steps have not done.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.files import write_file
from inquitree.boundary.text import warn
from inquitree.core.run import (
    CELL_EVENTS,
    MOST_DONE,
    STALE_SECONDS,
    STATES,
    CellFold,
    PriceTable,
    RunState,
    cell_note,
    cell_state,
    fold_cell,
    fold_run,
    run_status,
    share_done,
)
from inquitree.events import (
    CAMPAIGN_PREFIX,
    CampaignAlive,
    CampaignEnded,
    CampaignStarted,
    Cell,
    EventStore,
    RecordedEvent,
    cells_of,
    epoch_of,
)
from inquitree.events import EPISODE_PREFIX as STREAM_PREFIX

__all__ = ["Campaigns", "STATES"]

_RUN_EVENTS = ("CampaignStarted", "CampaignAlive", "CampaignEnded")

SNAPSHOT_FORMAT = 3  # raise it when CellFold or the fold changes: an older snapshot is then folded again
FOLD_BATCH = 10_000  # events folded under the lock at a time: pages read between batches
SAVE_EVERY = 50_000  # events folded since the last save that make the next refresh save again


@dataclasses.dataclass
class _Campaign:
    name: str
    starts: list[tuple[float, CampaignStarted]] = dataclasses.field(default_factory=list)
    runs: dict[str, RunState] = dataclasses.field(default_factory=dict)  # run id -> its fold
    ids: dict[str, Cell] = dataclasses.field(default_factory=dict)  # episode id -> cell, in the suite's order
    layout: dict[str, Any] | None = None  # the grid, made once (Campaigns.layout)


class Campaigns:
    """Every campaign of the store at ``db_url``, folded as events arrive (``refresh``)."""

    def __init__(
        self,
        db_url: str | None,
        stale_seconds: float = STALE_SECONDS,
        min_interval: float = 0.5,
        snapshot: str | Path | None = None,
        save_snapshot: bool = True,
        background: bool = False,
    ):
        """``snapshot``: a file where the episodes' folds are kept with the position they were
        folded to (the viewer's is beside the warehouse), so that a restart reads only the events
        appended since; it is used only if the store holds the very log it was folded from (the log
        hash at its position) and the prices are the same, and written when ``save_snapshot``.
        ``background``: the first look at the store is folded in a thread of its own."""
        self.store = EventStore(db_url, read_only=True)
        self.stale_seconds = stale_seconds
        self.min_interval = min_interval
        self.position = 0
        self.looked = 0.0
        self.lock = threading.Lock()
        self.campaigns: dict[str, _Campaign] = {}  # by the stream id's suite part
        self.episodes: dict[str, CellFold] = {}  # episode id -> fold, for every campaign's episodes
        try:
            self.prices: PriceTable | None = PriceTable()
        except InquiTreeError:
            self.prices = None
        self.snapshot = Path(snapshot) if snapshot is not None else None
        self.saving = threading.Lock()  # one thread writes the snapshot at a time
        self.save_snapshot = save_snapshot and self.snapshot is not None
        self.resumed_from = self.saved_at = self._load_snapshot()  # the position a snapshot gave, or 0
        self.folding = False  # a thread is folding newly appended events (pages do not wait for it)
        if background:  # `inquitree view`: the pages answer while the store's newer events are folded
            self.folding = True  # set before any page can look, so that none folds the first look itself
            self.first_look: threading.Thread | None = threading.Thread(
                target=self._first_look_behind, name="campaign-folds", daemon=True
            )
            self.first_look.start()
        else:
            self.first_look = None
            self.refresh(force=True)
            self._save()

    def _first_look_behind(self) -> None:
        with self.lock:
            self.looked = time.monotonic()
            head = self.store.last_position()
        self._folded_to(head)
        self._save()

    def close(self, seconds: float = 30.0) -> None:
        """Save the folds and close the store, once the first look's fold has ended (waited for up
        to ``seconds``; one still folding then is left to end with the process, its store open)."""
        if self.first_look is not None:
            self.first_look.join(seconds)
            if self.first_look.is_alive():
                return
        self._save()
        self.store.close()

    # -- the snapshot of the folds -------------------------------------------------------------
    def _identity(self) -> dict[str, Any]:
        """What a snapshot must have been made with: this format and these prices."""
        prices = self.prices.prices if self.prices is not None else None
        return {"format": SNAPSHOT_FORMAT, "prices": prices}

    def _load_snapshot(self) -> int:
        """Take up the snapshot's folds if it was made from this store's log and with these prices
        (the campaigns' own streams are read again up to its position: a few events); the
        position taken up, or 0 (then everything is folded from the start, as without one)."""
        if self.snapshot is None or not self.snapshot.is_file():
            return 0
        try:
            saved = orjson.loads(self.snapshot.read_bytes())
            position, keys = int(saved["position"]), set(saved["campaigns"])
            episodes = {eid: CellFold(**fields) for eid, fields in saved["episodes"].items()}
            same = saved["identity"] == self._identity() and saved["log_hash"] is not None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            warn(f"inquitree view: {self.snapshot} was not used ({type(exc).__name__}); reading the store")
            return 0
        if not same or position > self.store.last_position() or self.store.log_hash_at(position) != saved["log_hash"]:
            return 0  # made from another log (or another version of this one), or with other prices
        for r in self.store.read_prefix(CAMPAIGN_PREFIX, list(_RUN_EVENTS), position):
            self._started(r)
        if set(self.campaigns) != keys:  # not the fold this store gives: start over
            self.campaigns = {}
            return 0
        self.episodes, self.position = episodes, position
        return position

    def _save(self) -> None:
        """Write the folds and their position (atomically: a reader gets the old file or the new)."""
        if not self.save_snapshot or self.snapshot is None or self.position == self.saved_at:
            return
        if not self.saving.acquire(blocking=False):  # another page's thread is writing it now
            return
        try:
            self._write_snapshot(self.snapshot)
        finally:
            self.saving.release()

    def _write_snapshot(self, snapshot: Path) -> None:
        with self.lock:
            position = self.position
            saved = {
                "identity": self._identity(),
                "position": position,
                "log_hash": self.store.log_hash_at(position),
                "campaigns": sorted(self.campaigns),
                "episodes": {eid: dataclasses.asdict(e) for eid, e in self.episodes.items()},
            }
        try:  # under a new, unguessable name, then renamed over it: never through a link planted there
            write_file(snapshot, orjson.dumps(saved))
        except (OSError, InquiTreeError) as exc:
            warn(f"inquitree view: {snapshot} was not written ({exc})")
            return
        self.saved_at = position

    # -- folding -----------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> int:
        """Read what was appended since the last look (at most every ``min_interval`` seconds, so
        many open pages cost one read); returns the store position folded to. While another thread
        folds (a first look at a large store), it returns at once: pages show the folds as far as
        they have come (``folding``), never waiting for them."""
        with self.lock:
            if self.folding or (not force and time.monotonic() - self.looked < self.min_interval):
                return self.position
            self.looked = time.monotonic()
            head = self.store.last_position()
            if head == self.position:
                return head
            self.folding = True
        return self._folded_to(head)

    def _folded_to(self, head: int) -> int:
        """Fold to ``head`` (``folding`` is set), then say the folding is over."""
        try:
            self._fold_to(head)
        finally:
            with self.lock:
                self.folding = False
        if head - self.saved_at >= SAVE_EVERY:
            self._save()
        return head

    def _fold_to(self, head: int) -> None:
        """Fold the events up to ``head``: read outside the lock, a batch at a time, each folded under
        it (pages read between batches). ``position`` moves to ``head`` only at the end, so that a
        snapshot never holds folds past its position."""
        # The first look reads the campaigns' starts by their streams; later looks read only the
        # events appended since (of the types a fold needs), which hold any new start.
        if not self.position:
            starts = list(self.store.read_prefix(CAMPAIGN_PREFIX, list(_RUN_EVENTS), head))
            with self.lock:
                new = [key for r in starts for key in self._started(r)]
            self._fold_new(head, new)
            with self.lock:
                self.position = head
            return
        fresh: set[str] = set()  # campaigns first seen in this look: folded to head by their streams
        for batch in self.store.read_after(self.position, [*_RUN_EVENTS, *CELL_EVENTS], head):
            starts = [r for r in batch if r.event_type in _RUN_EVENTS and r.stream_id.startswith(CAMPAIGN_PREFIX)]
            with self.lock:
                new = [key for r in starts for key in self._started(r)]
            self._fold_new(head, new)
            fresh.update(new)
            with self.lock:
                known = tuple(STREAM_PREFIX + k + "." for k in self.campaigns if k not in fresh)
                for r in batch:
                    if r.event_type in CELL_EVENTS and r.stream_id.startswith(known):
                        self._fold(r)
        with self.lock:
            self.position = head

    def _fold_new(self, head: int, keys: list[str]) -> None:
        """Campaigns seen for the first time: their episodes so far, stream by stream, up to ``head``,
        read outside the lock and folded under it a batch at a time."""
        for key in keys:
            batch: list[RecordedEvent] = []
            for r in self.store.read_prefix(STREAM_PREFIX + key + ".", CELL_EVENTS, head):
                batch.append(r)
                if len(batch) >= FOLD_BATCH:
                    with self.lock:
                        for done in batch:
                            self._fold(done)
                    batch = []
            with self.lock:
                for done in batch:
                    self._fold(done)

    def _started(self, r: RecordedEvent) -> list[str]:
        """Fold a ``CampaignStarted`` (or a run's ``CampaignAlive`` and ``CampaignEnded``); the key of
        a campaign seen for the first time, in a list."""
        ev = r.event
        key = r.stream_id.removeprefix(CAMPAIGN_PREFIX)
        at = epoch_of(r.recorded_at)
        if isinstance(ev, (CampaignAlive, CampaignEnded)):
            if key in self.campaigns:
                fold_run(self.campaigns[key].runs, ev, at)
            return []
        assert isinstance(ev, CampaignStarted)
        first = key not in self.campaigns
        c = self.campaigns.setdefault(key, _Campaign(ev.name))
        c.starts.append((at, ev))
        fold_run(c.runs, ev, at)
        for cell in cells_of(ev):  # a run with other agents or levels adds its cells to the grid
            eid = cell.episode_id(ev.name)
            if eid not in c.ids:
                c.ids[eid] = cell
                c.layout = None
        return [key] if first else []

    def _fold(self, r: RecordedEvent) -> None:
        fold_cell(self.episodes, r, self.prices)

    # -- reading -----------------------------------------------------------------------------
    def status(self, c: _Campaign, now: float) -> tuple[str | None, str, bool | None]:
        """What the campaign's processes are doing, as recorded (``core.run.campaign.run_status``),
        its note, and whether a run is alive (None: the campaign recorded no runs)."""
        status, note = run_status(c.runs.values(), now)
        return status, note, None if status is None else status == "running"

    def _state(self, e: CellFold | None, now: float, alive: bool | None) -> str:
        return cell_state(e, now, alive, self.stale_seconds)

    def names(self) -> list[str]:
        with self.lock:
            return sorted(self.campaigns)

    def summary(self, key: str, now: float | None = None, cells: bool = True) -> dict[str, Any] | None:
        """One campaign's counts, times, tokens, cost and (unless ``cells`` is False: the home page's
        line needs the counts only) every cell's state and note (JSON-ready)."""
        now = time.time() if now is None else now
        with self.lock:
            c = self.campaigns.get(key)
            if c is None:
                return None
            status, status_note, alive = self.status(c, now)
            found = {eid: self.episodes.get(eid) for eid in c.ids}
            states = {eid: self._state(e, now, alive) for eid, e in found.items()}
            folds = [e for e in found.values() if e is not None]
            counts = {s: 0 for s in STATES}
            for state in states.values():
                counts[state] += 1
            first = min(at for at, _ in c.starts)
            latest = max(at for at, _ in c.starts)
            active = alive if alive is not None else counts["running"] > 0
            last = max([e.last for e in folds] + [latest])
            left = counts["pending"] + counts["running"] + counts["interrupted"]
            elapsed = (now if active else last) - latest
            eta = self._time_left(c, states, latest, now, counts["running"]) if active and left else None
            return {
                "key": key,
                "name": c.name,
                "status": status or ("running" if active else "idle"),
                "status_note": status_note,
                "cells": len(c.ids),
                "counts": counts,
                "active": active,
                "first_started": first,
                "latest_started": latest,
                "runs": len(c.starts),
                "elapsed_s": elapsed,
                "eta_s": eta,
                "left": left,
                "tokens": sum(e.tokens for e in folds),
                "cost_usd": sum(e.cost_usd for e in folds),
                "unpriced_calls": sum(e.unpriced_calls for e in folds),
                "position": self.position,
            } | (
                {"states": {eid: [state, cell_note(found[eid], state, now)] for eid, state in states.items()}}
                if cells
                else {}
            )

    def _time_left(self, c: _Campaign, states: dict[str, str], since: float, now: float, running: int) -> float | None:
        """An estimate of the time left: each cell not ended takes its agent's mean time per cell
        ended since the latest run started (the campaign's mean for an agent with none ended yet);
        a running cell, the part of it its steps have not done yet (:func:`share_done` of its
        agent's mean steps), or before its first step the mean less the time it has had; never
        none, as a cell that outran the mean is still running. The sum is shared by the cells
        running now. None until a cell has ended in this run."""
        took: dict[str, list[tuple[float, int]]] = {}
        for eid, cell in c.ids.items():
            e = self.episodes.get(eid)
            if e is not None and e.ended is not None and e.ended >= since:
                took.setdefault(cell.agent, []).append((e.ended - max(e.started, since), e.step))
        if not took:
            return None
        everyone = [t for ts in took.values() for t in ts]
        overall = (sum(t for t, _ in everyone) / len(everyone), sum(n for _, n in everyone) / len(everyone))
        work = 0.0
        for eid, cell in c.ids.items():
            state = states[eid]
            if state in ("pending", "running", "interrupted"):
                ts = took.get(cell.agent)
                mean, steps = (sum(t for t, _ in ts) / len(ts), sum(n for _, n in ts) / len(ts)) if ts else overall
                e = self.episodes.get(eid)
                if state != "running" or e is None:
                    work += mean
                elif e.step and steps:  # by its steps
                    work += mean * (1 - share_done(e.step, steps))
                else:  # no step recorded yet: by its time, never none
                    work += max(mean - (now - e.started), mean * (1 - MOST_DONE))
        return work / max(1, running)

    def cells(self, key: str, now: float | None = None) -> list[dict[str, Any]] | None:
        """Every cell of a campaign as a row of the suite page's list, in the suite's order: its
        episode, tree, agent, judge, level, run, state (as the grid shows it), step, and when it
        started and how long it has run (None for a cell not started)."""
        now = time.time() if now is None else now
        with self.lock:
            c = self.campaigns.get(key)
            if c is None:
                return None
            _, _, alive = self.status(c, now)
            rows = []
            for eid, cell in c.ids.items():
                e = self.episodes.get(eid)
                state = self._state(e, now, alive)
                until = None if e is None else e.ended if e.ended is not None else now if state == "running" else e.last
                rows.append(
                    {
                        "episode_id": eid,
                        "tree": cell.tree,
                        "agent": cell.agent,
                        "judge": cell.judge,
                        "a": cell.randomness,
                        "run": cell.run,
                        "state": state,
                        "steps": e.step if e is not None else None,
                        "started": e.started if e is not None else None,
                        "seconds": None if e is None or until is None else until - e.started,
                    }
                )
            return rows

    def layout(self, key: str) -> dict[str, Any] | None:
        """The grid's rows (tree, agent[, judge]) and columns (randomness level, run), each cell
        with its episode id, in the suite's order (made again only when a run adds cells)."""
        with self.lock:
            c = self.campaigns.get(key)
            if c is None:
                return None
            if c.layout is None:
                judges = len({cell.judge for cell in c.ids.values()}) > 1
                rows: dict[tuple[str, ...], dict[tuple[int, int], str]] = {}
                columns: dict[tuple[int, int], None] = {}
                for eid, cell in c.ids.items():
                    row = (cell.tree, cell.agent, cell.judge) if judges else (cell.tree, cell.agent)
                    col = (cell.randomness, cell.run)
                    columns[col] = None
                    rows.setdefault(row, {})[col] = eid
                ordered = sorted(columns)
                c.layout = {
                    "name": c.name,
                    "judges": judges,
                    "columns": ordered,
                    "rows": [{"key": row, "cells": [by.get(col) for col in ordered]} for row, by in rows.items()],
                }
            return c.layout
