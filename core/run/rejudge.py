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
import json
import re
from typing import Any

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.calls import ModelCallError
from inquitree.core.game import Engine, Params, TemplateSet, Tree, fold, resolve_tree, uniform
from inquitree.core.players import (
    CONTROL_PROMPT_VERSION,
    CONTROL_USER,
    Judge,
    ModelConfig,
    SpecError,
    make_kind,
    strip_code_fence,
)
from inquitree.core.run.runner import STREAM_PREFIX, stream_id
from inquitree.events import (
    ConclusionSubmitted,
    ControlAnswered,
    ControlStarted,
    EpisodeStarted,
    Event,
    EventStore,
    JudgeVerdict,
)


class RejudgeError(InquiTreeError):
    pass


def judge_episode(store: EventStore, episode_id: str, judge: Judge, again: bool = False) -> list[JudgeVerdict]:
    """Append ``judge``'s verdicts and score to a finished episode; return the verdicts added (none
    when it already has this judge's usable verdicts and not ``again``: an episode whose latest
    verdict from this judge failed is judged again, so the same command retries what failed); a
    failed verdict has ``error`` set and its cause in ``rationale``."""
    sid = stream_id(episode_id)
    recorded = store.read_stream(sid)
    if not recorded:
        raise RejudgeError(f"no episode {episode_id!r} in {store!r}")
    events = [r.event for r in recorded]
    started = events[0]
    if not isinstance(started, EpisodeStarted):
        raise RejudgeError(f"episode {episode_id}: its first event is {started.TYPE}, not EpisodeStarted")
    if not any(isinstance(e, ConclusionSubmitted) for e in events):
        raise RejudgeError(f"episode {episode_id} has no conclusion yet: nothing to judge")
    tree = resolve_tree(started.tree_id)
    if tree.content_hash != started.tree_hash:
        raise RejudgeError(f"episode {episode_id}: tree {tree.id} changed since it was played; cannot judge it fairly")
    state = fold(events)
    had = state.verdicts.get(judge.id)
    if had is not None and not again and all(score is not None for score in had.values()):
        return []
    params = Params.from_dict(started.params)
    engine = Engine(tree, params, TemplateSet(params.template_set))
    verdicts = judge.judge(tree, state.conclusion_items or [])
    state = fold(verdicts, state)
    new: list[Event] = [*verdicts, engine.score(state, judge.id)]
    store.append(sid, new, recorded[-1].stream_version)
    return verdicts


def finished_episodes(store: EventStore, prefix: str = "") -> list[str]:
    return sorted(
        s.removeprefix(STREAM_PREFIX) for s in store.streams_with_event(STREAM_PREFIX + prefix, "ConclusionSubmitted")
    )


_WORD = re.compile(r"^[\s*_`\"'.]*(VALID|INVALID)[\s*_`\"'.]*$", re.IGNORECASE)


def parse_validity(text: str) -> str | None:
    """The answer, strictly: the JSON object {"answer": "VALID" | "INVALID"}, or the reply being
    that one word alone (give or take quotes, emphasis and a full stop). Anything
    else, a sentence that mentions either word included, is unparsed (None): nothing is inferred."""
    body = strip_code_fence(text)
    try:
        obj = json.loads(body)
    except ValueError:
        m = _WORD.match(body)
        return m.group(1).upper() if m else None
    answer = obj.get("answer") if isinstance(obj, dict) else None
    return answer if answer in ("VALID", "INVALID") else None


def control_items(trees: list[Tree], seed: int) -> list[tuple[Tree, str, bool, int | None, str]]:
    """(tree, result id, shown_fake, fake_index, text): each result true once and fake once, seeded order."""
    items: list[tuple[Tree, str, bool, int | None, str]] = []
    for t in trees:
        for rid, r in t.result.items():
            k = int(uniform(seed, len(items), "control-fake") * len(r.fakes))
            items += [(t, rid, False, None, r.text), (t, rid, True, k, r.fakes[k])]
    order = sorted(range(len(items)), key=lambda i: uniform(seed, i, "control-order"))
    return [items[i] for i in order]


def run_control(
    store: EventStore, agent_spec: str, trees: list[Tree], seed: int = 0, config: ModelConfig | None = None
) -> tuple[str, int, int]:
    """Record the control for one agent; resumable. Returns (stream id, answered now, total items)."""
    items = control_items(trees, seed)
    key = hashlib.sha256(f"{agent_spec}|{seed}|{','.join(t.id + ':' + t.content_hash for t in trees)}".encode())
    sid = f"control/{re.sub(r'[^A-Za-z0-9_.-]+', '-', agent_spec)}-{key.hexdigest()[:12]}"
    try:
        answerer = make_kind("control", agent_spec, trees=trees, seed=seed, config=config)
    except SpecError as exc:
        raise RejudgeError(f"{exc} (the control's answerers)") from None
    except ModelCallError as exc:
        raise RejudgeError(str(exc)) from None
    desc: dict[str, Any] = answerer.description
    version = store.current_version(sid)
    if version == 0:
        version = store.append(
            sid,
            [
                ControlStarted(
                    agent=desc,
                    trees=[t.id for t in trees],
                    seed=seed,
                    prompt_version=CONTROL_PROMPT_VERSION,
                    items=len(items),
                )
            ],
            0,
        )
    done = version - 1
    answered = 0
    for n, (tree, rid, fake, k, text) in enumerate(items[done:], start=done):
        prompt = CONTROL_USER.format(topic=tree.topic, text=text)
        try:
            raw, call = answerer.answer(n, text, prompt)
        except ModelCallError as exc:  # stop here: the answers so far are kept, a re-run continues
            raise RejudgeError(f"control stopped at item {n + 1} of {len(items)}: [{exc.kind}] {exc}") from None
        answer = parse_validity(raw)
        ev = ControlAnswered(
            agent=desc,
            tree_id=tree.id,
            result_id=rid,
            shown_fake=fake,
            fake_index=k,
            answer=answer,
            correct=answer == ("INVALID" if fake else "VALID"),
            raw=raw,
            **call,
        )
        version = store.append(sid, [ev], version)
        answered += 1
    return sid, answered, len(items)
