"""The engine and what plays it, in rooms:

- ``game``: research trees, prompt templates and the pure engine;
- ``calls``: the model client (with its call cache) and its HTTP transport;
- ``players``: agents, judges, embedders, calibration, and the registry of their kinds;
- ``run``: an episode's specification, the runner, campaigns, replay, re-judging and the control,
  limits, exports;
- ``inspect``: the inspect_ai task, models and log export;
- ``extract``: research trees from papers.

A room imports only the rooms above it in this list (``run`` uses ``players``, ``calls`` and
``game``; ``game`` uses none of them), and ``events``; ``cache`` (where InquiTree keeps what it can
compute again) is shared by all. docs/ARCHITECTURE.md draws the map, and
tests/test_architecture.py keeps it true. What a user may import from ``inquitree.core`` is
listed in ``__all__``; each name is loaded from its module on first use (the command line
imports this package at start-up, and nothing heavy may come with it).

"""

from __future__ import annotations

from inquitree import lazy_exports

_EXPORTS = {
    "Tree": "game.tree",
    "load_tree_file": "game.tree",
    "resolve_tree": "game.tree",
    "TemplateSet": "game.prompts",
    "Engine": "game.engine",
    "Params": "game.engine",
    "EpisodeSpec": "run.spec",
    "make_embedder": "players.kinds",
    "make_agent": "players.kinds",
    "make_judge": "players.kinds",
    "Episode": "run.runner",
    "run_episode": "run.runner",
    "Suite": "run.campaign",
    "run_suite": "run.campaign",
    "resimulate": "run.replay",
    "rejudge": "run.rejudge",
    "run_control": "run.rejudge",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
