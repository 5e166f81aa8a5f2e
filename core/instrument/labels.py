"""A lab's own labels: samples of a campaign's moves and conclusions, read blind by a person and kept
as events, and the instrument measured on them.

The shipped measurements (``core/data/``) are one small model's phrasing; a lab's agents phrase
otherwise, so the matcher and the judge are measured again on the lab's own campaign:

- a **move** is an agent's reply at the Topic or Subtopic state that the engine matched (an
  ``AgentReplied`` followed, in its step, by a ``MatchScored``); its label is the candidate the
  reply meant, or ``none``;
- a **conclusion** is one (episode, ground-truth item) pair of an episode that submitted its
  conclusions; its label is ``stated``, ``partial`` or ``absent`` for the agent's submitted items.

A sample is drawn with a seed, stratified (moves by agent and state, conclusions by agent, each
stratum given an equal share, so that the rarer Subtopic moves are measured too), and every
answer is a :class:`~inquitree.events.types.LabelRecorded` in the stream ``labels/<sample id>``:
labels replay, export, import and sync as every other fact. The same sample id, from the same
suite, kind, agent, size and seed, continues where a labeller stopped; a second labeller's
answers stand beside the first's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from inquitree.core.game import Tree, resolve_tree
from inquitree.events import (
    EPISODE_PREFIX,
    LABELS_PREFIX,
    ConcurrencyError,
    EventStore,
    LabelRecorded,
    agent_name,
    check_episode_id,
    episode_prefix,
)

if TYPE_CHECKING:
    pass

KINDS = ("move", "conclusion")
CONCLUSION_ANSWERS = ("stated", "partial", "absent")
SKIP = "skip"
NONE = "none"
# A label's value on the judge's scale: stated is full credit, partial the engine's partial credit
# (the embedding judge's 0.6, core/instrument/judging.py), absent nothing.
LABEL_VALUE = {"stated": 1.0, "partial": 0.6, "absent": 0.0}
# the judge's categories (core/instrument/judging.py) for each answer
AS_CATEGORY = {"stated": "credited", "partial": "partial", "absent": "absent"}


class LabelError(ValueError):
    """A sample that cannot be drawn or an answer that cannot be kept, said in one line."""


@dataclasses.dataclass(frozen=True)
class Move:
    """One matched reply: where it is, what the agent saw and wrote, and what the engine decided
    (``best``, ``accepted``: never shown to the labeller)."""

    stream_id: str
    position: int
    tree_id: str
    agent: str
    state: str  # topic | subtopic
    subtopic: str | None
    action: str
    candidates: tuple[str, ...]
    best: str | None
    accepted: bool

    @property
    def key(self) -> tuple[str, int, str | None]:
        return (self.stream_id, self.position, None)

    @property
    def stratum(self) -> tuple[str, ...]:
        return (self.agent, self.state)


@dataclasses.dataclass(frozen=True)
class Conclusion:
    """One ground-truth item of an episode that submitted its conclusions (``submitted``), with
    the judges' verdicts on it (``verdicts``: judge id -> score, None where the verdict failed;
    never shown to the labeller)."""

    stream_id: str
    position: int
    tree_id: str
    agent: str
    item_id: str
    submitted: tuple[str, ...]
    verdicts: dict[str, float | None]

    @property
    def key(self) -> tuple[str, int, str | None]:
        return (self.stream_id, self.position, self.item_id)

    @property
    def stratum(self) -> tuple[str, ...]:
        return (self.agent,)


Item = Move | Conclusion


def _agent(started: dict[str, Any]) -> str:

    return agent_name(started.get("agent") or {})


def _episodes(store: EventStore, suite: str, types: Sequence[str]) -> dict[str, list[Any]]:
    prefix = EPISODE_PREFIX + episode_prefix(suite)
    found: dict[str, list[Any]] = {}
    for r in store.read_prefix(prefix, ["EpisodeStarted", *types], store.last_position()):
        found.setdefault(r.stream_id, []).append(r)
    return found


def _tree(tree_id: str, cache: dict[str, Tree]) -> Tree:
    if tree_id not in cache:
        cache[tree_id] = resolve_tree(tree_id)
    return cache[tree_id]


def _agents_episodes(
    store: EventStore, suite: str, agent: str | None, types: Sequence[str], trees: dict[str, Tree]
) -> Iterable[tuple[str, list[Any], str, Tree]]:
    """(stream, its events of ``types`` after EpisodeStarted, agent, tree) of each of suite
    ``suite``'s episodes (of agent ``agent``, by label), in stream order."""
    for sid, recorded in sorted(_episodes(store, suite, types).items()):
        if recorded[0].event_type != "EpisodeStarted":
            continue
        started = recorded[0].payload
        name = _agent(started)
        if agent is None or name == agent:
            yield sid, recorded[1:], name, _tree(started["tree_id"], trees)


def campaign_moves(store: EventStore, suite: str, agent: str | None = None) -> list[Move]:
    """Every matched reply of suite ``suite``'s episodes (of agent ``agent``, by label), in stream
    and position order."""
    out: list[Move] = []
    for sid, recorded, name, tree in _agents_episodes(store, suite, agent, ["AgentReplied", "MatchScored"], {}):
        study_owner = {st.id: s.id for s in tree.subtopics for st in s.studies}
        reply = None
        for r in recorded:
            p = r.payload
            if r.event_type == "AgentReplied":
                reply = r
            elif reply is not None and p["step"] == reply.payload["step"] and p["state"] in ("topic", "subtopic"):
                ids = tuple(c["id"] for c in p["candidates"])
                subtopic = study_owner.get(ids[0]) if p["state"] == "subtopic" and ids else None
                action = reply.payload["action"]
                out.append(
                    Move(
                        sid,
                        reply.stream_version,
                        tree.id,
                        name,
                        p["state"],
                        subtopic,
                        action,
                        ids,
                        p["best"],
                        bool(p["accepted"]),
                    )  # fmt: skip
                )
                reply = None
    return out


def campaign_conclusions(store: EventStore, suite: str, agent: str | None = None) -> list[Conclusion]:
    """Every (episode, ground-truth item) pair of suite ``suite``'s episodes that submitted their
    conclusions, with each judge's last verdict on the item."""
    out: list[Conclusion] = []
    for sid, recorded, name, tree in _agents_episodes(store, suite, agent, ["ConclusionSubmitted", "JudgeVerdict"], {}):
        submitted = next((r for r in recorded if r.event_type == "ConclusionSubmitted"), None)
        if submitted is None:
            continue
        verdicts: dict[str, dict[str, float | None]] = {}
        for r in recorded:
            if r.event_type == "JudgeVerdict":
                score = None if r.payload.get("error") else r.payload.get("score")
                verdicts.setdefault(r.payload["item_id"], {})[r.payload["judge_id"]] = score
        items = tuple(submitted.payload["items"])
        for c in tree.conclusions:
            out.append(Conclusion(sid, submitted.stream_version, tree.id, name, c.id, items, verdicts.get(c.id, {})))
    return out


def draw_sample(items: Sequence[Item], size: int, seed: int) -> list[Item]:
    """A seeded sample of ``size`` items, stratified: each stratum (moves: agent and state;
    conclusions: agent) gets an equal share, a stratum with fewer items gives all it has and the
    rest goes to the others; the sample is shown in a seeded random order. A size at least the
    number of items takes them all."""
    import numpy as np

    rng = np.random.default_rng(seed)
    strata: dict[tuple[str, ...], list[Item]] = {}
    for it in sorted(items, key=lambda x: (x.key[0], x.key[1], x.key[2] or "")):
        strata.setdefault(it.stratum, []).append(it)
    left, share = min(size, len(items)), {k: 0 for k in strata}
    while left > 0:
        open_ = [k for k in sorted(strata) if share[k] < len(strata[k])]
        each = max(1, left // len(open_))
        for k in open_:
            give = min(each, len(strata[k]) - share[k], left)
            share[k] += give
            left -= give
            if left == 0:
                break
    picked: list[Item] = []
    for k in sorted(strata):
        order = rng.permutation(len(strata[k]))[: share[k]]
        picked += [strata[k][i] for i in sorted(order)]
    return [picked[i] for i in rng.permutation(len(picked))]


def sample_id(kind: str, suite: str, agent: str | None, size: int, seed: int) -> str:
    """The sample's name, the same for the same draw: a stream name's grammar."""

    def slug(name: str) -> str:  # a name as episode ids write it
        return episode_prefix(name).removesuffix(".")

    raw = f"{kind}s.{slug(suite)}.{slug(agent) if agent else 'all'}.n{size}.seed{seed}"
    return check_episode_id(raw, "the labelling sample")


def sample_answers(store: EventStore, sample: str) -> list[dict[str, Any]]:
    """The sample's answers as recorded, oldest first (each a LabelRecorded's payload)."""
    return [r.payload for r in store.read_stream(LABELS_PREFIX + sample)]


def latest_answers(recorded: Iterable[dict[str, Any]]) -> dict[tuple[str, tuple[str, int, str | None]], str]:
    """(labeller, item key) -> that labeller's last answer to the item."""
    return {(a["labeller"], (a["stream_id"], a["position"], a.get("item_id"))): a["answer"] for a in recorded}


def keep_answer(store: EventStore, label: LabelRecorded, version: int) -> int:
    """Append one answer to its sample's stream, which the caller last saw at ``version``; when
    another labeller appended meanwhile, after theirs. Returns the stream's new version."""
    stream = LABELS_PREFIX + label.sample_id
    for _ in range(20):
        try:
            return store.append(stream, [label], version)
        except ConcurrencyError:
            recorded = store.read_stream(stream)
            version = recorded[-1].stream_version if recorded else 0
    raise LabelError(f"{stream}: could not append the answer (the stream kept moving under 20 tries)")


def all_labels(store: EventStore, suite: str | None = None) -> list[dict[str, Any]]:
    """Every answer in the store (of samples of suite ``suite``), oldest first."""
    out = [r.payload for r in store.read_prefix(LABELS_PREFIX, ["LabelRecorded"], store.last_position())]
    return [a for a in out if suite is None or a["suite"] == suite]


def labeller_agreement(recorded: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pair of labellers' agreement on the items both answered (skips left out): items,
    agreement and Cohen's kappa over the answers they gave."""
    from inquitree.core.instrument.judging import _kappa

    last = latest_answers(recorded)
    by: dict[str, dict[Any, str]] = {}
    for (who, key), answer in last.items():
        if answer != SKIP:
            by.setdefault(who, {})[key] = answer
    out = []
    names = sorted(by)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            common = sorted(set(by[a]) & set(by[b]), key=str)
            pairs = [(by[a][k], by[b][k]) for k in common]
            cats = tuple(sorted({x for p in pairs for x in p}))
            kappa = _kappa(pairs, cats) if pairs else None
            agree = sum(x == y for x, y in pairs) / len(pairs) if pairs else None
            out.append({"labellers": [a, b], "items": len(pairs), "agreement": agree, "kappa": kappa})
    return out


# -- the instrument measured on a campaign's own labels ----------------------------------------------
def _chosen(recorded: list[dict[str, Any]], kind: str, labeller: str | None) -> tuple[str | None, dict]:
    """The labeller whose answers measure (``labeller``, else the one with the most answers of
    ``kind``) and their last answer to each item, skips left out."""
    last = {k: a for k, a in latest_answers(r for r in recorded if r["kind"] == kind).items() if a != SKIP}
    counts: dict[str, int] = {}
    for who, _ in last:
        counts[who] = counts.get(who, 0) + 1
    if labeller is None and counts:
        labeller = max(sorted(counts), key=lambda w: counts[w])
    return labeller, {key: a for (who, key), a in last.items() if who == labeller}


def move_rates(rows: Sequence[tuple[str, str | None, bool]]) -> dict[str, Any]:
    """The matcher against labels, from (label, engine's best, accepted) rows: recognised and wrong
    of the intended moves, false of the moves labelled ``none``, missed (an intended move not
    accepted) of the intended, and misread (any of the three errors) of every labelled move."""
    intended = [r for r in rows if r[0] != NONE]
    null = [r for r in rows if r[0] == NONE]
    counts = {
        "recognised": sum(ok and best == want for want, best, ok in intended),
        "wrong_candidate": sum(ok and best != want for want, best, ok in intended),
        "missed": sum(not ok for _, _, ok in intended),
        "false_match": sum(ok for _, _, ok in null),
    }
    counts["misread"] = counts["wrong_candidate"] + counts["missed"] + counts["false_match"]

    def share(n: int, of: int) -> float | None:
        return round(n / of, 4) if of else None

    return {
        "labelled": len(rows),
        "n_intended": len(intended),
        "n_null": len(null),
        "counts": counts,
        "recognised": share(counts["recognised"], len(intended)),
        "false_match": share(counts["false_match"], len(null)),
        "wrong_candidate": share(counts["wrong_candidate"], len(intended)),
        "missed": share(counts["missed"], len(intended)),
        "misread": share(counts["misread"], len(rows)),
    }


def _over_papers(by_paper: dict[str, list[Any]], measure: Any, keys: Sequence[str], draws: int) -> dict:
    """95% percentile intervals of ``measure(rows)[key]`` over ``draws`` resamples of papers (seed 0)."""
    import numpy as np

    papers = sorted(by_paper)
    out: dict[str, Any] = {"papers": len(papers)}
    if len(papers) < 2:
        return out | {k: None for k in keys}
    rng = np.random.default_rng(0)
    found: dict[str, list[float]] = {k: [] for k in keys}
    for _ in range(draws):
        got = measure([r for i in rng.integers(0, len(papers), len(papers)) for r in by_paper[papers[i]]])
        for k in keys:
            if got.get(k) is not None:
                found[k].append(got[k])
    for k, v in found.items():
        out[k] = [round(float(np.percentile(v, 2.5)), 4), round(float(np.percentile(v, 97.5)), 4)] if v else None
    return out


MOVE_KEYS = ("recognised", "false_match", "wrong_candidate", "missed", "misread")


def _move_block(rows: list[tuple[Move, str]], draws: int) -> dict[str, Any]:
    by_paper: dict[str, list[tuple[str, str | None, bool]]] = {}
    for m, answer in rows:
        by_paper.setdefault(m.tree_id, []).append((answer, m.best, m.accepted))
    flat = [r for rs in by_paper.values() for r in rs]
    return move_rates(flat) | {"intervals": _over_papers(by_paper, move_rates, MOVE_KEYS, draws)}


def _judge_block(rows: list[tuple[Conclusion, str]], judge_id: str, draws: int) -> dict[str, Any]:
    from inquitree.core.instrument.judging import agreement, category, kappa_over_trees

    pairs: dict[str, list[tuple[str, str]]] = {}
    failed = unjudged = 0
    for c, answer in rows:
        if judge_id not in c.verdicts:
            unjudged += 1
            continue
        judged = category(c.verdicts[judge_id])
        if judged is None:
            failed += 1
            continue
        pairs.setdefault(c.tree_id, []).append((AS_CATEGORY[answer], judged))
    found = agreement([p for ps in pairs.values() for p in ps])
    return found | {"failed": failed, "unjudged": unjudged, "kappa_interval": kappa_over_trees(pairs, draws)}


def measure_labels(
    store: EventStore, suite: str | None = None, labeller: str | None = None, draws: int = 2000
) -> dict[str, Any]:
    """The matcher and the judges on this store's labels (of suite ``suite``'s samples): per state
    the matcher's rates, overall and per agent; per judge the agreement and kappa with the labels,
    overall and per agent; intervals resample papers. Measured on one labeller's answers (the given
    one, else the one with the most), with every pair of labellers' agreement beside them."""
    recorded = all_labels(store, suite)
    suites = sorted({r["suite"] for r in recorded})
    out: dict[str, Any] = {"suites": suites, "answers": len(recorded), "agreement": labeller_agreement(recorded)}
    move_by, answered_moves = _chosen(recorded, "move", labeller)
    conclusion_by, answered_conclusions = _chosen(recorded, "conclusion", labeller)
    out["matcher"] = {"labeller": move_by, "labelled": len(answered_moves), "overall": {}, "agents": {}}
    out["judges"] = {"labeller": conclusion_by, "labelled": len(answered_conclusions), "judge": {}}
    found_moves = {m.key: m for s in suites for m in campaign_moves(store, s)} if answered_moves else {}
    labelled_moves = [(found_moves[k], a) for k, a in sorted(answered_moves.items()) if k in found_moves]
    for state in ("topic", "subtopic"):
        at = [(m, a) for m, a in labelled_moves if m.state == state]
        if at:
            out["matcher"]["overall"][state] = _move_block(at, draws)
        for agent in sorted({m.agent for m, _ in at}):
            mine = [(m, a) for m, a in at if m.agent == agent]
            out["matcher"]["agents"].setdefault(agent, {})[state] = _move_block(mine, draws)
    found_c = {c.key: c for s in suites for c in campaign_conclusions(store, s)} if answered_conclusions else {}
    labelled_c = [(found_c[k], a) for k, a in sorted(answered_conclusions.items(), key=str) if k in found_c]
    for judge_id in sorted({j for c, _ in labelled_c for j in c.verdicts}):
        block = {"overall": _judge_block(labelled_c, judge_id, draws), "agents": {}}
        for agent in sorted({c.agent for c, _ in labelled_c}):
            block["agents"][agent] = _judge_block([(c, a) for c, a in labelled_c if c.agent == agent], judge_id, draws)
        out["judges"]["judge"][judge_id] = block
    return out


# -- what a table says of its instrument on its campaign's own labels ---------------------------------
def _nearest(value: float) -> str:
    """The judge's category nearest a value on its scale (two labellers' mean may fall between)."""
    from inquitree.core.instrument.judging import SCORE

    return SCORE[min(SCORE, key=lambda v: abs(v - value))]


def moves_reading(trees: Sequence[str], misread: Sequence[bool], labellers: int) -> str | None:
    """What a table prints of the matcher on its episodes' labelled moves: the share misread, with
    its counts and an interval over papers; None when no move is labelled."""
    if not misread:
        return None
    by: dict[str, list[bool]] = {}
    for tree, m in zip(trees, misread, strict=True):
        by.setdefault(str(tree), []).append(bool(m))

    def share(rows: list[bool]) -> dict[str, float]:
        return {"misread": sum(rows) / len(rows)}

    span = _over_papers(by, share, ["misread"], 2000)["misread"]
    n, bad = len(misread), sum(map(bool, misread))
    shown = f" [{100 * span[0]:.0f}, {100 * span[1]:.0f}]" if span else ""
    return (
        f"on {n} of this campaign's moves ({labellers} labeller{'s' if labellers != 1 else ''}): the matcher "
        f"misread {100 * bad / n:.0f}% {bad}/{n}{shown} (inquitree instrument measure --labels)"
    )


def conclusions_reading(
    trees: Sequence[str], labels: Sequence[float], scores: Sequence[float | None], labellers: int
) -> str | None:
    """What a table prints of the judge on its episodes' labelled conclusion items: agreement and
    kappa with the readings, kappa's interval over papers; None when no item is labelled."""
    from inquitree.core.instrument.judging import agreement, category, kappa_over_trees

    pairs: dict[str, list[tuple[str, str]]] = {}
    for tree, label, score in zip(trees, labels, scores, strict=True):
        judged = category(score)
        if label is not None and judged is not None:
            pairs.setdefault(str(tree), []).append((_nearest(float(label)), judged))
    flat = [p for ps in pairs.values() for p in ps]
    if not flat:
        return None
    found = agreement(flat)
    span = kappa_over_trees(pairs)
    kappa = "-" if found["kappa"] is None else f"{found['kappa']:.2f}"
    return (
        f"on {len(flat)} of this campaign's conclusion items ({labellers} labeller{'s' if labellers != 1 else ''}): "
        f"the judge agrees {100 * found['agreement']:.0f}%, kappa {kappa}"
        + (f" [{span[0]:.2f}, {span[1]:.2f}]" if span else "")
    )


# -- a labelling run: the sample, what the labeller is shown, and the answers kept ----------------------
@dataclasses.dataclass(frozen=True)
class LabelScreen:
    """What the labeller is shown of one item, in the order shown: headed sections of texts (tree
    text and agent text: untrusted, escaped by whoever shows them), and the answers it takes
    (``choices``: the answer and its name; ``aliases``: what may be typed for each). Never the
    engine's decision, a cosine, a judge's verdict or the agent's name."""

    sections: tuple[tuple[str, tuple[str, ...]], ...]
    choices: tuple[str, ...]
    aliases: dict[str, str]


def screen(item: Item, tree: Tree) -> LabelScreen:
    """The screen of a move (the state, the topic, the candidates' texts with their ids, the reply)
    or of a conclusion (the topic, the finding, the agent's submitted items)."""
    if isinstance(item, Move):
        sections: list[tuple[str, tuple[str, ...]]] = [
            ("state", ("Topic: which subtopic does the reply move to?" if item.state == "topic" else "Subtopic",)),
            ("topic", (tree.topic,)),
        ]
        if item.state == "topic":
            texts = {s.id: s.text for s in tree.subtopics}
            heading = "candidates (subtopics)"
        else:
            sub = tree.subtopic[item.subtopic] if item.subtopic else None
            texts = {st.id: st.text for st in sub.studies} if sub else {}
            sections.append(("in the subtopic", (sub.text if sub else "",)))
            heading = "candidates (its studies: does the reply propose it?)"
        sections.append((heading, tuple(f"[{cid}] {texts.get(cid, '')}" for cid in item.candidates)))
        sections.append(("the agent's reply", (item.action or "(empty)",)))
        aliases = {cid.lower(): cid for cid in item.candidates} | {NONE: NONE, "n": NONE}
        return LabelScreen(tuple(sections), (*item.candidates, NONE), aliases)
    finding = next(c for c in tree.conclusions if c.id == item.item_id)
    submitted = tuple(f"{k}. {text}" for k, text in enumerate(item.submitted, 1)) or ("(none submitted)",)
    sections = [("topic", (tree.topic,)), ("the finding", (finding.text,)), ("the agent's items", submitted)]
    aliases = {w: w for w in CONCLUSION_ANSWERS} | {"st": "stated", "p": "partial", "a": "absent"}
    return LabelScreen(tuple(sections), CONCLUSION_ANSWERS, aliases)


class LabelSession:
    """One labeller's run over one sample: drawn once, continued where the labeller stopped."""

    def __init__(
        self, store: EventStore, kind: str, suite: str, agent: str | None, size: int, seed: int, labeller: str
    ):
        if kind not in KINDS:
            raise LabelError(f"a sample is of moves or conclusions, not {kind!r}")
        self.store, self.kind, self.suite, self.seed, self.labeller = store, kind, suite, seed, labeller
        found = (campaign_moves if kind == "move" else campaign_conclusions)(store, suite, agent)
        if not found:
            what = "matched moves" if kind == "move" else "submitted conclusions"
            raise LabelError(f"suite {suite!r}{f', agent {agent!r},' if agent else ''} has no {what} in this store")
        self.available = len(found)
        self.sample = sample_id(kind, suite, agent, size, seed)
        self.items: list[Item] = draw_sample(found, size, seed)
        self._trees: dict[str, Tree] = {}
        self.refresh()

    def refresh(self) -> None:
        """Read the sample's answers again (another labeller, or another window, may have added some)."""
        self.recorded = sample_answers(self.store, self.sample)
        self.version = len(self.recorded)

    def answered(self, labeller: str | None = None) -> set[tuple[str, int, str | None]]:
        who = labeller or self.labeller
        return {key for (w, key) in latest_answers(self.recorded) if w == who}

    def left(self) -> list[tuple[int, Item]]:
        """(number in the sample, item) of the items this labeller has not answered, in the sample's order."""
        done = self.answered()
        return [(n, it) for n, it in enumerate(self.items, 1) if it.key not in done]

    def screen_of(self, item: Item) -> LabelScreen:
        if item.tree_id not in self._trees:
            self._trees[item.tree_id] = resolve_tree(item.tree_id)
        return screen(item, self._trees[item.tree_id])

    def keep(self, item: Item, answer: str) -> None:
        """Append the labeller's answer (one of the screen's choices, or ``skip``) to the sample."""
        if answer != SKIP and answer not in self.screen_of(item).choices:
            raise LabelError(f"{answer!r} is not an answer to this item")
        event = LabelRecorded(
            labeller=self.labeller, sample_id=self.sample, kind=self.kind, suite=self.suite, seed=self.seed,
            size=len(self.items), stream_id=item.stream_id, position=item.position, answer=answer,
            item_id=item.key[2],
        )  # fmt: skip
        self.version = keep_answer(self.store, event, self.version)
        self.recorded.append(event.to_payload())

    def agreement(self) -> list[dict[str, Any]]:
        """This labeller's agreement with every other labeller of the sample, on the items both answered."""
        self.refresh()
        return [p for p in labeller_agreement(self.recorded) if self.labeller in p["labellers"] and p["items"]]
