"""The game: research trees, the paper's prompt templates and the pure
engine that walks an agent through Topic -> Subtopic -> Study -> Result (paper Sec. 3, App. B-C).
Nothing here does I/O beyond reading shipped files; everything else in ``core`` plays or drives it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.core.game.engine import ACTION_RULE as ACTION_RULE
    from inquitree.core.game.engine import CONCLUSION as CONCLUSION
    from inquitree.core.game.engine import CONCLUSION_RULE as CONCLUSION_RULE
    from inquitree.core.game.engine import DONE as DONE
    from inquitree.core.game.engine import FAILED as FAILED
    from inquitree.core.game.engine import RESULT as RESULT
    from inquitree.core.game.engine import STATE_AND_STEP_EVENTS as STATE_AND_STEP_EVENTS
    from inquitree.core.game.engine import STUDY as STUDY
    from inquitree.core.game.engine import SUBTOPIC as SUBTOPIC
    from inquitree.core.game.engine import TOPIC as TOPIC
    from inquitree.core.game.engine import Engine as Engine
    from inquitree.core.game.engine import EngineError as EngineError
    from inquitree.core.game.engine import EpisodeState as EpisodeState
    from inquitree.core.game.engine import Params as Params
    from inquitree.core.game.engine import Reply as Reply
    from inquitree.core.game.engine import cut_where_it_repeats as cut_where_it_repeats
    from inquitree.core.game.engine import fold as fold
    from inquitree.core.game.engine import repeats_itself as repeats_itself
    from inquitree.core.game.engine import threshold_at as threshold_at
    from inquitree.core.game.engine import uniform as uniform
    from inquitree.core.game.matching import PAPER as PAPER
    from inquitree.core.game.matching import RULES as RULES
    from inquitree.core.game.matching import MatchRuleError as MatchRuleError
    from inquitree.core.game.matching import decide as decide
    from inquitree.core.game.matching import decided as decided
    from inquitree.core.game.matching import fitted_rule as fitted_rule
    from inquitree.core.game.matching import match_anchors as match_anchors
    from inquitree.core.game.matching import read_match as read_match
    from inquitree.core.game.matching import recorded_cosines as recorded_cosines
    from inquitree.core.game.prompts import TemplateError as TemplateError
    from inquitree.core.game.prompts import TemplateSet as TemplateSet
    from inquitree.core.game.prompts import is_shipped as is_shipped
    from inquitree.core.game.tree import Tree as Tree
    from inquitree.core.game.tree import TreeError as TreeError
    from inquitree.core.game.tree import it18_registry as it18_registry
    from inquitree.core.game.tree import load_tree_file as load_tree_file
    from inquitree.core.game.tree import parse_tree as parse_tree
    from inquitree.core.game.tree import publication_window as publication_window
    from inquitree.core.game.tree import resolve_tree as resolve_tree
    from inquitree.core.game.tree import shipped_tree as shipped_tree
    from inquitree.core.game.tree import shipped_tree_paths as shipped_tree_paths

_EXPORTS = {
    "ACTION_RULE": "engine",
    "CONCLUSION": "engine",
    "CONCLUSION_RULE": "engine",
    "DONE": "engine",
    "Engine": "engine",
    "EngineError": "engine",
    "EpisodeState": "engine",
    "FAILED": "engine",
    "Params": "engine",
    "RESULT": "engine",
    "Reply": "engine",
    "STATE_AND_STEP_EVENTS": "engine",
    "STUDY": "engine",
    "SUBTOPIC": "engine",
    "TOPIC": "engine",
    "cut_where_it_repeats": "engine",
    "fold": "engine",
    "repeats_itself": "engine",
    "threshold_at": "engine",
    "uniform": "engine",
    "MatchRuleError": "matching",
    "PAPER": "matching",
    "RULES": "matching",
    "decide": "matching",
    "decided": "matching",
    "fitted_rule": "matching",
    "match_anchors": "matching",
    "read_match": "matching",
    "recorded_cosines": "matching",
    "TemplateError": "prompts",
    "TemplateSet": "prompts",
    "is_shipped": "prompts",
    "Tree": "tree",
    "TreeError": "tree",
    "it18_registry": "tree",
    "load_tree_file": "tree",
    "parse_tree": "tree",
    "publication_window": "tree",
    "resolve_tree": "tree",
    "shipped_tree": "tree",
    "shipped_tree_paths": "tree",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
