"""InquiTree from Python: the names a lab's script uses, in one list that the type checker reads.

Trees and the engine, what plays an episode and how it is recorded, campaigns, replay and
judging again, the event store and the warehouse. Each name is the one its layer's face exports
(``inquitree.core.run``, ``inquitree.events``, ...), so a type here is the real type, never
``Any``. Importing this module loads the engine, the store's drivers and DuckDB: it is for scripts
and notebooks; the command line never imports it, and starts without them.

    from inquitree.api import EpisodeSetup, EventStore, Recording, resolve_tree, run_episode
"""

from __future__ import annotations

from inquitree.core.game import Engine, Params, TemplateSet, Tree, load_tree_file, resolve_tree
from inquitree.core.players import make_agent, make_embedder, make_judge
from inquitree.core.run import (
    EPISODE_OPTIONS,
    Episode,
    EpisodeSetup,
    EpisodeSpec,
    Recording,
    Suite,
    judge_episode,
    resimulate,
    run_control,
    run_episode,
    run_suite,
)
from inquitree.events import EventStore
from inquitree.warehouse import Warehouse

__all__ = [
    "EPISODE_OPTIONS",
    "Engine",
    "Episode",
    "EpisodeSetup",
    "EpisodeSpec",
    "EventStore",
    "Params",
    "Recording",
    "Suite",
    "TemplateSet",
    "Tree",
    "Warehouse",
    "judge_episode",
    "load_tree_file",
    "make_agent",
    "make_embedder",
    "make_judge",
    "resimulate",
    "resolve_tree",
    "run_control",
    "run_episode",
    "run_suite",
]
