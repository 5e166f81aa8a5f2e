"""What plays or scores the game: agents, judges, embedders and tau calibration, and the one
registry of their kinds (``kinds``: ``openai:MODEL``, ``random``, ``script:FILE``, ...)."""

from __future__ import annotations

from inquitree.core.players.agents import (
    Agent,
    ModelConfig,
    RateLimiter,
    ScriptAgent,
    last_turns,
    recorded_turns,
    strip_code_fence,
)
from inquitree.core.players.calibrate import (
    calibrate_tree,
    hint_cosines,
    is_monotone,
    percentile,
    recommend_tau,
    summary_rows,
)
from inquitree.core.players.control import CONTROL_PROMPT_VERSION, CONTROL_USER
from inquitree.core.players.embed import (
    DEFAULT_TAU,
    DEFAULT_TAU_STUDY,
    default_tau,
    default_tau_study,
    embed_actions,
    embeds_queries_apart,
)
from inquitree.core.players.judges import (
    JUDGE_PROMPT_VERSION,
    JUDGE_REASK,
    JUDGE_SYSTEM,
    JUDGE_USER,
    VERDICT_SCHEMA,
    EmbeddingJudge,
    Judge,
    parse_verdict,
    verdict,
)
from inquitree.core.players.kinds import (
    SpecError,
    make_agent,
    make_embedder,
    make_judge,
    make_kind,
    parse_spec,
    spelled,
)

__all__ = [
    "Agent",
    "CONTROL_PROMPT_VERSION",
    "CONTROL_USER",
    "DEFAULT_TAU",
    "DEFAULT_TAU_STUDY",
    "EmbeddingJudge",
    "JUDGE_PROMPT_VERSION",
    "JUDGE_REASK",
    "JUDGE_SYSTEM",
    "JUDGE_USER",
    "Judge",
    "ModelConfig",
    "RateLimiter",
    "ScriptAgent",
    "SpecError",
    "VERDICT_SCHEMA",
    "calibrate_tree",
    "default_tau",
    "default_tau_study",
    "embed_actions",
    "embeds_queries_apart",
    "hint_cosines",
    "is_monotone",
    "last_turns",
    "make_agent",
    "make_embedder",
    "make_judge",
    "make_kind",
    "parse_spec",
    "parse_verdict",
    "percentile",
    "recommend_tau",
    "recorded_turns",
    "spelled",
    "strip_code_fence",
    "summary_rows",
    "verdict",
]
