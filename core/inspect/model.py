"""Models InquiTree registers with inspect_ai, so the inspect integration runs offline.

``inspect eval inquitree/research_tree --model inquitree/oracle`` plays the oracle of Appendix B
through inspect's model interface: no network, no key, no tokenizer tables (inspect's own mock
model fetches those and fails offline). ``inquitree/script`` replies from a file
(``-M file=replies.txt``: replies separated by lines of ``---``; ``.jsonl``: one a line), as
``--agent script:FILE`` does.

The oracle is stateless, as a model is: each call it reads the dialogue so far and works out
where it is. It finds its tree by the topic in the first observation (or ``-M tree=ID``, needed for
the synthetic trees, which share one invented topic), and
follows the tree's topological order: the subtopic's text at the Topic, its study's text at the
Subtopic, at a Result ``redo_study`` (then ``OK`` at the redone Study) when the text shown is not
the study's true result (a fake), else the next subtopic or the conclusion, and the ground truth
at the Conclusion. It needs the
whole dialogue, so it refuses a task run with ``-T window=N``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser, GenerateConfig, ModelAPI, ModelOutput
from inspect_ai.model import modelapi as _modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.game import Tree, resolve_tree, shipped_tree_paths
from inquitree.core.players import ScriptAgent

__all__ = ["InquiTreeModel", "oracle_reply"]


def _text(message: ChatMessage) -> str:
    return message.text if hasattr(message, "text") else str(message.content)


def _tree_of(first_observation: str, named: str | None) -> Tree:
    if named:
        return resolve_tree(named)
    found = [
        t for t in (resolve_tree(p.stem) for p in shipped_tree_paths()) if t.topic and t.topic in first_observation
    ]
    if len(found) == 1:
        return found[0]
    if found:  # the synthetic trees share one invented topic
        raise InquiTreeError(
            f"inquitree/oracle: the trees {', '.join(t.id for t in found)} share this topic: name the one played "
            "with -M tree=ID (one tree per run)"
        )
    raise InquiTreeError(
        "inquitree/oracle: no shipped tree has the topic of the first observation; name it with -M tree=ID"
    )


def oracle_reply(tree: Tree, observations: list[str], replies: list[str]) -> str:
    """The oracle's next reply, given the observations so far (the last one unanswered) and its
    own earlier replies. A dialogue that does not start at the Topic (a window) is refused."""
    plan = [(sid, st.id) for sid in tree.topological_order() for st in tree.subtopic[sid].studies]
    state, i = "topic", 0
    for obs, said in zip(observations, replies, strict=False):
        if state == "topic":
            state = "subtopic"
        elif state == "subtopic" or state == "study":
            state = "result"
        elif state == "result":
            if said.endswith("redo_study"):
                state = "study"
                continue
            i += 1
            state = "topic" if said.endswith("explore_new_subtopic") else "conclusion"
        del obs
    if state == "topic":
        action = tree.subtopic[plan[i][0]].text
    elif state == "subtopic":
        action = tree.study[plan[i][1]].text
    elif state == "study":
        action = "OK"
    elif state == "result":
        truth = tree.study[plan[i][1]].result.text
        if truth not in observations[-1]:
            action = "redo_study"
        else:
            action = "explore_new_subtopic" if i + 1 < len(plan) else "draw_conclusion"
    else:
        action = "\n".join(f"({k}) {c.text}" for k, c in enumerate(tree.conclusions, 1))
    return f"THOUGHT: following the tree.\nACTION: {action}"


_DEFAULT_CONFIG = GenerateConfig()


class InquiTreeModel(ModelAPI):
    """``inquitree/oracle`` or ``inquitree/script`` (see the module docstring)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = _DEFAULT_CONFIG,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if model_name not in ("oracle", "script"):
            raise InquiTreeError(f"inquitree/{model_name}: the models are inquitree/oracle and inquitree/script")
        self.tree_id = model_args.get("tree")
        self.file = model_args.get("file")
        if model_name == "script" and not self.file:
            raise InquiTreeError("inquitree/script needs its replies: -M file=PATH")
        self.replies = ScriptAgent(Path(str(self.file))).replies if self.file else []

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        observations = [_text(m) for m in input if isinstance(m, ChatMessageUser)]
        replies = [_text(m) for m in input if isinstance(m, ChatMessageAssistant)]
        if len(observations) != len(replies) + 1:
            raise InquiTreeError("inquitree models need the dialogue in turns: observation, reply, ..., observation")
        if self.model_name == "script":
            text = self.replies[len(replies)] if len(replies) < len(self.replies) else "ACTION: draw_conclusion"
        else:
            tree = _tree_of(observations[0], self.tree_id)
            if tree.topic not in observations[0]:
                raise InquiTreeError("inquitree/oracle needs the whole dialogue: run the task without -T window")
            text = oracle_reply(tree, observations, replies)
        return ModelOutput.from_content(model=f"inquitree/{self.model_name}", content=text)


@_modelapi(name="inquitree")
def inquitree_models() -> type[ModelAPI]:
    return InquiTreeModel
