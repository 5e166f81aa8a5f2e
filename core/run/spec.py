"""One episode specification: the paper's defaults in one place, and the run parameters built
from them the same way by every entry point.

``inquitree play``, campaigns (``suite run``) and the inspect task each used to build the
engine's :class:`~inquitree.core.game.engine.Params` with a parameter list and defaults of their own;
a default changed in one of them and not the others would have made the same cell record other
parameters by entry point, the one thing a replayable benchmark must not do. Each now takes an
:class:`EpisodeSpec` (their options' defaults come from here too) and asks it for the parameters
of a cell. Replay and re-judging read the parameters back from ``EpisodeStarted``
(``Params.from_dict``), so they never depend on a default at all.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the defaults at start-up: nothing heavy is imported for them
    from inquitree.core.game import Params, TemplateSet, Tree

__all__ = ["MAX_HINTS", "MAX_REASKS", "TEMPLATES", "EpisodeSpec"]

MAX_HINTS = 4  # H, the hint levels (Sec. 3.4; the paper's experiments use 4)
MAX_REASKS = 3  # C.4.2 re-asks in one Result visit before the engine asks for the conclusion
TEMPLATES = "inquitree"  # the paper's prompt templates (Appendix C)


@dataclasses.dataclass(frozen=True)
class EpisodeSpec:
    """What a run of episodes is played with, apart from the cell (tree, level, seed)."""

    tau: float | None = None  # None: the embedder's recommended threshold (core/players/embed.py)
    max_hints: int = MAX_HINTS
    max_turns: int | None = None  # None: the upper bound n(2H+3) of the tree (Eq. 12)
    max_reasks: int | None = MAX_REASKS
    tau_study: float | None = None  # None: the embedder's study threshold if tau is its default too, else tau
    match_rule: str = "paper"  # or "fitted": the rule fitted for the embedder (core/game/matching.py)

    def thresholds(self, embedder_id: str) -> tuple[float, float | None]:
        """(tau, tau_study) for episodes matched by ``embedder_id``: the embedder's recommended
        thresholds where none is given; a tau given alone applies at both states."""
        from inquitree.core.players import default_tau, default_tau_study

        tau_study = self.tau_study
        if tau_study is None and self.tau is None:
            tau_study = default_tau_study(embedder_id)
        return (default_tau(embedder_id) if self.tau is None else self.tau), tau_study

    def params(self, tree: Tree, embedder_id: str, templates: TemplateSet, randomness: int, seed: int) -> Params:
        """The engine's parameters for one cell, validated."""
        from inquitree.core.game import ACTION_RULE, CONCLUSION_RULE, RULES, MatchRuleError, Params, fitted_rule

        if self.match_rule not in RULES:
            raise MatchRuleError(f"match rule {self.match_rule!r}: one of {', '.join(RULES)}")

        tau, tau_study = self.thresholds(embedder_id)
        params = Params(
            tau=tau,
            max_hints=self.max_hints,
            max_turns=self.max_turns or tree.bounds(self.max_hints)[1],
            randomness=randomness,
            seed=seed,
            embedder=embedder_id,
            template_set=templates.name,
            template_hash=templates.hash,
            max_reasks=self.max_reasks,
            tau_study=tau_study,
            action_rule=ACTION_RULE,
            conclusion_rule=CONCLUSION_RULE,
            match_rule=fitted_rule(embedder_id) if self.match_rule == "fitted" else None,
        )
        params.validate()
        return params
