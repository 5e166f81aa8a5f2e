"""InquiTree as an inspect_ai task: ``inspect eval inquitree/research_tree --model PROVIDER/MODEL``.

Install with ``pip install 'inquitree[inspect]'``; the task registers through inspect's entry
point, so ``inspect eval``, ``inspect eval-set`` (with its retries), ``--epochs``, model roles and
inspect's token, time and cost limits work as for any task.

- **Dataset**: one sample per tree and randomness level (``-T trees=it18|synthetic|all|ID,ID``,
  ``-T randomness=0`` or ``0,3,6``); epochs are the runs (run e uses seed ``seed + e - 1``).
- **Solver**: the same :class:`~inquitree.core.run.runner.Episode` that ``inquitree play`` drives:
  the paper's system prompt and templates, the same observations, matching, hints, fake draws
  and events. The model is inspect's model for the task (``state.messages`` is the agent's
  step-wise memory, as ``openai:MODEL`` keeps it; ``-T window=N`` keeps the last N turns).
- **Judge**: ``-T judge=embedding`` (offline, the default) or ``-T judge=grader``: the model in
  the ``grader`` role (``--model-role grader=PROVIDER/MODEL``) with InquiTree's judge prompt.
- **Scorer**: coverage (Eq. 7), q_norm = Q/k (Eq. 9), steps and within-bounds (Eq. 11-12),
  each with inspect's mean and stderr.
- **Recording**: ``-T db=URL`` appends every event to an InquiTree store, as
  ``inquitree play --record`` does, with episode ids ``inspect.<sample id>.e<epoch>``; then
  ``inquitree replay``, the warehouse, every query and the report work on the run. Token usage
  maps from inspect's (input excludes cached reads, as InquiTree's ``input`` does).
"""

from __future__ import annotations

import inspect
import re
import time
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.game import Reply, TemplateSet, Tree, resolve_tree, shipped_tree_paths
from inquitree.core.inspect import model as inspect_model  # noqa: F401 - registers inquitree/oracle and inquitree/script for inspect
from inquitree.core.players import (
    JUDGE_PROMPT_VERSION,
    JUDGE_REASK,
    JUDGE_SYSTEM,
    JUDGE_USER,
    VERDICT_SCHEMA,
    last_turns,
    parse_verdict,
    recorded_turns,
    verdict,
)
from inquitree.core.run import EPISODE_OPTIONS, Episode, EpisodeSetup, OptionError, Recording, episode_values
from inquitree.events import JudgeVerdict

GRADER_PROMPT_VERSION = JUDGE_PROMPT_VERSION  # the same prompt and re-asks as the openai judge (core/players/judges.py)


def tree_set(trees: str) -> list[Tree]:
    """``it18``, ``synthetic``, ``all``, or comma-separated tree ids or paths."""
    shipped = [p.stem for p in shipped_tree_paths()]
    named = {
        "it18": [t for t in shipped if t.startswith("it18-")],
        "synthetic": [t for t in shipped if t.startswith("synthetic-")],
        "all": shipped,
    }
    if isinstance(trees, (list, tuple)):  # inspect reads `-T trees=a,b` as a list
        refs = [str(r).strip() for r in trees if str(r).strip()]
    else:
        refs = named.get(trees) or [r.strip() for r in str(trees).split(",") if r.strip()]
    if not refs:
        raise InquiTreeError(f"-T trees={trees!r}: name it18, synthetic, all or tree ids")
    return [resolve_tree(r) for r in refs]


def levels(randomness: int | str | list) -> list[int]:
    raw = randomness if isinstance(randomness, list) else str(randomness).split(",")
    try:
        out = [int(x) for x in raw]
    except ValueError:
        raise InquiTreeError(f"-T randomness={randomness!r}: integers 0..10, e.g. 0 or 0,3,6") from None
    if any(not 0 <= a <= 10 for a in out):
        raise InquiTreeError(f"-T randomness={randomness!r}: levels are integers 0..10")
    return out


def episode_id(sample_id: str | int, epoch: int) -> str:
    return "inspect." + re.sub(r"[^A-Za-z0-9_.-]+", "-", str(sample_id)) + f".e{epoch}"


def _episode_arguments(func):
    """``func`` taking the episode options the inspect task takes (``EPISODE_OPTIONS``) as keyword
    arguments after its own: its signature, which inspect reads for ``-T`` and for the log, lists
    each with its default, and ``**options`` receives them."""
    signature = inspect.signature(func)
    own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    episode = [
        inspect.Parameter(
            o.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=o.default,
            annotation=o.kind.__name__ + (" | None" if o.default is None else ""),
        )
        for o in EPISODE_OPTIONS
        if o.inspect
    ]
    func.__signature__ = signature.replace(parameters=own + episode)
    return func


def _episode_values(options: dict[str, Any]) -> dict[str, Any]:
    """The episode options of ``-T``, checked by their declaration."""
    taken = {o.name for o in EPISODE_OPTIONS if o.inspect}
    try:
        if set(options) - taken:
            raise OptionError(
                f"unknown argument {sorted(set(options) - taken)[0]!r} (episode options: {', '.join(sorted(taken))})"
            )
        return episode_values(options, "-T ")
    except OptionError as exc:
        raise InquiTreeError(str(exc)) from None


@task
@_episode_arguments
def research_tree(
    trees: str = "it18",
    randomness: int | str = 0,
    seed: int = 0,
    judge: str = "embedding",
    db: str | None = None,
    window: int | None = None,
    **options: Any,
) -> Task:
    """InquiTree's inquiry loop over paper-derived research trees (one sample per tree and level)."""
    if judge not in ("embedding", "grader"):
        raise InquiTreeError(f"-T judge={judge!r}: embedding or grader")
    episode = _episode_values(options)
    chosen = tree_set(trees)
    template_set = TemplateSet(episode["templates"])
    samples = [
        Sample(
            id=f"{t.id}.a{a}",
            input=template_set.render("C.1.1", content=t.topic),
            target="\n".join(f"({i}) {c.text}" for i, c in enumerate(t.conclusions, 1)),
            metadata={"tree": t.id, "randomness": a, "n_subtopics": t.n},
        )
        for t in chosen
        for a in levels(randomness)
    ]
    solver_ = inquiry(seed=seed, judge=judge, db=db, window=window, **options)
    return Task(dataset=samples, solver=solver_, scorer=inquitree_scores(), config=GenerateConfig(temperature=0.0))


def _usage(out: Any) -> dict[str, int | None]:
    u = out.usage
    if u is None:
        return {}
    return {
        "input": u.input_tokens,
        "cached_input": u.input_tokens_cache_read,
        "cache_write": u.input_tokens_cache_write,
        "output": u.output_tokens,
    }


@solver
@_episode_arguments
def inquiry(
    seed: int = 0,
    judge: str = "embedding",
    db: str | None = None,
    window: int | None = None,
    **options: Any,
):
    """Play one InquiTree episode with the task's model: the Episode of ``inquitree play``, with
    the episode options of `play` (``tau``, ``tau_study``, ``match_rule``, ... as `play --tau`,
    `--tau-study`, `--match-rule`)."""
    setup = EpisodeSetup.of(_episode_values(options))
    template_set = setup.templates
    embedding = setup.judge("embedding")  # the offline judge, made once (-T judge=embedding)
    assert embedding is not None  # only the spec "none" gives no judge

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from inquitree.events import EventStore

        tree = resolve_tree(state.metadata["tree"])
        params = setup.params(tree, state.metadata["randomness"], seed + state.epoch - 1)
        model = get_model()
        agent = {"kind": "inspect", "model": model.name, "label": str(model), "window": window}
        judge_desc = (
            {"kind": "inspect-grader", "model": str(get_model(role="grader", default=model))}
            if judge == "grader"
            else embedding.description
        )
        store = EventStore(db) if db else None
        try:
            # resume: a sample that inspect retries (eval-set, --retry-on-error) or runs again into the same
            # store continues its recorded episode (a finished one only reports its score)
            recording = Recording(store, episode_id(state.sample_id, state.epoch), resume=True)
            ep = Episode(setup, tree, params, agent, judge_desc, recording)
            memory: list[ChatMessage] = [ChatMessageSystem(content=template_set.system_prompt)]
            for obs, r in recorded_turns(ep.existing):
                memory += [ChatMessageUser(content=obs), ChatMessageAssistant(content=r.raw)]
            if ep.state.state != "done":
                memory.append(ChatMessageUser(content=ep.state.last_observation))
            while ep.playing:
                sent = [memory[0], *last_turns(memory[1:], window)]
                t0 = time.perf_counter()
                try:
                    out = await model.generate(sent)
                    reply = Reply(
                        out.completion,
                        model=out.model,
                        usage=_usage(out),
                        latency_ms=(time.perf_counter() - t0) * 1000,
                        finish_reason=getattr(out, "stop_reason", None),
                    )
                    ep.take(reply)
                except Exception as exc:  # recorded in the store, then raised to inspect
                    raise ep.fail(exc, f"step {ep.state.step + 1} ({ep.state.state})") from exc
                memory.append(ChatMessageAssistant(content=reply.text))
                if ep.state.state != "done":  # the conclusion reply is the last message
                    memory.append(ChatMessageUser(content=ep.state.last_observation))
            items = ep.state.conclusion_items or []
            judge_id = _Grader(judge_desc).id if judge == "grader" else embedding.id
            if ep.needs_verdicts(judge_id):
                try:
                    verdicts = (
                        await _grade(tree, items, judge_desc) if judge == "grader" else embedding.judge(tree, items)
                    )
                except Exception as exc:
                    raise ep.fail(exc, "judging") from exc
                ep.judged(verdicts)
            scored = ep.score(judge_id)
        finally:
            if store is not None:
                store.close()
        state.messages = memory
        state.output.completion = "\n".join(f"({i}) {x}" for i, x in enumerate(items, 1))
        state.metadata["inquitree"] = {
            "episode_id": ep.episode_id,
            **scored.to_payload(),
            "own_coverage": own_coverage(ep.state, tree.n),
        }
        return state

    return solve


class _Grader:
    """The judge's identity for verdicts made by inspect's ``grader`` model role."""

    prompt_version = GRADER_PROMPT_VERSION

    def __init__(self, description: dict):
        self.description = description
        self.id = f"inspect-grader:{description['model']}:{self.prompt_version}"


async def _grade(tree: Tree, items: list[str], description: dict, attempts: int = 3) -> list[JudgeVerdict]:
    """InquiTree's judge prompt (#16) with the model in the ``grader`` role: one verdict per item."""
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    grader = get_model(role="grader", default=get_model())
    who = _Grader(description)
    listing = "\n".join(f"({i}) {t}" for i, t in enumerate(items, 1))
    out = []
    for c in tree.conclusions:
        if not items:
            out.append(verdict(who, c.id, 0.0, "the agent submitted no conclusion items"))
            continue
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=JUDGE_SYSTEM),
            ChatMessageUser(content=JUDGE_USER.format(topic=tree.topic, item=c.text, conclusions=listing)),
        ]
        config = GenerateConfig(
            temperature=0.0,
            response_schema=ResponseSchema(name="verdict", json_schema=JSONSchema.model_validate(VERDICT_SCHEMA)),
        )
        raw, score, why, answers = "", None, "", set()
        for _ in range(attempts):
            res = await grader.generate(messages, config=config)
            raw = res.completion
            score, why = parse_verdict(raw)
            if score is not None or raw in answers:  # usable, or the same unusable answer again
                break
            answers.add(raw)
            messages = [
                *messages,
                ChatMessageAssistant(content=raw),
                ChatMessageUser(content=JUDGE_REASK.format(problem=why)),
            ]
        out.append(verdict(who, c.id, score, why, raw, error=score is None, model=grader.name))
    return out


SCORER_NAME = "inquitree_scores"
# Each with inspect's mean and stderr. The conclusion score first: `inspect view` shows the first
# as a sample's score, and coverage alone ties a constant agent with the oracle (the engine's
# forced moves reach every subtopic); own_coverage, beside it, is what the agent reached itself.
SCORE_KEYS = ("q_norm", "coverage", "own_coverage", "steps", "within_bounds")


def own_coverage(state: Any, n_subtopics: int) -> float:
    """The share of the tree's subtopics the agent entered by its own recognised moves (an
    EpisodeState's ``own_visits``), as the warehouse's own_coverage counts them."""
    return len(state.own_visits) / n_subtopics


def episode_score(s: dict[str, Any], completion: str) -> Score:
    """The score of one episode: ``s`` is its EpisodeScored payload with its ``episode_id`` and
    ``own_coverage``."""
    q = s["q_norm"]
    return Score(
        value={
            "q_norm": float("nan") if q is None else q,
            "coverage": s["coverage"],
            "own_coverage": s["own_coverage"],
            "steps": s["steps"],
            "within_bounds": 1.0 if s["within_bounds"] else 0.0,
        },
        answer=completion,
        explanation=(
            f"episode {s['episode_id']}: q_norm {q if q is None else round(q, 3)}, coverage {s['coverage']:.3f} "
            f"(own moves {s['own_coverage']:.3f}), {s['steps']} steps in [{s['lower_bound']}, {s['upper_bound']}]"
        ),
        metadata={"episode_id": s["episode_id"], "judge_id": s["judge_id"], "q_sum": s["q_sum"]},
    )


@scorer(metrics={key: [mean(), stderr()] for key in SCORE_KEYS})
def inquitree_scores():
    """The engine's scores of the episode (EpisodeScored): Q/k, coverage and own coverage, steps,
    within bounds."""

    async def score(state: TaskState, target: Target) -> Score:
        s = state.metadata.get("inquitree")
        if s is None:
            raise InquiTreeError(f"sample {state.sample_id}: the episode has no score (it failed before the end)")
        return episode_score(s, state.output.completion)

    return score


__all__ = ["research_tree", "inquiry", "inquitree_scores"]
