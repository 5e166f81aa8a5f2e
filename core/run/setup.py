"""One episode setup: what an episode is played with, resolved and checked once, and where it is recorded.

``inquitree play``, a campaign (``suite run``) and the inspect task each used to turn their
options into templates, an embedder, judges, limits and prices on their own, and each checked a
cost limit's price in its own words: adding the match rule took an edit in all three. Each now
builds one :class:`EpisodeSetup` (from its options, its suite file or its task arguments), asks
it for a cell's parameters, agent and judge, and hands it to :func:`~inquitree.core.run.runner.run_episode`
(or the inspect solver's :class:`~inquitree.core.run.runner.Episode`) with a :class:`Recording`:
the store, the episode id and how a recorded stream is continued.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from inquitree.core.run.limits import Budget, LimitError, Limits, PriceTable
from inquitree.core.run.spec import TEMPLATES, EpisodeSpec, spec_of

if TYPE_CHECKING:
    from inquitree.core.game import Params, TemplateSet, Tree
    from inquitree.core.players import Agent, Judge, ModelConfig, RateLimiter
    from inquitree.events import Event, EventStore

__all__ = ["EpisodeSetup", "Recording", "NOT_RECORDED"]

PAPER_SPEC, NO_LIMITS = EpisodeSpec(), Limits()  # the paper's specification; no per-episode limit


@dataclasses.dataclass(frozen=True)
class EpisodeSetup:
    """What every episode of a play, a campaign or an inspect run shares: the prompt templates,
    the embedder that matches actions, the specification (thresholds, match rule, hint and turn
    bounds), the per-episode limits, the price table a cost limit needs, a campaign's budget and
    its rate limiter. Made once, before a store is opened or a model is called."""

    templates: TemplateSet
    embedder: Any
    spec: EpisodeSpec = PAPER_SPEC
    limits: Limits = NO_LIMITS
    prices: PriceTable | None = None
    budget: Budget | None = None
    limiter: RateLimiter | None = None

    @classmethod
    def resolve(
        cls,
        *,
        templates: str = TEMPLATES,
        embedder: str = "local",
        embedder_base_url: str | None = None,
        spec: EpisodeSpec = PAPER_SPEC,
        limits: Limits = NO_LIMITS,
        prices: str | None = None,
        budget_tokens: int | None = None,
        budget_cost_usd: float | None = None,
        requests_per_minute: float | None = None,
    ) -> EpisodeSetup:
        """The setup from names, as options and suite keys give them: a price table is read when
        one is named or any cost is limited (an episode's or the campaign's), a budget is kept when
        the campaign has one."""
        from inquitree.core.game import TemplateSet
        from inquitree.core.players import RateLimiter, make_embedder

        costed = bool(limits.episode_cost_usd or budget_cost_usd)
        return cls(
            templates=TemplateSet(templates),
            embedder=make_embedder(embedder, base_url=embedder_base_url),
            spec=spec,
            limits=limits,
            prices=PriceTable(prices) if (prices or costed) else None,
            budget=Budget(budget_tokens, budget_cost_usd) if (budget_tokens or costed) else None,
            limiter=RateLimiter(requests_per_minute) if requests_per_minute else None,
        )

    @classmethod
    def of(cls, values: Mapping[str, Any], **more: Any) -> EpisodeSetup:
        """The setup of the episode options' values (``spec.episode_values``: what `play`, a suite
        and the inspect task were given), with :meth:`resolve`'s limits, prices, budget and rate."""
        return cls.resolve(
            templates=values["templates"],
            embedder=values["embedder"],
            embedder_base_url=values["embedder_base_url"],
            spec=spec_of(values),
            **more,
        )

    @property
    def costed(self) -> bool:
        """A cost is limited: the episode's, or the campaign's budget."""
        return bool(self.limits.episode_cost_usd or (self.budget is not None and self.budget.cost_usd))

    def params(self, tree: Tree, randomness: int = 0, seed: int = 0) -> Params:
        """The engine's parameters for one cell (tree, randomness level, seed), validated."""
        return self.spec.params(tree, self.embedder.id, self.templates, randomness, seed)

    def agent(
        self, spec: str, tree: Tree, seed: int, config: ModelConfig | None = None, label: str | None = None
    ) -> Agent:
        """The agent ``spec`` names for an episode of ``tree``; a model agent under a cost limit
        must have a price (:class:`LimitError` otherwise)."""
        from inquitree.core.players import make_agent, parse_spec

        model = parse_spec("agent", spec).model
        if self.prices is not None and self.costed and model is not None and not self.prices.has(model):
            raise LimitError(f"a cost limit is set but {self.prices.path} has no price for {model!r}")
        return make_agent(
            spec, tree, seed, self.templates.system_prompt, config, rate_limiter=self.limiter, label=label
        )

    def judge(self, spec: str, config: ModelConfig | None = None) -> Judge | None:
        """The judge ``spec`` names (``none``: the episode is not judged)."""
        from inquitree.core.players import make_judge

        return None if spec == "none" else make_judge(spec, self.embedder, config)

    def check(self, tree: Tree, randomness: int, seed: int, agents: Iterable[tuple[str, ModelConfig | None]]) -> None:
        """Everything that can be wrong before a cell runs, raised here: the match rule (one not
        fitted for this embedder), the specification, each agent's spec, key and price."""
        self.params(tree, randomness, seed)
        for spec, config in agents:
            self.agent(spec, tree, seed, config)


@dataclasses.dataclass(frozen=True)
class Recording:
    """Where an episode's events go: ``store`` (None: kept in memory only) under ``episode_id``
    (None: a new random id), each event also handed to ``on_event`` as it is recorded.
    ``resume``: an existing stream is continued (without it, an id already recorded is refused
    at the first append). ``new_stream``: the caller knows the stream does not exist (a campaign
    listed them), so nothing is read back."""

    store: EventStore | None = None
    episode_id: str | None = None
    on_event: Callable[[Event], None] | None = None
    resume: bool = False
    new_stream: bool = False


NOT_RECORDED = Recording()  # kept in memory only, under a new random id
