"""One episode specification: the paper's defaults in one place, the options an episode is played
with declared once, and the run parameters built from them the same way by every entry point.

``EPISODE_OPTIONS`` declares each option (name, type, default, what it sets, the values it may
take, where it may be set): `play`'s command-line options (``cli/common.py``), a suite's keys and
their checks and docs/suite-keys.md (``campaign.py``), and the inspect task's arguments
(``core/inspect/task.py``) are made from it, and :func:`episode_values` checks what any of them
was given. Adding an option is one line here (and its use in the engine).

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
import math
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # the CLI reads the defaults at start-up: nothing heavy is imported for them
    from inquitree.core.game import Params, TemplateSet, Tree

__all__ = [
    "EPISODE_OPTIONS",
    "MAX_HINTS",
    "MAX_REASKS",
    "TEMPLATES",
    "EpisodeOption",
    "EpisodeSpec",
    "OptionError",
    "episode_values",
    "spec_of",
]

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


class OptionError(ValueError):
    """A value an episode option cannot take; the message names the option and the value."""


@dataclasses.dataclass(frozen=True)
class EpisodeOption:
    """One option an episode is played with, as every entry point takes it: ``name`` is the suite
    key and the inspect task's argument, ``--name-with-dashes`` the command-line option."""

    name: str
    kind: type  # int, float or str: what a suite or the inspect task must give
    default: Any  # None: decided by other options (the embedder's thresholds, the tree's bound)
    what: str  # what it sets, one line (the suite keys' page, --help)
    least: int | None = None  # the smallest value allowed
    choices: tuple[str, ...] = ()  # the values allowed, when they are few
    kinds: str | None = None  # the role whose registered kinds it names (--help lists them)
    short: str | None = None  # the command line's one-letter flag
    inspect: bool = True  # an argument of the inspect task (-T NAME=VALUE)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any, where: str) -> Any:
        """``value`` if this option may take it (an int is a float), else an :class:`OptionError`
        naming ``where`` (the suite file, ``-T``), the option and the value."""
        if value is None and self.default is None:
            return None
        numeric = self.kind is float and isinstance(value, int)
        if isinstance(value, bool) or not (isinstance(value, self.kind) or numeric):
            raise OptionError(f"{where}{self.name} = {value!r}: expected {self.kind.__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise OptionError(f"{where}{self.name} = {value!r}: expected a finite number")
        if self.least is not None and value < self.least:
            raise OptionError(f"{where}{self.name} = {value!r}: expected at least {self.least}")
        if self.choices and value not in self.choices:
            raise OptionError(f"{where}{self.name} = {value!r}: expected one of {', '.join(self.choices)}")
        return float(value) if numeric else value


def _rules() -> tuple[str, ...]:
    from inquitree.core.game import RULES

    return tuple(RULES)


EPISODE_OPTIONS: tuple[EpisodeOption, ...] = (
    EpisodeOption(
        "embedder",
        str,
        "local",
        "what matches actions to candidates: local, hash, nomic, openai[:MODEL] or a plug-in's",
        kinds="embedder",
    ),
    EpisodeOption("embedder_base_url", str, None, "the endpoint of an openai or nomic embedder", inspect=False),
    EpisodeOption("tau", float, None, "the match threshold (default: the embedder's, see docs/design.md)"),
    EpisodeOption(
        "tau_study",
        float,
        None,
        "the threshold at the Subtopic state, whose one candidate is the study (default: the embedder's study "
        "threshold when tau is its default too, else tau)",
    ),
    EpisodeOption(
        "match_rule",
        str,
        "paper",
        "how an action is matched: paper (one cosine against tau) or fitted (the rule fitted on real moves for "
        "the embedder, docs/instrument.md)",
        choices=_rules(),
    ),
    EpisodeOption("max_hints", int, MAX_HINTS, "H: hints before the engine moves on by itself", least=1, short="-H"),
    EpisodeOption("max_turns", int, None, "the turn limit of an episode (default: n(2H+3))", least=1),
    EpisodeOption(
        "max_reasks",
        int,
        MAX_REASKS,
        "re-asks in one Result visit (C.4.2); the next reply that names no decision ends the inquiry and the "
        "conclusion is asked for",
        least=0,
    ),
    EpisodeOption("templates", str, TEMPLATES, "the template set: a shipped name or a folder (a suite's: beside it)"),
)


def episode_values(given: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Every option's value: ``given``'s, checked, else its default. A name that is no option
    is an :class:`OptionError` listing the options (``where`` begins each message)."""
    options = EPISODE_OPTIONS
    known = {o.name: o for o in options}
    for name in given:
        if name not in known:
            raise OptionError(f"{where}unknown episode option {name!r} (known: {', '.join(known)})")
    return {o.name: o.check(given[o.name], where) if o.name in given else o.default for o in options}


def spec_of(values: Mapping[str, Any]) -> EpisodeSpec:
    """The specification of :func:`episode_values`' values (each field of it is an option)."""
    return EpisodeSpec(**{f.name: values[f.name] for f in dataclasses.fields(EpisodeSpec)})
