"""Names that come from outside and become keys: episode ids, stream names, file names.

An episode id is typed by a user (``play --episode-id``), made from a suite's names, read from an
imported file, or read back from a database that others can write to. It then becomes a stream
name, part of a URL, a file name (``report``'s episode pages) and text on a terminal. So it has one
grammar, checked wherever an id enters: letters, digits and ``._-``, starting with a letter, a
digit or ``_``, at most :data:`MAX_ID` characters. No path separator, no ``..`` on its own, no
markup, no control character can pass. And no file name is ever built from a stored name without
:func:`confined`, which refuses any name that would leave its folder, whatever the grammar said
when the name was stored (``inquitree.boundary.files``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from typing import TYPE_CHECKING, Any

from inquitree.boundary.errors import BadName
from inquitree.boundary.text import shown

if TYPE_CHECKING:
    from inquitree.events.types import CampaignStarted

__all__ = [
    "CAMPAIGN_PREFIX",
    "agent_name",
    "Cell",
    "campaign_stream",
    "cells_of",
    "episode_prefix",
    "grid",
    "EPISODE_ID_PATTERN",
    "EPISODE_PREFIX",
    "IMPORT_PREFIX",
    "LABELS_PREFIX",
    "MAX_ID",
    "check_episode_id",
    "episode_stream",
    "is_episode_id",
]

EPISODE_PREFIX = "episode/"
IMPORT_PREFIX = "import/"  # events.types.EpisodeImported: which episodes came from elsewhere, on whose word
CAMPAIGN_PREFIX = "campaign/"  # a suite's CampaignStarted events
LABELS_PREFIX = "labels/"  # events.types.LabelRecorded: a labelling sample's answers, one stream a sample
MAX_ID = 180  # the store's stream ids are at most 200 characters, "episode/" included
EPISODE_ID_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,%d}" % (MAX_ID - 1)  # the whole id (fullmatch)
_ID = re.compile(EPISODE_ID_PATTERN)


def is_episode_id(value: object) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def check_episode_id(value: object, where: str = "") -> str:
    """``value`` if it is a valid episode id; otherwise :class:`BadName` naming it and the rule."""
    if is_episode_id(value):
        return str(value)
    prefix = f"{where}: " if where else ""
    raise BadName(
        f"{prefix}episode id {shown(value)} is not allowed: an episode id is 1 to {MAX_ID} letters, digits, "
        "'.', '_' or '-', and starts with a letter, a digit or '_'"
    )


def episode_stream(episode_id: str, where: str = "") -> str:
    """The store's stream name of an episode, after checking its id."""
    return EPISODE_PREFIX + check_episode_id(episode_id, where)


# -- a campaign's cells and their episode ids (core/run/campaign.py runs them; the viewer folds them) --
@functools.cache
def _slug(x: str) -> str:
    """A name as it goes into episode ids (a suite's few names, each made once)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", x).strip("-.") or "_"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of a suite's grid: tree x agent label x judge x randomness level x run."""

    tree: str
    agent: str
    judge: str
    randomness: int
    run: int

    def episode_id(self, suite: str) -> str:
        names = ".".join(_slug(x) for x in (suite, self.tree, self.agent, self.judge))
        eid = f"{names}.a{self.randomness}.r{self.run}"
        if len(eid) > MAX_ID:  # the store's stream ids are at most 200 characters
            eid = eid[:160] + "." + hashlib.sha256(eid.encode()).hexdigest()[:16]
        return check_episode_id(eid, f"suite {suite!r}")


def grid(trees: list[str], agents: list[str], judges: list[str], randomness: list[int], runs: int) -> list[Cell]:
    """A suite's cells in their one order (``Suite.cells``, and a recorded ``CampaignStarted``'s)."""
    return [Cell(t, a, j, r, k) for t in trees for a in agents for j in judges for r in randomness for k in range(runs)]


def cells_of(started: CampaignStarted) -> list[Cell]:
    """The cells a recorded run names."""
    return grid(started.trees, started.agents, started.judges, started.randomness, started.runs)


def episode_prefix(name: str) -> str:
    """What the ids of suite ``name``'s episodes begin with: the whole of its name as a slug, then
    a dot. A name may hold dots itself ("qwen-1.5b"): taking the id's first dotted part made
    "qwen-1.5b" and "qwen-1.5b-random" one campaign, "qwen-1"."""
    return _slug(name) + "."


def campaign_stream(name: str) -> str:
    """The stream of suite ``name``'s runs (``CampaignStarted``)."""
    return CAMPAIGN_PREFIX + episode_prefix(name).rstrip(".")


def agent_name(description: dict[str, Any]) -> str:
    """An agent's name from its recorded description: its label, else its model, else its kind (the
    warehouse's ``agent`` column names it the same way, views.sql)."""
    return str(description.get("label") or description.get("model") or description.get("kind") or "agent")
