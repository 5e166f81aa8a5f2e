"""Judges: S(c_i) in {1.0, 0.6, 0.0} for each ground-truth conclusion item (Sec. 3.6.2, #16).

- ``embedding``: an offline approximation, not the paper's LLM judge. Each
  ground-truth item is compared with every item of the agent's conclusion;
  the best cosine c gives 1.0 if c >= full, 0.6 if c >= partial, else 0.0.
  It rewards restating the ground truth and cannot tell a correct claim from
  its negation when the wording is close: use it for plumbing, baselines and
  tests, and an LLM judge for measurements.
- ``openai:MODEL``: an LLM judge over an OpenAI-compatible endpoint, with the
  versioned prompt below, temperature 0, JSON output, bounded retries; output
  that stays unparseable is recorded as a judge error (score None).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Protocol

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.calls import ModelCallError, json_schema_format, option_label
from inquitree.core.game import Tree
from inquitree.core.players.agents import ModelConfig, strip_code_fence
from inquitree.events import JudgeVerdict

if TYPE_CHECKING:  # NumPy is imported where vectors are made: a face imports this module at start-up
    import numpy as np

SCORES = (1.0, 0.6, 0.0)


class JudgeError(InquiTreeError):
    def __init__(
        self, message: str, retryable: bool = False, kind: str = "judge", attempts: list[dict[str, Any]] | None = None
    ):
        super().__init__(message)
        self.retryable, self.kind = retryable, kind
        self.attempts = list(attempts or [])  # the model call's failed attempts, when one was made


class Judge(Protocol):
    id: str
    description: dict[str, Any]
    prompt_version: str
    # True when judging again costs nothing but CPU (the embedding judge): the runner then need
    # not claim a replayable agent's stream before the episode is played. A judge that calls a
    # model leaves it unset (False).
    replayable: bool

    def judge(self, tree: Tree, items: list[str]) -> list[JudgeVerdict]: ...


class JudgeIdentity(Protocol):
    """What a verdict records of its judge."""

    id: str
    description: dict[str, Any]
    prompt_version: str


def verdict(
    judge: JudgeIdentity, item_id: str, score: float | None, rationale: str, raw_output: str = "", **call: Any
) -> JudgeVerdict:
    """One verdict of ``judge`` (its id, description and prompt version) on one ground-truth item."""
    return JudgeVerdict(
        judge_id=judge.id,
        judge=judge.description,
        prompt_version=judge.prompt_version,
        item_id=item_id,
        score=score,
        rationale=rationale,
        raw_output=raw_output,
        **call,
    )


class EmbeddingJudge:
    prompt_version = "embedding-judge-v1"
    replayable = True

    def __init__(self, embedder, full: float = 0.85, partial: float = 0.7):
        self.embedder, self.full, self.partial = embedder, full, partial
        self.id = f"embedding:{embedder.id}:{full}/{partial}"
        self.description = {"kind": "embedding", "embedder": embedder.id, "full": full, "partial": partial}
        self._truths: dict[tuple, np.ndarray] = {}  # the ground-truth items' vectors, by tree and items

    def judge(self, tree: Tree, items: list[str]) -> list[JudgeVerdict]:
        import numpy as np

        if items:
            key = (tree.content_hash, tuple(c.id for c in tree.conclusions))  # a tree may be asked of some items only
            truths = self._truths.get(key)
            if truths is None:  # once per tree: each episode of a campaign asks for the same ones
                truths = self._truths[key] = self.embedder.embed([c.text for c in tree.conclusions])
            sims = truths @ self.embedder.embed(items).T
            best_item = sims.argmax(axis=1)  # each ground-truth item's best agent item
            at, bests = best_item.tolist(), sims[np.arange(len(best_item)), best_item].tolist()
        else:
            at = bests = []
        out = []
        for i, c in enumerate(tree.conclusions):
            if at:
                j, best = at[i], round(bests[i], 6)
                score = 1.0 if best >= self.full else 0.6 if best >= self.partial else 0.0
                why = (
                    f"best agent item ({j + 1}) has cosine {best:.3f} (full >= {self.full}, partial >= {self.partial})"
                )
            else:
                score, why = 0.0, "the agent submitted no conclusion items"
            out.append(verdict(self, c.id, score, why))
        return out


# v2: an unusable verdict is asked again with the problem stated (v1 sent the same prompt again,
# which at temperature 0 gives the same answer and, without a cache, costs the same call twice more)
JUDGE_PROMPT_VERSION = "llm-judge-v2"
JUDGE_SYSTEM = """You grade the conclusions of a research agent against one ground-truth conclusion of a scientific paper.
Score 1.0 if the agent's conclusions state the ground-truth item correctly, 0.6 if they state it partially
(the right direction but missing an essential part, or hedged), and 0.0 if they do not state it or contradict it.
Answer with a JSON object only: {"score": 1.0 | 0.6 | 0.0, "rationale": "<one or two sentences>"}"""  # noqa: E501 - the prompt as versioned
JUDGE_USER = """Research topic:
{topic}

Ground-truth conclusion item:
{item}

The agent's conclusions:
{conclusions}"""


JUDGE_REASK = """Your answer could not be used: {problem}.
Answer again with a JSON object only, the score and a rationale of one or two sentences in your own words:
{{"score": 1.0 | 0.6 | 0.0, "rationale": "..."}}"""


VERDICT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["score", "rationale"],
    "properties": {
        "score": {"type": "number", "enum": [1.0, 0.6, 0.0]},
        "rationale": {"type": "string", "minLength": 1},
    },
}
_PLACEHOLDER = re.compile(
    r"^\W*(<[^>]*>|one or two sentences|rationale|\.\.\.|string|str|text|n/?a|none|null|tbd|todo|-+)?\W*$", re.I
)
_LABEL = re.compile(r"^\W*rationale\s*[:=-]\s*", re.I)  # "Rationale: <one or two sentences>" copies the label too


def is_placeholder(rationale: str) -> bool:
    """True for a rationale that says nothing: empty, N/A, or the prompt's placeholder copied
    (with or without its label)."""
    text = rationale.strip()
    return "one or two sentences>" in text.lower() or bool(_PLACEHOLDER.match(_LABEL.sub("", text)))


class OpenAIJudge:
    """The LLM judge (#16): one call per ground-truth item, the verdict's JSON schema passed as
    structured output where the endpoint takes it, bounded re-asks for an unusable verdict."""

    prompt_version = JUDGE_PROMPT_VERSION
    replayable = False

    def __init__(self, model: str, config: ModelConfig | None = None, attempts: int = 3):
        config = config or ModelConfig()
        self.attempts = attempts
        try:
            self.chat = config.chat_model(model, "openai judge")
        except ModelCallError as exc:
            raise JudgeError(str(exc), exc.retryable, exc.kind) from None
        self.model = model
        self.id = f"openai:{config.label or option_label(model, config.settings.options)}:{self.prompt_version}"
        self.description = {"kind": "openai", **self.chat.describe()}

    SYSTEM, USER, REASK = JUDGE_SYSTEM, JUDGE_USER, JUDGE_REASK  # the prompt its version names

    def messages(self, tree: Tree, item: str, items: list[str]) -> list[dict[str, str]]:
        """The question about one ground-truth item: the topic, the item and every agent item."""
        listing = "\n".join(f"({i}) {t}" for i, t in enumerate(items, 1))
        user = self.USER.format(topic=tree.topic, item=item, conclusions=listing)
        return [{"role": "system", "content": self.SYSTEM}, {"role": "user", "content": user}]

    def answer_format(self) -> dict[str, Any] | None:
        return json_schema_format("verdict", VERDICT_SCHEMA)

    def parse(self, raw: str) -> tuple[float | None, str]:
        return parse_verdict(raw)

    def reask(self, messages: list[dict[str, str]], raw: str, problem: str) -> list[dict[str, str]]:
        """The conversation to send after an unusable verdict: the answer, then what was wrong with it."""
        again = self.REASK.format(problem=problem)
        return [*messages, {"role": "assistant", "content": raw}, {"role": "user", "content": again}]

    def judge(self, tree: Tree, items: list[str]) -> list[JudgeVerdict]:
        """Raises :class:`JudgeError` when the endpoint fails (the runner records it as the
        episode's failure, to be resumed); an answer that stays unusable is a judge error verdict."""
        out = []
        for c in tree.conclusions:
            if not items:  # nothing to grade: no call
                out.append(verdict(self, c.id, 0.0, "the agent submitted no conclusion items"))
                continue
            messages = self.messages(tree, c.text, items)
            raw, score, why, model = "", None, "", None
            paid: dict[str, int | None] = {}  # usage of the calls made
            served: dict[str, int | None] = {}  # usage of the answers the cache gave
            latency, hit, answers = 0.0, True, set()
            failed: list[dict] = []  # attempts of this item's calls that failed before an answer came
            finish = None
            for _ in range(self.attempts):
                try:
                    res = self.chat.chat(messages, self.answer_format())
                except ModelCallError as exc:
                    raise JudgeError(f"{exc} (judging item {c.id})", exc.retryable, exc.kind, exc.attempts) from None
                if res.cache_hit:
                    served = _add_usage(served, res.usage)
                else:
                    paid = _add_usage(paid, res.usage)
                latency += res.latency_ms
                hit = hit and res.cache_hit
                failed += res.failed
                raw, model, finish = res.text, res.model, res.finish_reason
                score, why = self.parse(raw)
                if score is not None or raw in answers:  # usable, or the same unusable answer again: stop
                    break
                answers.add(raw)
                messages = self.reask(messages, raw, why)
            # A verdict's usage is what it cost: the calls made; a verdict served wholly from the
            # cache records the cached usage with cache_hit, which costs nothing in `query costs`.
            usage = served if hit else paid
            out.append(
                verdict(
                    self,
                    c.id,
                    score,
                    why,
                    raw,
                    error=score is None,
                    model=model,
                    usage=usage,
                    latency_ms=round(latency, 3),
                    cache_hit=hit,
                    finish_reason=finish,
                    failed_attempts=failed,
                )
            )
        return out


# A rubric for a small model: one ground-truth item at a time, the agent's items quoted and
# numbered, and a one-word answer instead of JSON (a 1.5B model judging in JSON never said absent:
# docs/instrument.md). Versioned like the JSON prompt; its verdicts record the answer word.
RUBRIC_PROMPT_VERSION = "rubric-judge-v1"
RUBRIC_SYSTEM = """You check whether a research agent's conclusions state one finding of a scientific paper.
Answer STATED if one of the agent's conclusions states the finding: the same claim, in the same direction.
Answer PARTIAL if one states part of the finding, or states it only in general terms or hedged.
Answer ABSENT if none of them states it, or if they state the opposite.
Answer with one word: STATED, PARTIAL or ABSENT."""
RUBRIC_USER = """Research topic: {topic}

The finding:
{item}

The agent's conclusions:
{conclusions}

Does one of the agent's conclusions state the finding? Answer with one word: STATED, PARTIAL or ABSENT."""
RUBRIC_REASK = "Your answer could not be used: {problem}. Answer with one word: STATED, PARTIAL or ABSENT."
RUBRIC_SCORES = {"STATED": 1.0, "PARTIAL": 0.6, "ABSENT": 0.0}
_RUBRIC_WORD = re.compile(r"\b(STATED|PARTIAL|ABSENT)\b", re.IGNORECASE)


def parse_rubric(raw: str) -> tuple[float | None, str]:
    """The rubric's verdict: the first of STATED, PARTIAL, ABSENT in the answer (a small model
    may explain itself after the word); None when the answer holds none of them."""
    found = _RUBRIC_WORD.search(raw)
    if found is None:
        return None, "no STATED, PARTIAL or ABSENT in the answer"
    word = found.group(1).upper()
    return RUBRIC_SCORES[word], f"the judge answered {word}"


class RubricJudge(OpenAIJudge):
    """``rubric:MODEL``: the model judge with the rubric prompt (one word per ground-truth item)."""

    prompt_version = RUBRIC_PROMPT_VERSION
    SYSTEM, USER, REASK = RUBRIC_SYSTEM, RUBRIC_USER, RUBRIC_REASK
    kind = "rubric"

    def __init__(self, model: str, config: ModelConfig | None = None, attempts: int = 3):
        super().__init__(model, config, attempts)
        self.id = f"{self.kind}:{self.id.removeprefix('openai:')}"
        self.description = {**self.description, "kind": self.kind}

    def answer_format(self) -> dict[str, Any] | None:
        return None

    def parse(self, raw: str) -> tuple[float | None, str]:
        return parse_rubric(raw)


class HybridJudge(RubricJudge):
    """``hybrid:MODEL``: the rubric, shown only the agent's items nearest the ground-truth item by
    the embedder's cosine (:data:`SHORTLIST` of them, in the agent's order): the cosine picks what
    to read, the model decides. A shorter question for a small model, and no item it cannot see
    as relevant."""

    prompt_version = "hybrid-judge-v1"
    kind = "hybrid"
    SHORTLIST = 3

    def __init__(self, model: str, embedder, config: ModelConfig | None = None, attempts: int = 3):
        super().__init__(model, config, attempts)
        self.embedder = embedder
        self.id = f"{self.id}:{embedder.id}"
        self.description = {**self.description, "embedder": embedder.id, "shortlist": self.SHORTLIST}

    def messages(self, tree: Tree, item: str, items: list[str]) -> list[dict[str, str]]:
        import numpy as np

        cosines = self.embedder.embed(items) @ self.embedder.embed([item])[0]
        nearest = sorted(np.argsort(-cosines, kind="stable")[: self.SHORTLIST].tolist())
        return super().messages(tree, item, [items[i] for i in nearest])


def _add_usage(a: dict[str, int | None], b: dict[str, int | None]) -> dict[str, int | None]:
    keys = set(a) | set(b)
    return {k: (None if a.get(k) is None and b.get(k) is None else (a.get(k) or 0) + (b.get(k) or 0)) for k in keys}


def parse_verdict(raw: str) -> tuple[float | None, str]:
    """(score, rationale) from the judge's JSON; (None, reason) when it is not usable: not JSON,
    a score outside {1.0, 0.6, 0.0}, or a rationale that is empty or the prompt's placeholder."""
    try:
        obj = json.loads(strip_code_fence(raw))
        score = float(obj["score"])
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"unparseable judge output ({type(exc).__name__})"
    if score not in SCORES:
        return None, f"score {score} is not one of 1.0, 0.6, 0.0"
    why = obj.get("rationale")
    if not isinstance(why, str) or is_placeholder(why):
        return None, f"the rationale is empty or the prompt's placeholder ({str(why)[:60]!r})"
    return score, why
