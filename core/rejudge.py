"""Re-judging finished episodes, and the decontextualized control (paper Sec. 4.3).

Re-judging appends a new judge's verdicts and the engine's score under that
judge to a finished episode's stream; earlier verdicts stay as they are (each
keeps its judge, prompt version and time), and queries pick the judge.

The control shows result texts one at a time, alone with the paper's topic,
and records whether the model calls each VALID or INVALID (#21). The set is
balanced: every result of the chosen trees once as its true text and once as
one of its fakes (chosen with the seed), in a seeded order.
"""

from __future__ import annotations

import hashlib
import re

from inquitree.core.agents import OpenAIChatAgent
from inquitree.core.engine import Engine, Params, fold, uniform
from inquitree.core.judges import Judge
from inquitree.core.runner import STREAM_PREFIX, stream_id
from inquitree.core.templates import TemplateSet
from inquitree.core.tree import Tree, resolve_tree
from inquitree.events.base import Event
from inquitree.events.errors import InquiTreeError
from inquitree.events.store import EventStore
from inquitree.events.types import ConclusionSubmitted, ControlAnswered, ControlStarted, EpisodeStarted


class RejudgeError(InquiTreeError):
    pass


def rejudge(store: EventStore, episode_id: str, judge: Judge, again: bool = False) -> int:
    """Append ``judge``'s verdicts and score to a finished episode; return the events added."""
    sid = stream_id(episode_id)
    recorded = store.read_stream(sid)
    if not recorded:
        raise RejudgeError(f"no episode {episode_id!r} in {store!r}")
    events = [r.event for r in recorded]
    started: EpisodeStarted = events[0]
    if not any(isinstance(e, ConclusionSubmitted) for e in events):
        raise RejudgeError(f"episode {episode_id} has no conclusion yet: nothing to judge")
    tree = resolve_tree(started.tree_id)
    if tree.content_hash != started.tree_hash:
        raise RejudgeError(f"episode {episode_id}: tree {tree.id} changed since it was played; cannot judge it fairly")
    state = fold(events)
    if judge.id in state.verdicts and not again:
        return 0
    params = Params.from_dict(started.params)
    engine = Engine(tree, params, TemplateSet(params.template_set))
    verdicts = judge.judge(tree, state.conclusion_items or [])
    state = fold(verdicts, state)
    new: list[Event] = [*verdicts, engine.score(state, judge.id)]
    store.append(sid, new, recorded[-1].stream_version)
    return len(new)


def finished_episodes(store: EventStore, prefix: str = "") -> list[str]:
    return sorted(s.removeprefix(STREAM_PREFIX)
                  for s in store.streams_with_event(STREAM_PREFIX + prefix, "ConclusionSubmitted"))


CONTROL_PROMPT_VERSION = "control-v1"
CONTROL_SYSTEM = "You are an expert scientist reviewing a single reported result."
CONTROL_USER = """Research topic:
{topic}

A study on this topic reported the following result:
{text}

Is this result scientifically valid? Answer with one word: VALID or INVALID."""
_VALID = re.compile(r"\bVALID\b", re.IGNORECASE)
_INVALID = re.compile(r"\bINVALID\b", re.IGNORECASE)


def parse_validity(text: str) -> str | None:
    v, i = bool(_VALID.search(text)), bool(_INVALID.search(text))
    return "VALID" if v and not i else "INVALID" if i and not v else None


def control_items(trees: list[Tree], seed: int) -> list[tuple[Tree, str, bool, int | None, str]]:
    """(tree, result id, shown_fake, fake_index, text): each result true once and fake once, seeded order."""
    items = []
    for t in trees:
        for rid, r in t.result.items():
            k = int(uniform(seed, len(items), "control-fake") * len(r.fakes))
            items += [(t, rid, False, None, r.text), (t, rid, True, k, r.fakes[k])]
    order = sorted(range(len(items)), key=lambda i: uniform(seed, i, "control-order"))
    return [items[i] for i in order]


class _ControlOracle:
    def __init__(self, trees: list[Tree]):
        self.truth = {r.text for t in trees for r in t.result.values()}
        self.description = {"kind": "oracle"}

    def answer(self, text: str, prompt: str) -> str:
        return "VALID" if text in self.truth else "INVALID"


def run_control(store: EventStore, agent_spec: str, trees: list[Tree], seed: int = 0,
                base_url: str | None = None) -> tuple[str, int, int]:
    """Record the control for one agent; resumable. Returns (stream id, answered now, total items)."""
    items = control_items(trees, seed)
    key = hashlib.sha256(f"{agent_spec}|{seed}|{','.join(t.id + ':' + t.content_hash for t in trees)}".encode())
    sid = f"control/{re.sub(r'[^A-Za-z0-9_.-]+', '-', agent_spec)}-{key.hexdigest()[:12]}"
    if agent_spec == "oracle":
        answerer = _ControlOracle(trees)
        desc = answerer.description
    elif agent_spec == "random":
        desc = {"kind": "random", "seed": seed}
    elif agent_spec.startswith("openai:"):
        chat = OpenAIChatAgent(agent_spec.split(":", 1)[1], CONTROL_SYSTEM, base_url=base_url)
        desc = chat.description
    else:
        raise RejudgeError(f"--agent {agent_spec!r}: the control takes oracle, random or openai:MODEL")
    version = store.current_version(sid)
    if version == 0:
        version = store.append(sid, [ControlStarted(agent=desc, trees=[t.id for t in trees], seed=seed,
                                                    prompt_version=CONTROL_PROMPT_VERSION, items=len(items))], 0)
    done = version - 1
    answered = 0
    for n, (tree, rid, fake, k, text) in enumerate(items[done:], start=done):
        prompt = CONTROL_USER.format(topic=tree.topic, text=text)
        if agent_spec == "oracle":
            raw = answerer.answer(text, prompt)
        elif agent_spec == "random":
            raw = "VALID" if uniform(seed, n, "control-answer") < 0.5 else "INVALID"
        else:
            chat.history = []  # each item alone: no memory of earlier items
            raw = chat.reply(prompt, "control", n).text
        answer = parse_validity(raw)
        ev = ControlAnswered(agent=desc, tree_id=tree.id, result_id=rid, shown_fake=fake, fake_index=k, answer=answer,
                             correct=answer == ("INVALID" if fake else "VALID"), raw=raw)
        version = store.append(sid, [ev], version)
        answered += 1
    return sid, answered, len(items)

