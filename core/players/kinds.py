"""The kinds of agents, judges, embedders and control answerers, and the one parser of their specs.

A spec is what a user writes: ``random``, ``script:FILE``, ``openai:MODEL``, ``embedding``. Every
entry point (``play``, ``suite run``, ``judge``, ``control``, the inspect task) asks this registry
what a spec names instead of parsing the string itself: whether the kind calls a model (so request
options, call settings and prices apply to it), whether its argument is a file (which a suite may
only name beside itself), and the factory that makes it. Adding a kind is one registration here;
its implementation is imported only when that kind is made (start-up stays light).

A lab's own kinds live in its own package: an installed distribution that declares entry points
in the groups ``inquitree.agents``, ``inquitree.judges`` or ``inquitree.embedders`` (docs/plugins.md)
adds each as a kind of that role, named by the entry point, its factory the object it names
(``factory(spec, **context)``, as the built-in ones below). The factory's attributes ``argument``,
``default_argument``, ``needs_model``, ``names_file`` and ``summary`` say what ``Kind`` says. Plug-ins are read
the first time a role's kinds are listed or a spec is parsed; one that fails to load, or that
takes a built-in kind's name, is not a kind, and a spec naming it says why.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from inquitree.boundary.errors import InquiTreeError

__all__ = ["Kind", "Spec", "SpecError", "kinds", "make_kind", "parse_spec"]

ROLES = ("agent", "judge", "embedder", "control")
_OPTION = {"agent": "--agent", "judge": "--judge", "embedder": "--embedder", "control": "--agent"}


class SpecError(InquiTreeError):
    """A spec that names no registered kind of its role."""


@dataclasses.dataclass(frozen=True)
class Kind:
    role: str  # agent | judge | embedder | control
    name: str  # the spec's word before any ":"
    argument: str | None = None  # what follows "name:" (MODEL, FILE); None: the kind takes none
    default_argument: str | None = None  # the argument when the spec gives none (None: it must)
    needs_model: bool = False  # calls a model endpoint: options, call settings and prices apply
    names_file: bool = False  # its argument is a path to a file the kind reads
    factory: Callable[..., Any] | None = None
    check: Callable[[str, str], Any] | None = None  # check(argument, text) raises SpecError when it is wrong
    plugin: str | None = None  # the distribution (name==version) whose entry point added the kind
    summary: str | None = None  # a few words an option's help adds after the kind's usage

    def usage(self) -> str:
        if self.argument is None:
            return self.name
        return f"{self.name}[:{self.argument}]" if self.default_argument else f"{self.name}:{self.argument}"


@dataclasses.dataclass(frozen=True)
class Spec:
    """A parsed spec: its kind and argument (``openai:gpt-5`` -> kind openai, argument gpt-5)."""

    kind: Kind
    argument: str | None
    text: str

    @property
    def model(self) -> str | None:
        """The model a model-calling kind names (the key of its price), else None."""
        return self.argument if self.kind.needs_model else None


_KINDS: dict[tuple[str, str], Kind] = {}
PLUGIN_GROUPS = {"agent": "inquitree.agents", "judge": "inquitree.judges", "embedder": "inquitree.embedders"}
_PLUGIN_FIELDS = ("argument", "default_argument", "needs_model", "names_file", "summary")
_unusable: dict[tuple[str, str], str] = {}  # plug-ins that are not kinds, and why
_plugins_read = False


def _read_plugins() -> None:
    """Add the kinds installed distributions declare (``PLUGIN_GROUPS``), once."""
    global _plugins_read
    if _plugins_read:
        return
    _plugins_read = True
    from importlib.metadata import entry_points

    for role, group in PLUGIN_GROUPS.items():
        for point in entry_points(group=group):
            dist = getattr(point, "dist", None)
            source = f"{dist.name}=={dist.version}" if dist is not None else point.value
            where = f"the plug-in {point.name!r} ({point.value}, from {source}, entry point group {group})"
            if (role, point.name) in _KINDS:
                _unusable[(role, point.name)] = f"{where} takes the name of a built-in kind and is left out"
                continue
            try:
                factory = point.load()
            except Exception as exc:  # a lab's package: any failure to import it is its own
                _unusable[(role, point.name)] = f"{where} did not load: {type(exc).__name__}: {exc}"
                continue
            if not callable(factory):
                _unusable[(role, point.name)] = f"{where} names {type(factory).__name__}, not a factory"
                continue
            fields = {name: getattr(factory, name) for name in _PLUGIN_FIELDS if hasattr(factory, name)}
            _KINDS[(role, point.name)] = Kind(role, point.name, factory=factory, plugin=source, **fields)


def register(role: str, name: str, **fields: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Bind ``name`` of ``role`` to the decorated factory, ``factory(spec, **context)``."""
    assert role in ROLES, role

    def bind(factory: Callable[..., Any]) -> Callable[..., Any]:
        _KINDS[(role, name)] = Kind(role, name, factory=factory, **fields)
        return factory

    return bind


def kinds(role: str) -> list[Kind]:
    _read_plugins()
    return [k for (r, _), k in _KINDS.items() if r == role]


def spelled(role: str) -> str:
    """Every registered kind of ``role`` as an option's help says them: ``local | hash | nomic | ...``
    (from the registry, so a kind added is a kind listed)."""
    return " | ".join(k.usage() + (f" ({k.summary})" if k.summary else "") for k in kinds(role))


def parse_spec(role: str, text: str) -> Spec:
    """The kind ``text`` names among ``role``'s kinds, or :class:`SpecError` listing them."""
    _read_plugins()
    name, sep, argument = text.partition(":")
    if (role, name) in _unusable and (role, name) not in _KINDS:
        raise SpecError(f"{_OPTION[role]} {text!r}: {_unusable[(role, name)]}")
    kind = _KINDS.get((role, name))
    ok = kind is not None and (
        (kind.argument is None and not sep) or (kind.argument is not None and (argument or kind.default_argument))
    )
    if not ok or kind is None:
        usages = [k.usage() for k in kinds(role)]
        listed = ", ".join(usages[:-1]) + " or " + usages[-1] if len(usages) > 1 else usages[0]
        raise SpecError(f"{_OPTION[role]} {text!r}: expected {listed}")
    spec = Spec(kind, (argument or kind.default_argument) if kind.argument is not None else None, text)
    if kind.check is not None and spec.argument is not None:
        kind.check(spec.argument, text)
    return spec


def make_kind(role: str, text: str, **context: Any) -> Any:
    """Make what ``text`` names (``context``: what its factory needs, e.g. the tree and seed)."""
    spec = parse_spec(role, text)
    assert spec.kind.factory is not None
    return spec.kind.factory(spec, **context)


# -- agents: factory(spec, tree, seed, system_prompt, config, rate_limiter) --------------------------
@register("agent", "random")
def _random(spec: Spec, tree: Any, seed: int, **_: Any) -> Any:
    from inquitree.core.players.agents import RandomAgent

    return RandomAgent(tree, seed)


@register("agent", "random-all", summary="concludes only after visiting every subtopic")
def _random_all(spec: Spec, tree: Any, seed: int, **_: Any) -> Any:
    from inquitree.core.players.agents import RandomAgent

    return RandomAgent(tree, seed, visit_all=True)


@register("agent", "oracle")
def _oracle(spec: Spec, tree: Any, **_: Any) -> Any:
    from inquitree.core.players.agents import OracleAgent

    return OracleAgent(tree)


@register("agent", "human")
def _human(spec: Spec, **_: Any) -> Any:
    from inquitree.core.players.agents import HumanAgent

    return HumanAgent()


@register("agent", "script", argument="FILE", names_file=True)
def _script(spec: Spec, **_: Any) -> Any:
    from inquitree.core.players.agents import ScriptAgent

    return ScriptAgent(str(spec.argument))


@register("agent", "openai", argument="MODEL", needs_model=True)
def _openai_agent(spec: Spec, system_prompt: str, config: Any = None, rate_limiter: Any = None, **_: Any) -> Any:
    from inquitree.core.players.agents import OpenAIChatAgent

    return OpenAIChatAgent(str(spec.argument), system_prompt, config, rate_limiter=rate_limiter)


# -- judges: factory(spec, embedder, config) ---------------------------------------------------------
def judge_thresholds(argument: str, text: str) -> tuple[float, float]:
    """FULL/PARTIAL of an embedding judge's spec: two numbers with 0 < PARTIAL <= FULL <= 1."""
    full_text, sep, partial_text = argument.partition("/")
    try:
        full, partial = float(full_text), float(partial_text)
    except ValueError:
        full = partial = float("nan")
    if not sep or not (0.0 < partial <= full <= 1.0):
        raise SpecError(
            f"--judge {text!r}: expected embedding:FULL/PARTIAL with 0 < PARTIAL <= FULL <= 1"
            " (e.g. embedding:0.78/0.74)"
        )
    return full, partial


@register("judge", "embedding", argument="FULL/PARTIAL", default_argument="0.85/0.7", check=judge_thresholds)
def _embedding_judge(spec: Spec, embedder: Any, **_: Any) -> Any:
    """``embedding`` (full credit from cosine 0.85, partial from 0.7) or ``embedding:FULL/PARTIAL``
    with thresholds of one's own, e.g. those chosen against a careful reading (docs/instrument.md)."""
    from inquitree.core.players.judges import EmbeddingJudge

    full, partial = judge_thresholds(str(spec.argument), spec.text)
    return EmbeddingJudge(embedder, full=full, partial=partial)


@register("judge", "openai", argument="MODEL", needs_model=True)
def _openai_judge(spec: Spec, config: Any = None, **_: Any) -> Any:
    from inquitree.core.players.judges import OpenAIJudge

    return OpenAIJudge(str(spec.argument), config)


@register("judge", "rubric", argument="MODEL", needs_model=True)
def _rubric_judge(spec: Spec, config: Any = None, **_: Any) -> Any:
    """``rubric:MODEL``: one word (STATED, PARTIAL, ABSENT) per ground-truth item, no JSON."""
    from inquitree.core.players.judges import RubricJudge

    return RubricJudge(str(spec.argument), config)


@register("judge", "hybrid", argument="MODEL", needs_model=True)
def _hybrid_judge(spec: Spec, embedder: Any, config: Any = None, **_: Any) -> Any:
    """``hybrid:MODEL``: the rubric shown the agent's three items nearest the ground truth by cosine."""
    from inquitree.core.players.judges import HybridJudge

    return HybridJudge(str(spec.argument), embedder, config)


# -- embedders: factory(spec, base_url) ---------------------------------------------------------------
@register("embedder", "local")
def _local(spec: Spec, **_: Any) -> Any:
    from inquitree.core.players.embed import LocalEmbedder

    return LocalEmbedder()


@register("embedder", "hash")
def _hash(spec: Spec, **_: Any) -> Any:
    from inquitree.core.players.embed import HashEmbedder

    return HashEmbedder()


@register("embedder", "nomic")
def _nomic(spec: Spec, base_url: str | None = None, **_: Any) -> Any:
    from inquitree.core.players.embed import NomicEmbedder

    return NomicEmbedder(base_url)


@register("embedder", "openai", argument="MODEL", default_argument="text-embedding-3-small", needs_model=True)
def _openai_embedder(spec: Spec, base_url: str | None = None, **_: Any) -> Any:
    from inquitree.core.players.embed import OpenAIEmbedder

    return OpenAIEmbedder(str(spec.argument), base_url=base_url)


# -- the decontextualized control's answerers (core/players/control.py) -------------------------------
@register("control", "oracle")
def _oracle_answerer(spec: Spec, trees: list, **_: Any) -> Any:
    from inquitree.core.players.control import OracleAnswerer

    return OracleAnswerer(trees)


@register("control", "random")
def _random_answerer(spec: Spec, seed: int, **_: Any) -> Any:
    from inquitree.core.players.control import RandomAnswerer

    return RandomAnswerer(seed)


@register("control", "openai", argument="MODEL", needs_model=True)
def _model_answerer(spec: Spec, config: Any = None, **_: Any) -> Any:
    from inquitree.core.players.control import ModelAnswerer

    return ModelAnswerer(str(spec.argument), config)


# -- what every entry point calls: a kind's object from its spec ---------------------------------------
def make_agent(
    spec: str,
    tree: Any,
    seed: int,
    system_prompt: str,
    config: Any = None,
    rate_limiter: Any = None,
    label: str | None = None,
) -> Any:
    """The agent ``spec`` names. ``label`` (a suite's ``label``) is its name in every query; a
    model agent takes it from ``config``, the others record it in their description."""
    from inquitree.core.players.agents import AgentError

    try:
        parsed = parse_spec("agent", spec)
    except SpecError as exc:
        raise AgentError(str(exc)) from None
    assert parsed.kind.factory is not None
    agent = parsed.kind.factory(
        parsed, tree=tree, seed=seed, system_prompt=system_prompt, config=config, rate_limiter=rate_limiter
    )
    if parsed.kind.plugin is not None:
        agent = _checked_plugin_agent(agent, parsed)
    if parsed.kind.needs_model:
        return agent
    if label and label != spec:
        agent.description = {**agent.description, "label": label}
    return agent


def _checked_plugin_agent(agent: Any, parsed: Spec) -> Any:
    """A plug-in's agent as the engine needs it: ``reply`` and ``resume`` callable and a
    ``description`` dict, which is recorded with the plug-in's distribution and version beside it;
    ``replayable`` False unless it says otherwise (each step committed at once)."""
    from inquitree.core.players.agents import AgentError

    missing = [n for n in ("reply", "resume") if not callable(getattr(agent, n, None))]
    if missing or not isinstance(getattr(agent, "description", None), dict):
        what = ", ".join(missing + ([] if isinstance(getattr(agent, "description", None), dict) else ["description"]))
        raise AgentError(f"--agent {parsed.text!r}: the plug-in's agent ({parsed.kind.plugin}) lacks {what}")
    agent.description = {**agent.description, "plugin": parsed.kind.plugin}
    if not isinstance(getattr(agent, "replayable", None), bool):
        agent.replayable = False
    return agent


def make_judge(spec: str, embedder: Any, config: Any = None) -> Any:
    """The judge ``spec`` names."""
    from inquitree.core.players.judges import JudgeError

    try:
        return make_kind("judge", spec, embedder=embedder, config=config)
    except SpecError as exc:
        raise JudgeError(str(exc)) from None


def make_embedder(name: str, *, base_url: str | None = None, cache: bool | Path | str = True) -> Any:
    """``local`` | ``hash`` | ``openai`` | ``openai:MODEL``, cached unless ``cache=False``."""
    from inquitree.core.players.embed import CachedEmbedder, EmbedderError

    try:
        inner = make_kind("embedder", name, base_url=base_url)
    except SpecError as exc:
        raise EmbedderError(f"unknown embedder {name!r}: {str(exc).partition(': ')[2]}") from None
    if cache is False:
        return inner
    return CachedEmbedder(inner, None if cache is True else cache)
