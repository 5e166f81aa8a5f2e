"""What plays or scores the game: agents, judges, embedders and tau calibration, and the one
registry of their kinds (``kinds``: ``openai:MODEL``, ``random``, ``script:FILE``, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.core.players.agents import Agent as Agent
    from inquitree.core.players.agents import ModelConfig as ModelConfig
    from inquitree.core.players.agents import RateLimiter as RateLimiter
    from inquitree.core.players.agents import ScriptAgent as ScriptAgent
    from inquitree.core.players.agents import last_turns as last_turns
    from inquitree.core.players.agents import recorded_turns as recorded_turns
    from inquitree.core.players.agents import strip_code_fence as strip_code_fence
    from inquitree.core.players.calibrate import calibrate_tree as calibrate_tree
    from inquitree.core.players.calibrate import hint_cosines as hint_cosines
    from inquitree.core.players.calibrate import is_monotone as is_monotone
    from inquitree.core.players.calibrate import percentile as percentile
    from inquitree.core.players.calibrate import recommend_tau as recommend_tau
    from inquitree.core.players.calibrate import summary_rows as summary_rows
    from inquitree.core.players.control import CONTROL_PROMPT_VERSION as CONTROL_PROMPT_VERSION
    from inquitree.core.players.control import CONTROL_USER as CONTROL_USER
    from inquitree.core.players.embed import DEFAULT_TAU as DEFAULT_TAU
    from inquitree.core.players.embed import DEFAULT_TAU_STUDY as DEFAULT_TAU_STUDY
    from inquitree.core.players.embed import default_tau as default_tau
    from inquitree.core.players.embed import default_tau_study as default_tau_study
    from inquitree.core.players.embed import embed_actions as embed_actions
    from inquitree.core.players.embed import embeds_queries_apart as embeds_queries_apart
    from inquitree.core.players.judges import JUDGE_PROMPT_VERSION as JUDGE_PROMPT_VERSION
    from inquitree.core.players.judges import JUDGE_REASK as JUDGE_REASK
    from inquitree.core.players.judges import JUDGE_SYSTEM as JUDGE_SYSTEM
    from inquitree.core.players.judges import JUDGE_USER as JUDGE_USER
    from inquitree.core.players.judges import VERDICT_SCHEMA as VERDICT_SCHEMA
    from inquitree.core.players.judges import EmbeddingJudge as EmbeddingJudge
    from inquitree.core.players.judges import Judge as Judge
    from inquitree.core.players.judges import parse_verdict as parse_verdict
    from inquitree.core.players.judges import verdict as verdict
    from inquitree.core.players.kinds import SpecError as SpecError
    from inquitree.core.players.kinds import make_agent as make_agent
    from inquitree.core.players.kinds import make_embedder as make_embedder
    from inquitree.core.players.kinds import make_judge as make_judge
    from inquitree.core.players.kinds import make_kind as make_kind
    from inquitree.core.players.kinds import parse_spec as parse_spec
    from inquitree.core.players.kinds import spelled as spelled

_EXPORTS = {
    "Agent": "agents",
    "ModelConfig": "agents",
    "RateLimiter": "agents",
    "ScriptAgent": "agents",
    "last_turns": "agents",
    "recorded_turns": "agents",
    "strip_code_fence": "agents",
    "calibrate_tree": "calibrate",
    "hint_cosines": "calibrate",
    "is_monotone": "calibrate",
    "percentile": "calibrate",
    "recommend_tau": "calibrate",
    "summary_rows": "calibrate",
    "CONTROL_PROMPT_VERSION": "control",
    "CONTROL_USER": "control",
    "DEFAULT_TAU": "embed",
    "DEFAULT_TAU_STUDY": "embed",
    "default_tau": "embed",
    "default_tau_study": "embed",
    "embed_actions": "embed",
    "embeds_queries_apart": "embed",
    "EmbeddingJudge": "judges",
    "JUDGE_PROMPT_VERSION": "judges",
    "JUDGE_REASK": "judges",
    "JUDGE_SYSTEM": "judges",
    "JUDGE_USER": "judges",
    "Judge": "judges",
    "VERDICT_SCHEMA": "judges",
    "parse_verdict": "judges",
    "verdict": "judges",
    "make_agent": "kinds",
    "make_kind": "kinds",
    "parse_spec": "kinds",
    "SpecError": "kinds",
    "make_embedder": "kinds",
    "make_judge": "kinds",
    "spelled": "kinds",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
