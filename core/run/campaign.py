"""Evaluation campaigns: the grid of a suite file, run with many episodes in flight.

A suite (TOML) names trees, agents, judges, randomness levels and runs. Each grid
cell's episode id is derived from the cell, so a campaign is idempotent:
re-running it skips finished episodes (found with one query), continues
interrupted ones from their last recorded event (the runner's ``resume``), and
never duplicates one, even when several processes work on the same store at
once (the store's optimistic concurrency decides who records a cell; the other
moves on). ``--shard I/N`` splits the grid between machines sharing a
PostgreSQL store.

Example suite::

    name = "pilot"
    trees = ["synthetic-chain-7", "synthetic-diamond-4"]
    agents = ["random", "oracle", "openai:my-model"]
    judges = ["embedding"]
    randomness = [0, 3, 6]
    runs = 3
    seed = 0                # run r of every cell uses seed + r
    embedder = "local"
    concurrency = 8
    base_url = "http://127.0.0.1:8000/v1"   # for openai:* agents (key: $OPENAI_API_KEY)

An agent may also be a table, for one model run with request options under its own label:
``agents = ["random", {agent = "openai:gpt-5", options = {reasoning_effort = "high"}, label = "gpt-5@high"}]``.
Every key of a suite and of an agent table is declared once, in :data:`SUITE_KEYS` and
:data:`AGENT_KEYS`, the options an episode is played with among them as ``spec.EPISODE_OPTIONS``
declares them (docs/suite-keys.md is made from them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import secrets
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.files import read_file
from inquitree.boundary.text import shown, warn
from inquitree.core.calls import CallSettings, openai_endpoint, option_label, redact_url
from inquitree.core.game import Tree, is_shipped, resolve_tree
from inquitree.core.players import ModelConfig, parse_spec
from inquitree.core.run.cells import (
    ENDED,
    HEARTBEAT_SECONDS,
    STATE_EVENTS,
    CellFold,
    endpoint_label,
    fold_cell,
    recorded_cells,
    share_done,
)
from inquitree.core.run.limits import Limits, tokens_of
from inquitree.core.run.runner import EpisodeFailure, EpisodeStopped, run_episode, stream_id
from inquitree.core.run.setup import EpisodeSetup, Recording
from inquitree.core.run.spec import EPISODE_OPTIONS, EpisodeSpec, OptionError, episode_values, spec_of
from inquitree.events import (
    AgentReplied,
    CampaignAlive,
    CampaignEnded,
    CampaignStarted,
    Cell,
    ConcurrencyError,
    EpisodeScored,
    Event,
    EventStore,
    campaign_stream,
    grid,
)

if TYPE_CHECKING:  # the statistics (NumPy) are imported where scores are summarised
    from inquitree import stats

# Every key a suite file may have: its type and what it sets, said once. The checks, the error
# that lists the known keys and docs/suite-keys.md (suite_keys_markdown) are made from this table;
# a default is the Suite field's.
SUITE_KEYS: dict[str, tuple[type, str]] = {
    "name": (str, "the campaign's name: every cell's episode id starts with it (letters, digits and ._-)"),
    "trees": (list, "tree ids (shipped) or tree files"),
    "agents": (list, "agent specs, or tables with an `agent` key and the agent keys below"),
    "judges": (list, "judge specs: embedding, openai:MODEL, rubric:MODEL, hybrid:MODEL"),
    "randomness": (list, "levels a, 0..10: fake results with probability 10a%"),
    "runs": (int, "runs of every cell; run r uses seed + r"),
    "seed": (int, "the first run's seed"),
    **{o.name: (o.kind, o.what) for o in EPISODE_OPTIONS},  # what an episode is played with (spec.py)
    "concurrency": (int, "episodes in flight (`suite run -j` overrides it)"),
    "base_url": (str, "the OpenAI-compatible endpoint of openai:* agents"),
    "judge_base_url": (str, "the endpoint of model judges"),
    "retries": (int, "attempts again of a cell that failed for a reason that may pass"),
    "requests_per_minute": (float, "agent calls a minute, across every episode in flight"),
    "timeout": (float, "seconds an endpoint may stay silent (before and between a stream's tokens)"),
    "max_retries": (int, "retries of one call that failed for a reason that may pass"),
    "max_tokens": (int, "the longest agent reply, in tokens"),
    "window": (int, "turns of history an agent keeps beside the system prompt (default: all)"),
    "history_tokens": (int, "the most tokens (estimated) of the prompt an agent sends; the oldest turns go first"),
    "max_reply_chars": (int, "a longer reply is cut here, and the cut recorded"),
    "stream": (bool, "ask for answers as a stream"),
    "call_limit": (float, "seconds a streamed answer may keep arriving; then it is kept as far as it got"),
    "system_role": (str, "where the system prompt goes: auto, system or user"),
    "judge_options": (dict, "request options of the judge's calls"),
    "judge_max_tokens": (int, "the longest judge reply, in tokens"),
    "call_cache": (str, "a SQLite file of earlier answers to identical calls, reused and kept"),
    "episode_tokens": (int, "end an episode before the call after its agent calls used this many tokens"),
    "episode_cost_usd": (float, "end an episode once its agent calls cost this much (needs prices)"),
    "episode_seconds": (float, "end an episode after this much wall time"),
    "budget_tokens": (int, "the campaign's token budget: no cell starts once it is spent"),
    "budget_cost_usd": (float, "the campaign's budget in USD (needs prices)"),
    "prices": (str, "the price table (USD per million tokens, or per hour of a server)"),
}
# The keys of an agent given as a table: a model run with its own options, label and call settings.
AGENT_KEYS: dict[str, tuple[type, str]] = {
    "agent": (str, "the agent's spec"),
    "label": (str, "its name in every table (default: the model, with its options)"),
    "options": (dict, "request options of its calls (reasoning_effort, top_p, extra_headers, ...)"),
    "window": (int, "as the suite's window, for this agent"),
    "history_tokens": (int, "as the suite's history_tokens, for this agent"),
    "max_tokens": (int, "as the suite's max_tokens, for this agent"),
    "timeout": (float, "as the suite's timeout, for this agent"),
    "max_retries": (int, "as the suite's max_retries, for this agent"),
    "call_limit": (float, "as the suite's call_limit, for this agent"),
    "system_role": (str, "as the suite's system_role, for this agent"),
}
_EPISODE_KEYS = frozenset(o.name for o in EPISODE_OPTIONS)
_FIELDS = {key: kind for key, (kind, _) in SUITE_KEYS.items()}
_AGENT_FIELDS = {key: kind for key, (kind, _) in AGENT_KEYS.items()}


def suite_keys_markdown() -> str:
    """docs/suite-keys.md's tables: every key of a suite file and of an agent table, with its type,
    default and meaning (a test holds the page to them)."""
    defaults = {f.name: f.default for f in dataclasses.fields(Suite) if f.default is not dataclasses.MISSING}
    for f in dataclasses.fields(Suite):
        if f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    defaults.update(defaults.pop("episode"))

    def shown_default(key: str) -> str:
        if key not in defaults:
            return "required"
        value = defaults[key]
        return "none" if value is None else f"`{json.dumps(value)}`"

    lines = ["| key | type | default | what it sets |", "|---|---|---|---|"]
    lines += [
        f"| `{key}` | {kind.__name__} | {shown_default(key)} | {what} |" for key, (kind, what) in SUITE_KEYS.items()
    ]
    lines += ["", "| agent key | type | what it sets |", "|---|---|---|"]
    lines += [f"| `{key}` | {kind.__name__} | {what} |" for key, (kind, what) in AGENT_KEYS.items()]
    return "\n".join(lines) + "\n"


SHIPPED_SUITES = Path(__file__).resolve().parents[2] / "suites"


def find_suite(name: str | Path) -> Path:
    """A suite file: ``name`` as a path when it exists, else a shipped suite by name
    (``quickstart`` or ``quickstart.toml`` is ``suites/quickstart.toml`` of the package)."""
    path = Path(name)
    if path.exists() or path.parent != Path("."):
        return path
    shipped = SHIPPED_SUITES / (path.name if path.suffix == ".toml" else f"{path.name}.toml")
    return shipped if shipped.exists() else path


MAX_CELLS = 200_000  # far above any campaign run here; a typo (runs = 1000000000) is refused before anything


def check_suite_trust(suite: "Suite", path: Path, file_agents: list) -> None:
    """Refuse what a suite written by someone else could do with the user's rights: read or write
    files outside its own folder and the current directory, or send $OPENAI_API_KEY to an endpoint
    the user did not choose. ``--trust-suite`` lifts both; a path or URL the user passes on the
    command line is never questioned."""
    import os

    allowed = [path.resolve().parent, Path.cwd().resolve()]
    named: list[tuple[str, str]] = []
    for a in file_agents:
        spec = a if isinstance(a, str) else a.get("agent", "") if isinstance(a, dict) else ""
        parsed = parse_spec("agent", spec) if isinstance(spec, str) and spec else None
        if parsed is not None and parsed.kind.names_file and parsed.argument:
            named.append(("agents", parsed.argument))
    if not is_shipped(suite.episode["templates"]):  # a folder, not a shipped set
        named.append(("templates", suite.episode["templates"]))
    named += [(key, getattr(suite, key)) for key in ("call_cache", "prices") if getattr(suite, key)]
    named += [("trees", t) for t in suite.trees if "/" in t or "\\" in t or t.endswith(".json")]
    for key, name in named:
        where = Path(name).expanduser().resolve()  # after following every link
        if not any(where == root or where.is_relative_to(root) for root in allowed):
            raise SuiteError(
                f"{path}: {key} names {shown(name)}, outside the suite's folder ({allowed[0]}) and the current "
                "directory: a suite may only use files beside it. Pass --trust-suite if you wrote this suite"
            )
    key_set = bool(os.environ.get("OPENAI_API_KEY"))
    env_url = os.environ.get("OPENAI_BASE_URL")
    for key in ("base_url", "judge_base_url", "embedder_base_url"):
        url = suite.value(key)
        if url and key_set and url.rstrip("/") != (env_url or "").rstrip("/"):
            raise SuiteError(
                f"{path}: {key} = {shown(redact_url(url))} would receive your $OPENAI_API_KEY, and the suite, not you, "
                "chose that endpoint. Pass --trust-suite if you trust it, set OPENAI_BASE_URL to it, or unset "
                "OPENAI_API_KEY for a local server (it takes any key)"
            )


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    """One agent of a suite: its spec, and for model agents the label and call settings."""

    spec: str
    label: str
    config: ModelConfig | None = None


class SuiteError(InquiTreeError):
    pass


@dataclasses.dataclass(slots=True)  # a name that is no field (an episode option: suite.episode) is refused
class Suite:
    name: str
    trees: list[str]
    agents: list[str]
    judges: list[str] = dataclasses.field(default_factory=lambda: ["embedding"])
    randomness: list[int] = dataclasses.field(default_factory=lambda: [0])
    runs: int = 1
    seed: int = 0
    concurrency: int = 4
    base_url: str | None = None
    judge_base_url: str | None = None
    retries: int = 1
    requests_per_minute: float | None = None  # agent calls, across every episode in flight
    timeout: float = CallSettings.timeout
    max_retries: int = CallSettings.max_retries
    max_tokens: int | None = 1024
    window: int | None = None
    history_tokens: int | None = None
    max_reply_chars: int = CallSettings.max_reply_chars
    stream: bool = CallSettings.stream
    call_limit: float = CallSettings.call_limit
    system_role: str = CallSettings.system_role
    judge_options: dict = dataclasses.field(default_factory=dict)
    judge_max_tokens: int | None = 512
    call_cache: str | None = None
    episode_tokens: int | None = None
    episode_cost_usd: float | None = None
    episode_seconds: float | None = None
    budget_tokens: int | None = None
    budget_cost_usd: float | None = None
    prices: str | None = None
    episode: dict[str, Any] = dataclasses.field(default_factory=lambda: episode_values({}))  # spec.EPISODE_OPTIONS
    source: str = ""
    entries: dict[str, AgentEntry] = dataclasses.field(default_factory=dict)  # label -> entry

    @classmethod
    def load(  # noqa: C901 - one check a key of the file, each naming it
        cls, path: str | Path, agents: list[str] | tuple[str, ...] = (), trusted: bool = False
    ) -> "Suite":
        """The suite in ``path``; ``agents`` (``suite run --agent``), when given, replace its agents
        (a suite such as suites/fig3-protocol.toml leaves them to the user).

        A suite may have been written by someone else, so unless ``trusted`` (``--trust-suite``) the
        files it names (``script:`` agents, ``templates``, ``call_cache``, ``prices``) must lie in its
        own folder or the current directory, and its endpoints (``base_url``, ...) may not receive
        $OPENAI_API_KEY unless they are $OPENAI_BASE_URL (see :func:`check_suite_trust`)."""
        path = find_suite(path)
        if not path.exists():
            shipped = ", ".join(sorted(p.stem for p in SHIPPED_SUITES.glob("*.toml")))
            raise SuiteError(f"{path}: no such suite file (shipped suites, by name: {shipped})")
        try:  # one read of a regular file, to MAX_SUITE_BYTES
            doc = tomllib.loads(read_file(path, MAX_SUITE_BYTES, what="the suite file").decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SuiteError(f"{path}: not valid TOML: {exc}") from None
        for key, value in doc.items():
            if key not in _FIELDS:
                raise SuiteError(f"{path}: unknown key {key!r} (known: {', '.join(sorted(_FIELDS))})")
            if key in _EPISODE_KEYS:
                continue  # checked by its declaration below
            want = _FIELDS[key]
            if not isinstance(value, want) and not (want is float and isinstance(value, int)):
                raise SuiteError(f"{path}: {key} = {value!r}: expected {want.__name__}")
        if agents:
            doc["agents"] = list(agents)
        for key in ("name", "trees", "agents"):
            if key not in doc:
                raise SuiteError(f"{path}: missing {key!r}")
        raw_agents = doc.pop("agents")
        if not raw_agents:
            raise SuiteError(f"{path}: no agents: list them in the file, or name them with --agent")
        try:
            episode = episode_values({k: doc.pop(k) for k in list(doc) if k in _EPISODE_KEYS}, f"{path}: ")
        except OptionError as exc:
            raise SuiteError(str(exc)) from None
        suite = cls(**doc, agents=[], episode=episode, source=str(path))
        templates = episode["templates"]
        if not is_shipped(templates) and not Path(templates).expanduser().is_absolute():
            # a suite's own template folder sits beside it, wherever the command runs from
            episode["templates"] = str(path.parent / templates)
        try:
            for a in raw_agents:
                entry = suite._entry(a, path)
                if entry.label in suite.entries:
                    raise SuiteError(f"{path}: two agents are labelled {entry.label!r}: give one a `label`")
                suite.entries[entry.label] = entry
                suite.agents.append(entry.label)
        except InquiTreeError as exc:
            raise SuiteError(str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}") from None
        for j in suite.judges:  # a wrong judge spec stops the suite before any store is made
            try:
                parse_spec("judge", str(j))
            except InquiTreeError as exc:
                raise SuiteError(f"{path}: judges: {exc}") from None
        for a in suite.randomness:
            if not isinstance(a, int) or not 0 <= a <= 10:
                raise SuiteError(f"{path}: randomness {a!r}: levels are integers 0..10")
        if suite.runs < 1 or suite.concurrency < 1:
            raise SuiteError(f"{path}: runs and concurrency must be at least 1")
        size = len(suite.trees) * len(suite.agents) * max(1, len(suite.judges)) * len(suite.randomness) * suite.runs
        if size > MAX_CELLS:
            raise SuiteError(
                f"{path}: the grid has {size:,} cells (trees x agents x judges x levels x runs), more than a campaign "
                f"may have ({MAX_CELLS:,}); split it into several suites"
            )
        if not trusted:
            check_suite_trust(suite, path, [a for a in raw_agents if not agents])
        return suite

    def _entry(self, a, path: Path) -> AgentEntry:
        if isinstance(a, str):
            a = {"agent": a}
        if not isinstance(a, dict) or "agent" not in a:
            raise SuiteError(f"{path}: agents: {a!r}: expected a spec string or a table with an `agent` key")
        for key, value in a.items():
            want = _AGENT_FIELDS.get(key)
            if want is None:
                raise SuiteError(
                    f"{path}: agent {a['agent']!r}: unknown key {key!r} (known: {', '.join(_AGENT_FIELDS)})"
                )
            if not isinstance(value, want) and not (want is float and isinstance(value, int)):
                raise SuiteError(f"{path}: agent {a['agent']!r}: {key} = {value!r}: expected {want.__name__}")
        spec = a["agent"]
        parsed = parse_spec("agent", spec)
        if not parsed.kind.needs_model:
            if set(a) - {"agent", "label"}:
                raise SuiteError(f"{path}: agent {spec!r}: options and call settings apply to openai:MODEL agents only")
            return AgentEntry(spec, str(a.get("label", spec)))
        settings = CallSettings(
            timeout=a.get("timeout", self.timeout),
            max_retries=a.get("max_retries", self.max_retries),
            max_tokens=a.get("max_tokens", self.max_tokens),
            max_reply_chars=self.max_reply_chars,
            options=a.get("options", {}),
            stream=self.stream,
            call_limit=a.get("call_limit", self.call_limit),
            system_role=a.get("system_role", self.system_role),
        )
        label = a.get("label") or option_label(parsed.argument or "", settings.options)
        config = ModelConfig(
            self.base_url,
            settings,
            a.get("window", self.window),
            label,
            self.call_cache,
            a.get("history_tokens", self.history_tokens),
        )
        return AgentEntry(spec, f"{parsed.kind.name}:{label}" if "label" not in a else label, config)

    def judge_config(self) -> ModelConfig:
        return ModelConfig(
            self.judge_base_url,
            CallSettings(
                timeout=self.timeout,
                max_retries=self.max_retries,
                max_tokens=self.judge_max_tokens,
                max_reply_chars=self.max_reply_chars,
                options=self.judge_options,
                stream=self.stream,
                call_limit=self.call_limit,
                system_role=self.system_role,
            ),
            call_cache=self.call_cache,
        )

    def spec(self) -> EpisodeSpec:
        return spec_of(self.episode)

    def value(self, key: str) -> Any:
        """The value of the suite key ``key``: an episode option's, or the suite's own."""
        return self.episode[key] if key in _EPISODE_KEYS else getattr(self, key)

    def limits(self) -> Limits:
        return Limits(self.episode_tokens, self.episode_cost_usd, self.episode_seconds)

    def cells(self) -> list[Cell]:
        return grid(self.trees, self.agents, self.judges, self.randomness, self.runs)


@dataclasses.dataclass
class CampaignReport:
    cells: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    taken_elsewhere: int = 0
    not_started: int = 0  # left for a later run: the campaign budget was spent, or it was stopped
    stopped: int = 0  # begun and left at a step boundary when the campaign was stopped (resumable)
    tokens: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    halted: str | None = None  # why the run stopped itself: every cell failed the same way (SameFailures)
    halted_agents: list[str] = dataclasses.field(default_factory=list)  # the agents whose cells it left
    # finished cells kept although they were played against another endpoint than this run's (reused_elsewhere)
    reused_elsewhere: list[str] = dataclasses.field(default_factory=list)
    chunks_counted: bool = False  # some tokens are streamed chunks: the endpoint reported no usage
    # the share of their work the cells in flight have done (:meth:`_CampaignRun.in_flight`), for
    # the time-left estimate; None where nothing is in flight to be read
    in_flight: Callable[[], float] | None = dataclasses.field(default=None, repr=False, compare=False)


# Failures that say the endpoint cannot be used at all (nothing listens, the key is refused, no such
# model): when the first cells of a run all end in one of these, of one kind, and none has
# succeeded, the rest would fail the same way, one by one, each after its retries. So does any
# failure that no retry mends (a reply that spends its whole budget on reasoning, a request the
# endpoint refuses), when the first cells all end in it.
SYSTEMIC_KINDS = frozenset({"connection", "auth", "not_found"})
HALT_AFTER = 3
MAX_SUITE_BYTES = 1_000_000  # a suite file is a few hundred bytes


class SameFailures:
    """Watches a run's cells, agent by agent: once an agent's first ``HALT_AFTER`` failures are of
    one kind that is systemic or not transient, with none of its cells done, its cells not reached
    are left (not started, resumable), whatever the other agents do: a baseline's cells succeed
    first in every mixed campaign, and the model's would otherwise all fail one by one. Once every
    agent that failed so is stopped and no other has cells left, or every agent is, the run stops."""

    def __init__(self, stop: threading.Event, agents: int = 1):
        self.stop = stop
        self.agents = agents  # how many agents the run plays: when all are halted, the run stops
        self.kinds: dict[Any, list[tuple[str | None, bool]]] = {}  # each agent's failures: (kind, retryable)
        self.done: dict[Any, int] = {}
        self.reasons: dict[Any, str] = {}  # why each halted agent stopped
        self._lock = threading.Lock()

    @property
    def reason(self) -> str | None:
        """Why the run (or some of its agents) stopped itself; None while nothing did."""
        if not self.reasons:
            return None
        if len(self.reasons) == 1 and self.agents == 1:
            return next(iter(self.reasons.values()))
        return "; ".join(f"{agent}: {why}" for agent, why in self.reasons.items())

    def halted(self, agent: Any = None) -> bool:
        return agent in self.reasons

    def succeeded(self, agent: Any = None) -> None:
        with self._lock:
            self.done[agent] = self.done.get(agent, 0) + 1

    def failed(self, kind: str | None, message: str, retryable: bool = True, agent: Any = None) -> None:
        with self._lock:
            kinds = self.kinds.setdefault(agent, [])
            kinds.append((kind, retryable))
            first = kinds[:HALT_AFTER]
            if (
                agent not in self.reasons
                and not self.done.get(agent)
                and len(first) == HALT_AFTER
                and len({k for k, _ in first}) == 1
                and first[0][0] is not None
                and (first[0][0] in SYSTEMIC_KINDS or not any(r for _, r in first))
            ):
                self.reasons[agent] = f"[{kind}] {message}"
                if len(self.reasons) >= self.agents:
                    self.stop.set()


@dataclasses.dataclass(frozen=True)
class AgentScore:
    """One agent's conclusion score in a campaign, under one judge at one randomness level."""

    agent: str
    judge: str
    randomness: int
    interval: stats.Interval
    unscored: int  # finished episodes whose judge gave no usable verdict on some item


def campaign_scores(suite: Suite, store: EventStore) -> list[AgentScore]:
    """Each agent's conclusion score (q_norm) at the suite's lowest randomness level, per judge:
    the mean over papers of per-paper means with its 95% interval (``stats.mean_interval``, the
    method of ``table2_leaderboard``), from the score each finished cell recorded under its own
    judge; best first. What ``suite run`` ends with; the warehouse's tables say more."""
    level = min(suite.randomness)
    cells = {stream_id(c.episode_id(suite.name)): c for c in suite.cells() if c.randomness == level}
    found = store.read_streams(list(cells), ["EpisodeScored"])
    values: dict[tuple[str, str], tuple[list[str], list[float], list[int]]] = {}
    for sid, recorded in found.items():
        if not recorded:
            continue
        cell, scored = cells[sid], recorded[0].event  # the first score is the cell's own judge's
        papers, qs, unscored = values.setdefault((cell.agent, cell.judge), ([], [], [0]))
        if not isinstance(scored, EpisodeScored) or scored.q_norm is None:
            unscored[0] += 1
        else:
            papers.append(cell.tree)
            qs.append(float(scored.q_norm))
    from inquitree import stats  # NumPy: for the scores, not when a suite is read

    rows = [
        AgentScore(agent, judge, level, stats.mean_interval(papers, qs, bounds=(0, 1)), unscored[0])
        for (agent, judge), (papers, qs, unscored) in values.items()
    ]
    return sorted(
        rows, key=lambda r: (r.judge, -(r.interval.estimate if r.interval.estimate is not None else -1), r.agent)
    )


def parse_shard(text: str | None) -> tuple[int, int]:
    if not text:
        return 1, 1
    m = re.fullmatch(r"(\d+)/(\d+)", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise SuiteError(f"--shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return int(m.group(1)), int(m.group(2))


@dataclasses.dataclass(frozen=True)
class CampaignSetup:
    """What every cell of a campaign shares, made once before any cell runs: the episode setup,
    the trees and the judges. A malformed tree, a wrong agent spec, a missing key or a cost limit
    without a price stops the campaign here."""

    episode: EpisodeSetup
    trees: dict[str, Tree]
    judges: dict[str, Any]


def set_up(suite: Suite) -> CampaignSetup:
    """What every cell shares, checked: a missing key or a wrong spec raises here, before a store is made."""
    episode = EpisodeSetup.of(
        suite.episode,
        limits=suite.limits(),
        prices=suite.prices,
        budget_tokens=suite.budget_tokens,
        budget_cost_usd=suite.budget_cost_usd,
        requests_per_minute=suite.requests_per_minute,
    )
    trees: dict[str, Tree] = {t: resolve_tree(t) for t in suite.trees}
    judge_config = suite.judge_config()
    judges = {j: episode.judge(j, judge_config) for j in suite.judges}
    try:  # a wrong match rule or agent, a missing key or price, stops here, not in every cell
        episode.check(
            trees[suite.trees[0]],
            suite.randomness[0],
            suite.seed,
            [(entry.spec, entry.config) for entry in suite.entries.values()],
        )
    except InquiTreeError as exc:
        raise SuiteError(f"{suite.source}: {exc}") from None
    return CampaignSetup(episode, trees, judges)


def reused_elsewhere(
    suite: Suite, setup: CampaignSetup, recorded: dict, cells: list[Cell], store: EventStore
) -> list[str]:
    """What a run says of the finished cells it keeps that were played against another endpoint
    or model than its own agent's or judge's (a new checkpoint served under the model's name): one
    line for each, with what the first replies of three of them came from (model name and
    fingerprint), and the way to play them as new cells."""
    now: dict[tuple[str, str], str | None] = {}
    for label, entry in suite.entries.items():
        if entry.config is not None:
            model = parse_spec("agent", entry.spec).argument
            url = redact_url(openai_endpoint(entry.config.base_url, None)[0])
            now["agent", label] = endpoint_label({"model": model, "base_url": url})
    for name, judge in setup.judges.items():
        now["judge", name] = endpoint_label(getattr(judge, "description", None) or {})
    found: dict[tuple[str, str, str, str], list[str]] = {}
    for cell in cells:
        fold = recorded.get(eid := cell.episode_id(suite.name))
        if fold is None or fold.state not in ENDED:
            continue
        for who, name, was in (("agent", cell.agent, fold.agent_endpoint), ("judge", cell.judge, fold.judge_endpoint)):
            is_now = now.get((who, name))
            if was is not None and is_now is not None and was != is_now:
                found.setdefault((who, name, was, is_now), []).append(eid)
    lines = []
    for (who, name, was, is_now), eids in found.items():
        answered, how = "", "give the suite another name"
        if who == "agent":  # the replies of a few of them: a cell's state is folded without them
            folds: dict[str, CellFold] = {}
            for records in store.read_streams([stream_id(e) for e in eids[:3]], ["AgentReplied"]).values():
                for r in records[:1]:
                    fold_cell(folds, r)
            said = sorted({f.answered for f in folds.values() if f.answered})
            answered = f" (its replies came from {'; '.join(said)})" if said else ""
            spec = suite.entries[name].spec
            new = f"{parse_spec('agent', spec).argument}-new"
            how = f'give it its own label ({{agent = "{spec}", label = "{new}"}} in the suite)'
        lines.append(
            f"{len(eids)} finished cell(s) of {who} {name} were played against {was}{answered}, not {is_now} as "
            f"this run's: they are kept and not played again, and the tables would mix the two. To play them "
            f"against {is_now} as new cells, {how}."
        )
    return lines


class _CampaignRun:
    """One run of a campaign's shard: the cells it has to play, each played and retried by
    :meth:`attempt`, counted by :meth:`tally`, all of them in a pool of threads by :meth:`play`."""

    def __init__(
        self,
        suite: Suite,
        store: EventStore,
        shard: tuple[int, int],
        stop: threading.Event,
        setup: CampaignSetup | None,
    ):
        self.suite, self.store, self.stop = suite, store, stop
        self.setup = setup or set_up(suite)
        index, count = shard
        self.mine = [c for k, c in enumerate(suite.cells()) if k % count == index - 1]
        # The cells' states as `suite status` and the viewer tell them: an ended one is skipped, any
        # other played or continued from where its events end.
        recorded = recorded_cells(store, suite.name, STATE_EVENTS)
        self.todo = [
            (c, eid)
            for c in self.mine
            if (f := recorded.get(eid := c.episode_id(suite.name))) is None or f.state not in ENDED
        ]
        # Streams that exist now: an episode whose stream did not is started without reading it back
        # (an empty read per episode was a tenth of `suite run`'s CPU, bench/engine.py). Should another
        # worker start it meanwhile, the first append finds the stream taken, as a read would have.
        self.started = {stream_id(eid) for eid in recorded}
        self.report = CampaignReport(
            cells=len(self.mine),
            skipped=len(self.mine) - len(self.todo),
            reused_elsewhere=reused_elsewhere(suite, self.setup, recorded, self.mine, store),
        )
        self.same = SameFailures(stop, agents=len({c.agent for c, _ in self.todo}) or 1)
        self.lock = threading.Lock()
        # each episode in flight: (the step it reached, the steps it may take at most), and the
        # steps each ended one took as a share of its most: what in_flight reads
        self.flying: dict[str, tuple[int, int]] = {}
        self.took: list[float] = []
        self.report.in_flight = self.in_flight

    def in_flight(self) -> float:
        """The share of their work the episodes in flight have done, summed: each expected to take
        its most steps (the tree's upper bound or the turn limit) scaled by the share of it the
        ended ones took (:func:`share_done`)."""
        scale = sum(self.took) / len(self.took) if self.took else 1.0
        return sum(share_done(step, most * scale) for step, most in list(self.flying.values()))

    def _flying(self, eid: str, most: int) -> Callable[[Event], None]:
        def seen(ev: Event) -> None:
            if isinstance(ev, AgentReplied):
                self.flying[eid] = (ev.step, most)

        return seen

    def _landed(self, eid: str, done: bool) -> None:
        step, most = self.flying.pop(eid, (0, 0))
        if done and most:
            self.took.append(step / most)

    def _who(self, cell: Cell) -> str:
        """The agent of ``cell`` as the campaign's tables name it (its label, else its spec)."""
        entry = self.suite.entries[cell.agent]
        return entry.label or entry.spec

    def remaining(self) -> int:
        r = self.report
        return len(self.mine) - r.skipped - r.done - r.failed - r.taken_elsewhere - r.not_started - r.stopped

    def one(self, cell: Cell, eid: str) -> tuple[str, int]:
        """A cell's outcome and the tokens it spent; whatever it raises is its outcome, never the campaign's."""
        try:
            return self.attempt(cell, eid)
        except ConcurrencyError:
            return "taken", 0  # another worker or process is recording this cell
        except EpisodeStopped:
            return "stopped", 0
        except InquiTreeError as exc:
            return f"failed: {eid}: {exc}", 0
        except Exception as exc:  # one cell's failure never ends the campaign
            return f"failed: {eid}: {type(exc).__name__}: {exc}", 0

    def attempt(self, cell: Cell, eid: str) -> tuple[str, int]:
        """Play the cell (resuming what was recorded), with the suite's retries of a retryable failure."""
        suite, store, setup = self.suite, self.store, self.setup.episode
        if (
            self.stop.is_set()
            or self.same.halted(self._who(cell))
            or (setup.budget is not None and setup.budget.spent() and not store.current_version(stream_id(eid)))
        ):
            return "not started", 0
        tree = self.setup.trees[cell.tree]
        seed = suite.seed + cell.run
        params = setup.params(tree, cell.randomness, seed)
        entry = suite.entries[cell.agent]
        most = min(tree.bounds(params.max_hints)[1], params.max_turns)
        for attempt in range(suite.retries + 1):
            agent = setup.agent(entry.spec, tree, seed, entry.config, entry.label)
            new_stream = attempt == 0 and stream_id(eid) not in self.started
            try:
                out = run_episode(
                    setup,
                    tree,
                    params,
                    agent,
                    self.setup.judges[cell.judge],
                    Recording(store, eid, self._flying(eid, most), resume=True, new_stream=new_stream),
                    self.stop,
                )
            except EpisodeFailure as exc:
                if exc.retryable and attempt < suite.retries and not self.stop.is_set():
                    time.sleep(min(30.0, 2.0**attempt))
                    continue
                self.same.failed(exc.kind, str(exc), exc.retryable, self._who(cell))
                return f"failed: {eid}: [{exc.kind}] {exc}", 0
            if out.appended == 0:
                return "skipped", 0  # another worker finished it after this run listed the grid
            # a resumed episode's earlier turns were counted before
            new_events = out.events[len(out.events) - out.appended :]
            self.same.succeeded(self._who(cell))
            replies = [e for e in new_events if isinstance(e, AgentReplied)]
            if any(e.usage.get("output_chunks") for e in replies):
                self.report.chunks_counted = True
            return "done", sum(tokens_of(e.usage) for e in replies)
        return f"failed: {eid}", 0

    def tally(self, outcome: str, tokens: int) -> None:
        r = self.report
        counter = {
            "done": "done",
            "taken": "taken_elsewhere",
            "skipped": "skipped",
            "not started": "not_started",
            "stopped": "stopped",
        }.get(outcome)
        if counter is None:
            r.failed += 1
            r.errors.append(outcome.removeprefix("failed: "))
        else:
            setattr(r, counter, getattr(r, counter) + 1)
        r.tokens += tokens

    def play(self, concurrency: int, progress: Callable[[CampaignReport, int], None] | None) -> str:
        """Run every cell to do in a pool of ``concurrency`` threads; how the run ended ("finished",
        or "failed" when it stopped itself). Each cell is counted by the thread that ran it: this
        thread only waits, woken once at the end rather than once per cell (a wake per cell cost a
        few percent of `suite run`'s CPU). A KeyboardInterrupt stops the campaign at step boundaries
        and raises :class:`CampaignInterrupted`."""
        all_counted = threading.Event()
        counted = 0
        raised: list[BaseException] = []  # by a cell past its handler (the progress callback)

        def cell(c: Cell, eid: str) -> None:
            nonlocal counted
            try:
                outcome = self.one(c, eid)
                self._landed(eid, outcome[0] == "done")
                with self.lock:
                    self.tally(*outcome)
                    counted += 1
                    if progress:
                        progress(self.report, self.remaining())
                    if counted == len(self.todo):
                        all_counted.set()
            except BaseException as exc:  # the progress callback's (``one`` keeps a cell's own): it ends the run
                raised.append(exc)
                all_counted.set()
                raise

        if not self.todo:
            all_counted.set()
        if progress:  # where the run starts: the cells a resumed campaign finds finished
            progress(self.report, self.remaining())
        pool = ThreadPoolExecutor(max_workers=concurrency)
        futures = [pool.submit(cell, c, eid) for c, eid in self.todo]
        try:
            all_counted.wait()
            if raised:
                raise raised[0]
            pool.shutdown()
            return "failed" if self.same.reason else "finished"  # an agent stopped: the run did not finish
        except KeyboardInterrupt:
            self._stop_at_step_boundaries(pool, futures)
            raise CampaignInterrupted(self.report) from None
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            self.report.halted = self.same.reason
            self.report.halted_agents = [str(a) for a in self.same.reasons]

    def _stop_at_step_boundaries(self, pool: ThreadPoolExecutor, futures: list) -> None:
        """Ctrl-C: no cell starts, each episode in flight reaches its step boundary (leaving the
        pool would otherwise run every cell still queued); a second interrupt ends the wait."""
        self.stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        since = time.monotonic()
        for fut in futures:
            while not fut.done():
                try:
                    wait([fut])
                except KeyboardInterrupt:  # within a second it is the same Ctrl-C, relayed by `--workers`' parent
                    if time.monotonic() - since > 1.0:
                        raise
        self.report.not_started += sum(f.cancelled() for f in futures)


def run_suite(
    suite: Suite,
    store: EventStore,
    shard: tuple[int, int] = (1, 1),
    progress: Callable[[CampaignReport, int], None] | None = None,
    concurrency: int | None = None,
    stop: threading.Event | None = None,
    setup: CampaignSetup | None = None,
) -> CampaignReport:
    """Run every cell of ``suite`` in this shard that is not finished yet.

    No cell's failure stops the others: whatever an episode raises is recorded in its stream
    (``EpisodeFailed``) and counted in the report with the cell's episode id and the reason. When
    the first cells all fail the same systemic way (:class:`SameFailures`), the run stops itself
    and the rest stay resumable.

    Once ``stop`` is set, no cell starts and each episode in flight stops before its next agent
    or judge call, its steps recorded (``stopped``: a later run resumes it). A KeyboardInterrupt
    sets it: the cells that wait are dropped, the episodes in flight reach their step boundary,
    and :class:`CampaignInterrupted` (a KeyboardInterrupt) carries the report. A second
    interrupt does not wait for them. ``setup``: :func:`set_up`'s, when the caller checked the suite
    before opening the store."""
    run = _CampaignRun(suite, store, shard, stop or threading.Event(), setup)
    run_id = secrets.token_hex(6)
    jobs = concurrency or suite.concurrency
    beat: _Heartbeat | None = None
    try:
        record_start(suite, store, shard, len(run.mine), jobs, run_id)
        beat = _Heartbeat(
            store, campaign_stream(suite.name), run_id, lambda: (run.report.done + run.report.failed, run.remaining())
        )
    except InquiTreeError as exc:  # the cells still run (or fail, each with its reason)
        warn(
            f"inquitree: warning: the campaign's start was not recorded ({exc}); `inquitree view` "
            "shows its grid once a later run records it"
        )
    how = "failed"
    try:
        how = run.play(jobs, progress)
    except CampaignInterrupted:
        how = "interrupted"
        raise
    finally:
        if beat is not None:  # recorded, so every page and `suite status` say how this run ended
            beat.end(how, run.report)
    return run.report


class _Heartbeat:
    """A campaign run's ``CampaignAlive`` every HEARTBEAT_SECONDS from a thread of its own, and its
    ``CampaignEnded`` when it ends (events/types.py). A run that dies sends neither: its silence is
    what a reader sees."""

    def __init__(self, store: EventStore, stream: str, run_id: str, progress: Callable[[], tuple[int, int]]):
        self.store, self.stream, self.run_id, self.progress = store, stream, run_id, progress
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="inquitree-campaign-alive", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(HEARTBEAT_SECONDS):
            done, left = self.progress()
            with contextlib.suppress(InquiTreeError):  # a heartbeat lost is only a page less sure
                append_campaign(self.store, self.stream, CampaignAlive(run_id=self.run_id, done=done, left=left))

    def end(self, how: str, report: "CampaignReport") -> None:
        self.stop.set()
        self.thread.join()
        ended = CampaignEnded(
            run_id=self.run_id,
            how=how,
            done=report.done,
            failed=report.failed,
            stopped=report.stopped,
            not_started=report.not_started,
        )
        try:
            append_campaign(self.store, self.stream, ended)
        except InquiTreeError as exc:
            warn(f"inquitree: warning: the campaign's end was not recorded ({exc})")


def append_campaign(store: EventStore, stream: str, event: Event) -> None:
    """Append to a campaign's stream, which its shards and workers append to as well."""
    for _ in range(50):  # each appends after the version it read
        try:
            store.append(stream, [event], store.current_version(stream))
            return
        except ConcurrencyError:
            time.sleep(0.01)
    raise SuiteError(f"{stream}: could not append {event.TYPE} (50 concurrent appends won the race)")


class CampaignInterrupted(KeyboardInterrupt):
    """A campaign stopped by an interrupt, once its episodes in flight reached a step boundary;
    ``report`` counts what was done, ``stopped`` (resumable) and ``not_started``."""

    def __init__(self, report: CampaignReport):
        super().__init__("the campaign was interrupted")
        self.report = report


def record_start(
    suite: Suite, store: EventStore, shard: tuple[int, int], cells: int, concurrency: int, run_id: str | None = None
) -> None:
    """Append this run's ``CampaignStarted`` (shards and workers append theirs to the same stream)."""
    event = CampaignStarted(
        name=suite.name,
        source=suite.source,
        trees=list(suite.trees),
        agents=list(suite.agents),
        judges=list(suite.judges),
        randomness=list(suite.randomness),
        runs=suite.runs,
        shard=list(shard),
        cells=cells,
        concurrency=concurrency,
        budget_tokens=suite.budget_tokens,
        budget_cost_usd=suite.budget_cost_usd,
        run_id=run_id,
    )
    append_campaign(store, campaign_stream(suite.name), event)
