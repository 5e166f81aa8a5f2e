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

The modules lived directly in ``core/`` before the rooms: ``inquitree.core.runner``,
``inquitree.core.engine``, ... (README, notebooks, inspect_ai's entry point of older installs).
Those names still import, as the very same module objects as the new ones (:class:`_MovedModules`).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from typing import Any, cast

from inquitree import lazy_exports

_EXPORTS = {
    "Tree": "game.tree",
    "load_tree_file": "game.tree",
    "resolve_tree": "game.tree",
    "TemplateSet": "game.prompts",
    "Engine": "game.engine",
    "Params": "game.engine",
    "EpisodeSpec": "run.spec",
    "make_embedder": "players.embed",
    "make_agent": "players.agents",
    "make_judge": "players.judges",
    "Episode": "run.runner",
    "run_episode": "run.runner",
    "Suite": "run.campaign",
    "run_suite": "run.campaign",
    "resimulate": "run.replay",
    "rejudge": "run.rejudge",
    "run_control": "run.rejudge",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)

# Where each module of the old flat ``core/`` lives now.
MOVED = {
    "engine": "game.engine",
    "tree": "game.tree",
    "spec": "run.spec",
    "templates": "game.prompts",
    "paper_templates": "game.prompts_in_paper",
    "models": "calls.models",
    "chat_http": "calls.chat_http",
    "agents": "players.agents",
    "judges": "players.judges",
    "embed": "players.embed",
    "calibrate": "players.calibrate",
    "runner": "run.runner",
    "campaign": "run.campaign",
    "replay": "run.replay",
    "rejudge": "run.rejudge",
    "limits": "run.limits",
    "golden": "run.golden",
    "inspect_task": "inspect.task",
    "inspect_model": "inspect.model",
    "inspect_export": "inspect.export",
}


class _MovedModules:
    """``import inquitree.core.runner`` gives ``inquitree.core.run.runner`` itself (one module
    object under two names, so a patch through either name is seen through both). A meta path
    finder and loader by its methods: the ``importlib.abc`` bases would bring ``importlib.resources``,
    ``tempfile`` and ``shutil`` into every start of the command line."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        prefix, _, name = fullname.rpartition(".")
        if prefix != __name__ or name not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast(Any, self))  # a loader by its methods

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module(f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}")

    def exec_module(self, module: Any) -> None:
        """The module was executed under its new name already."""


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())
