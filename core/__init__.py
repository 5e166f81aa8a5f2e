"""The engine and what plays it: research trees, templates, embedders and matching, agents,
judges, the episode runner, campaigns, replay and re-judging.

What a user may import from here is listed in ``__all__``; each name is loaded from its module on
first use (the command line imports this package at start-up, and nothing heavy may come with it).
Everything else is the modules' own business.
"""

from __future__ import annotations

from inquitree import lazy_exports

_EXPORTS = {
    "Tree": "tree",
    "load_tree_file": "tree",
    "resolve_tree": "tree",
    "TemplateSet": "templates",
    "Engine": "engine",
    "Params": "engine",
    "EpisodeSpec": "spec",
    "make_embedder": "embed",
    "make_agent": "agents",
    "make_judge": "judges",
    "Episode": "runner",
    "run_episode": "runner",
    "Suite": "campaign",
    "run_suite": "campaign",
    "resimulate": "replay",
    "rejudge": "rejudge",
    "run_control": "rejudge",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
