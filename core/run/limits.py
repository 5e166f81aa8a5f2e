"""Run limits: per episode (tokens, cost, wall time) and per campaign (a shared budget).

A limit is checked before every model call of an episode. Reaching one is an event
(``LimitReached``); the episode then ends with no conclusion items and is scored on what it
reached, so it is counted like any other episode, never dropped, and the queries can tell it
apart (``episodes.ended_by``).

- Episode tokens and cost count every agent call of the episode, cache hits included: they
  measure what the episode consumed, so a cached re-run ends where the first run ended.
- The campaign budget counts what was paid: calls actually made (agent and judge), cache hits
  excluded. When it is spent, episodes in flight end at their next call and cells not yet
  started are left for a later run.
- Episode wall time counts from the start of this run of the episode (a resumed episode
  starts a fresh clock).
- Cost needs a price for the model (``--prices FILE``, ``$INQUITREE_PRICES`` or the user's
  ``~/.config/inquitree/prices.json``; the shipped table is empty): a cost limit for a model
  without one is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.files import finite_number, read_file
from inquitree.core.calls import token_count

PRICES_PATH = Path(__file__).resolve().parents[2] / "trees" / "registry" / "prices.json"  # shipped: no prices
PRICES_ENV = "INQUITREE_PRICES"
MAX_PRICES_BYTES = 1_000_000  # a price table is a few kB
MAX_SERVES = 100_000  # requests a server answers at once; more would make an hour's price vanish per call
PRICE_FIELDS = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok", "cache_write_per_mtok", "usd_per_hour")


def user_prices_path() -> Path:
    """Where a user keeps their prices, outside the installed package:
    ``$XDG_CONFIG_HOME/inquitree/prices.json`` (``~/.config/inquitree/prices.json``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "inquitree" / "prices.json"


def prices_path(path: str | Path | None = None) -> Path:
    """The price table to read: ``path`` (``--prices``), else ``$INQUITREE_PRICES``, else the user's
    (:func:`user_prices_path`) when there is one, else the shipped table (empty)."""
    if path:
        return Path(path)
    if os.environ.get(PRICES_ENV):
        return Path(os.environ[PRICES_ENV])
    user = user_prices_path()
    return user if user.is_file() else PRICES_PATH


class LimitError(InquiTreeError):
    pass


# Parts of a usage that other parts already hold: the total, and a reasoning model's thinking
# (inside ``output``, as endpoints count it).
_INSIDE_OTHERS = ("total", "reasoning")


def tokens_of(usage: dict[str, Any]) -> int:
    """The tokens of one call's usage, each counted once (a stream without usage: its chunks); a
    count that cannot be one (negative, absurd: a hostile cache's) counts as unreported."""
    return sum(token_count(v) or 0 for k, v in usage.items() if k not in _INSIDE_OTHERS)


class PriceTable:
    """Prices by model (case-insensitive), from the price file: USD per million tokens, as a
    provider charges, or USD per hour of the server a lab runs itself (``usd_per_hour``: the whole
    machine, all its GPUs). An hourly price charges each call its seconds, shared among the
    requests the server answers at once (``serves``, 1 unless given): a campaign that keeps the
    server busy with ``serves`` requests (``-j``) adds up to the server's wall time (DECISIONS
    #31)."""

    def __init__(self, path: str | Path | None = None):
        self.path = prices_path(path)
        try:
            doc = json.loads(read_file(self.path, MAX_PRICES_BYTES, what="price table"), parse_int=finite_number)
            rows = doc["prices"] if isinstance(doc, dict) else None
            if not isinstance(rows, list):
                raise ValueError("'prices' must be a list of entries")
            self.prices: dict[str, dict[str, Any]] = {}
            for r in rows:
                for name in _checked(r):  # the model and its aliases (the dated names an endpoint answers with)
                    if name in self.prices:
                        raise ValueError(f"{name!r} is priced twice")
                    self.prices[name] = r
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LimitError(
                f"{self.path}: not a price table ({exc}); see trees/registry/prices.json for the format"
            ) from None

    def has(self, model: str) -> bool:
        return model.lower() in self.prices

    def hourly(self, model: str) -> bool:
        """The model is priced by the hour (a call without a duration has no price)."""
        return "usd_per_hour" in self.prices.get(model.lower(), {})

    def cost(self, model: str | None, usage: dict[str, Any], seconds: float | None = None) -> float | None:
        """USD of one call: its tokens at the model's token prices, or its ``seconds`` at the
        model's hourly price; None without a price (or, hourly, without its duration)."""
        p = self.prices.get((model or "").lower())
        if p is None:
            return None
        if "usd_per_hour" in p:
            if seconds is None:
                return None
            return seconds * float(p["usd_per_hour"]) / 3600 / float(p.get("serves", 1))

        def n(key: str) -> int:
            return token_count(usage.get(key)) or 0

        inp = p["input_per_mtok"]
        return (
            n("input") * inp
            + n("cached_input") * (p.get("cached_input_per_mtok") or inp)
            + n("cache_write") * (p.get("cache_write_per_mtok") or inp)
            + n("output") * p["output_per_mtok"]
        ) / 1e6


def _checked(entry: Any) -> list[str]:
    """An entry's model name and its ``aliases`` (lower case), once every price in it is a finite number >= 0 and
    ``serves`` a whole number from 1 to ``MAX_SERVES``: NaN, a negative price or an infinite ``serves`` would
    make every call cost nothing and silently disable a cost limit; a price given as text would
    end an episode in a TypeError at its first call."""
    if not isinstance(entry, dict) or not isinstance(entry.get("model"), str) or not entry["model"]:
        raise ValueError(f"an entry {str(entry)[:60]!r} has no model name")
    model = entry["model"]
    needed = ("usd_per_hour",) if "usd_per_hour" in entry else ("input_per_mtok", "output_per_mtok")
    for key in PRICE_FIELDS:
        if key not in entry or (entry[key] is None and key not in needed):
            if key in needed:
                raise ValueError(f"{model}: {key} is missing")
            continue
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{model}: {key} is {value!r}, not a finite number >= 0")
    serves = entry.get("serves", 1)
    if isinstance(serves, bool) or not isinstance(serves, (int, float)) or not math.isfinite(serves):
        raise ValueError(f"{model}: serves is {serves!r}, not a whole number from 1 to {MAX_SERVES:,}")
    if not 1 <= serves <= MAX_SERVES or serves != int(serves):
        raise ValueError(f"{model}: serves is {serves!r}, not a whole number from 1 to {MAX_SERVES:,}")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise ValueError(f"{model}: aliases must be a list of model names")
    return [model.lower(), *(a.lower() for a in aliases)]


@dataclasses.dataclass(frozen=True)
class Limits:
    """Per-episode limits; None: no limit."""

    episode_tokens: int | None = None
    episode_cost_usd: float | None = None
    episode_seconds: float | None = None

    def __post_init__(self) -> None:
        for name, value in vars(self).items():  # flat: asdict's deep copy was per-episode work
            if value is not None and not value > 0:
                raise LimitError(f"{name.replace('_', '-')} {value}: a limit must be more than 0")

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


class Budget:
    """A campaign's budget, shared by every episode in flight (thread-safe)."""

    def __init__(self, tokens: int | None = None, cost_usd: float | None = None):
        self.tokens, self.cost_usd = tokens, cost_usd
        self.used_tokens, self.used_cost = 0, 0.0
        self._lock = threading.Lock()

    def add(self, tokens: int, cost: float | None) -> None:
        with self._lock:
            self.used_tokens += tokens
            self.used_cost += cost or 0.0

    def spent(self) -> tuple[str, float, float] | None:
        """(limit, threshold, used) of the first exhausted budget, or None."""
        with self._lock:
            if self.tokens is not None and self.used_tokens >= self.tokens:
                return "campaign_tokens", float(self.tokens), float(self.used_tokens)
            if self.cost_usd is not None and self.used_cost >= self.cost_usd:
                return "campaign_cost_usd", self.cost_usd, round(self.used_cost, 6)
        return None
