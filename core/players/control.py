"""The decontextualized control's answerers (paper Sec. 4.3, DECISIONS #21): each shown one result
text alone with the paper's topic, each answering VALID or INVALID. The registry of kinds
(``kinds.py``) makes them by name: ``oracle`` knows the true texts, ``random`` answers by a seeded
coin, ``openai:MODEL`` asks a model, each item alone with no memory of the others. The control's
run (which items, in which order, what is recorded) is ``core/run/rejudge.py``'s."""

from __future__ import annotations

from typing import Any

from inquitree.core.calls import json_schema_format, option_label
from inquitree.core.game import Tree, uniform
from inquitree.core.players.agents import ModelConfig

CONTROL_PROMPT_VERSION = "control-v2"
CONTROL_SYSTEM = "You are an expert scientist reviewing a single reported result."
CONTROL_USER = """Research topic:
{topic}

A study on this topic reported the following result:
{text}

Is this result scientifically valid? Answer with a JSON object and nothing else: {{"answer": "VALID"}} or \
{{"answer": "INVALID"}}."""
ANSWER_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["answer"],
    "properties": {"answer": {"type": "string", "enum": ["VALID", "INVALID"]}},
}


class OracleAnswerer:
    """Knows every true result text of the trees: a fake is INVALID, a true text VALID."""

    def __init__(self, trees: list[Tree]):
        self.truth = {r.text for t in trees for r in t.result.values()}
        self.description: dict[str, Any] = {"kind": "oracle"}

    def answer(self, n: int, text: str, prompt: str) -> tuple[str, dict[str, Any]]:
        return ("VALID" if text in self.truth else "INVALID"), {}


class RandomAnswerer:
    """A seeded coin per item (the control's chance level)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.description: dict[str, Any] = {"kind": "random", "seed": seed}

    def answer(self, n: int, text: str, prompt: str) -> tuple[str, dict[str, Any]]:
        return ("VALID" if uniform(self.seed, n, "control-answer") < 0.5 else "INVALID"), {}


class ModelAnswerer:
    """A chat model asked about each item alone; its calls are recorded with the answers. A failed
    call raises ``ModelCallError`` (the control stops there and a re-run continues)."""

    def __init__(self, model: str, config: ModelConfig | None):
        config = config or ModelConfig()
        self.chat = config.chat_model(model, "control model")
        self.description = {
            "kind": "openai",
            "label": config.label or option_label(model, config.settings.options),
            **self.chat.describe(),
        }

    def answer(self, n: int, text: str, prompt: str) -> tuple[str, dict[str, Any]]:
        res = self.chat.chat(
            [{"role": "system", "content": CONTROL_SYSTEM}, {"role": "user", "content": prompt}],
            json_schema_format("validity", ANSWER_SCHEMA),
        )
        return res.text, res.record()
