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
from typing import Any, Protocol

import numpy as np

from inquitree.core.agents import strip_code_fence
from inquitree.core.tree import Tree
from inquitree.events.errors import InquiTreeError
from inquitree.events.types import JudgeVerdict

SCORES = (1.0, 0.6, 0.0)


class JudgeError(InquiTreeError):
    pass


class Judge(Protocol):
    id: str
    description: dict[str, Any]

    def judge(self, tree: Tree, items: list[str]) -> list[JudgeVerdict]: ...


class EmbeddingJudge:
    prompt_version = "embedding-judge-v1"

    def __init__(self, embedder, full: float = 0.85, partial: float = 0.7):
        self.embedder, self.full, self.partial = embedder, full, partial
        self.id = f"embedding:{embedder.id}:{full}/{partial}"
        self.description = {"kind": "embedding", "embedder": embedder.id, "full": full, "partial": partial}

    def judge(self, tree: Tree, items: list[str]) -> list[JudgeVerdict]:
        truths = [c.text for c in tree.conclusions]
        if items:
            v = self.embedder.embed(truths + items)
            sims = v[: len(truths)] @ v[len(truths):].T
        else:
            sims = np.zeros((len(truths), 0))
        out = []
        for i, c in enumerate(tree.conclusions):
            if sims.shape[1]:
                j = int(np.argmax(sims[i]))
                best = round(float(sims[i, j]), 6)
                score = 1.0 if best >= self.full else 0.6 if best >= self.partial else 0.0
                why = f"best agent item ({j + 1}) has cosine {best:.3f} (full >= {self.full}, partial >= {self.partial})"
            else:
                score, why = 0.0, "the agent submitted no conclusion items"
            out.append(JudgeVerdict(judge_id=self.id, judge=self.description, prompt_version=self.prompt_version,
                                    item_id=c.id, score=score, rationale=why, raw_output=""))
        return out


JUDGE_PROMPT_VERSION = "llm-judge-v1"
JUDGE_SYSTEM = """You grade the conclusions of a research agent against one ground-truth conclusion of a scientific paper.
Score 1.0 if the agent's conclusions state the ground-truth item correctly, 0.6 if they state it partially
(the right direction but missing an essential part, or hedged), and 0.0 if they do not state it or contradict it.
Answer with a JSON object only: {"score": 1.0 | 0.6 | 0.0, "rationale": "<one or two sentences>"}"""
JUDGE_USER = """Research topic:
{topic}

Ground-truth conclusion item:
{item}

The agent's conclusions:
{conclusions}"""


class OpenAIJudge:
    prompt_version = JUDGE_PROMPT_VERSION

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, attempts: int = 3,
                 max_retries: int = 5, timeout: float = 120.0):
        import openai

        self.model, self.attempts = model, attempts
        from inquitree.core.embed import openai_endpoint

        self.base_url, key = openai_endpoint(base_url, api_key)
        if not key:
            raise JudgeError("the openai judge needs $OPENAI_API_KEY (or --judge-base-url for a local server)")
        from inquitree.core.agents import openai_client

        self.client = openai_client(self.base_url, key, max_retries, timeout)
        self.id = f"openai:{model}:{self.prompt_version}"
        self.description = {"kind": "openai", "model": model, "base_url": self.base_url, "temperature": 0}

    def judge(self, tree: Tree, items: list[str]) -> list[JudgeVerdict]:
        import openai

        listing = "\n".join(f"({i}) {t}" for i, t in enumerate(items, 1)) or "(none)"
        out = []
        for c in tree.conclusions:
            user = JUDGE_USER.format(topic=tree.topic, item=c.text, conclusions=listing)
            raw, score, why = "", None, ""
            for _ in range(self.attempts):
                try:
                    resp = self.client.chat.completions.create(
                        model=self.model, temperature=0, response_format={"type": "json_object"},
                        messages=[{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}])
                except openai.OpenAIError as exc:
                    raw, why = "", f"judge call failed: {type(exc).__name__}: {exc}"
                    continue
                raw = (resp.choices[0].message.content or "") if resp.choices else ""
                score, why = parse_verdict(raw)
                if score is not None:
                    break
            out.append(JudgeVerdict(judge_id=self.id, judge=self.description, prompt_version=self.prompt_version,
                                    item_id=c.id, score=score, rationale=why, raw_output=raw, error=score is None))
        return out


def parse_verdict(raw: str) -> tuple[float | None, str]:
    """(score, rationale) from the judge's JSON; (None, reason) when it is not usable."""
    try:
        obj = json.loads(strip_code_fence(raw))
        score = float(obj["score"])
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"unparseable judge output ({type(exc).__name__})"
    if score not in SCORES:
        return None, f"score {score} is not one of 1.0, 0.6, 0.0"
    return score, str(obj.get("rationale", ""))


def make_judge(spec: str, embedder, base_url: str | None = None) -> Judge:
    if spec == "embedding":
        return EmbeddingJudge(embedder)
    if spec.startswith("openai:"):
        return OpenAIJudge(spec.split(":", 1)[1], base_url=base_url)
    raise JudgeError(f"--judge {spec!r}: expected embedding or openai:MODEL")
