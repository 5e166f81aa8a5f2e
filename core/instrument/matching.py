"""How well a matcher reads real moves: the labelled actions InquiTree ships
(``core/data/matching/qwen-actions.jsonl``; how they were made and labelled in the README beside
them), decided by the engine's own function and counted against the labels.

Three rates (docs/instrument.md), each per state and each over the actions it can happen to:

- recognised: intended moves accepted as the intended candidate, of the intended moves;
- false match: actions that mean no candidate accepted as one, of the actions that mean none;
- wrong candidate: intended moves accepted as another candidate, of the intended moves.

Each comes with its counts (``8/94``): a rate over fewer than :data:`FEW` items is said to be one.
The matching study (``studies/matching.py``) chose the shipped thresholds by an older criterion,
false matches of all actions (:func:`rates`, ``false_of_all``), which the record keeps beside the
rates so that the study's figures can still be read against it.

Trees alternate between a calibration half, where thresholds are chosen, and a held-out half,
where they are measured; intervals resample whole trees (a tree's actions are one model's
phrasing of one paper, not independent draws). ``inquitree instrument measure`` and
``studies/matching.py`` both count through this module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inquitree.core.game import (
    MatchRuleError,
    decide,
    fitted_rule,
    match_anchors,
    read_match,
    resolve_tree,
    threshold_at,
)
from inquitree.core.players import DEFAULT_TAU, DEFAULT_TAU_STUDY, embed_actions, embeds_queries_apart

if TYPE_CHECKING:
    pass

DATA = Path(__file__).resolve().parent.parent / "data"
LABELS = DATA / "matching" / "qwen-actions.jsonl"
SECOND = LABELS.with_name("qwen-actions-second-reading.jsonl")  # the held-out actions read again
TAUS = [round(0.30 + 0.01 * k, 2) for k in range(66)]  # 0.30 .. 0.95
NONE = "(none: the topic)"  # at the Topic, a candidate that stands for no move: the topic's own text
GOAL = {"recognised": 2 / 3, "false_match": 0.05, "wrong_candidate": 0.02}  # on held-out trees, per state
RATES = ("recognised", "false_match", "wrong_candidate")
FEW = 20  # a rate over fewer items than this is printed with a word that says so

# (the candidates in the engine's order, each one's cosine, the label, the state) of one action
Scored = tuple[list[str], dict[str, float], "str | None", str]


def read_labels(path: Path = LABELS) -> list[dict]:
    """The labelled actions of ``path`` (JSON lines)."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def tallies(
    rows: list[Scored], tau: float, tau_study: float | None = None, margin: float = 0.0, lead: float = 0.0
) -> dict[str, int]:
    """How many actions there are, how many are intended moves (``intended``) and how many mean no
    candidate (``null``), and how many of them were recognised, falsely matched (an action that
    means none, accepted as a candidate) and sent to the wrong candidate (an intended move accepted
    as another), with ``tau`` at the Topic and ``tau_study`` (default: tau) at the Subtopic state,
    decided by the engine's own function (``engine.decide``). ``margin`` (an idea measured by
    studies/matching.py, not the engine's rule): at the Topic the best must also lead the second by
    this much; ``lead`` (another): lead the mean of the other candidates by this much. A best that is
    :data:`NONE` is no match."""
    found = {"actions": len(rows), "intended": 0, "null": 0, "recognised": 0, "false_match": 0, "wrong_candidate": 0}
    for order, cosines, want, state in rows:
        best, accepted = decide(order, cosines, threshold_at(state, tau, tau_study))
        if margin and state == "topic" and len(order) > 1:
            second = sorted(cosines.values(), reverse=True)[1]
            accepted = accepted and cosines[best] - second >= margin
        if lead and state == "topic" and len(order) > 1:
            others = [v for c, v in cosines.items() if c != best]
            accepted = accepted and cosines[best] - sum(others) / len(others) >= lead
        accepted = accepted and best != NONE
        found["intended" if want is not None else "null"] += 1
        found["recognised"] += accepted and want is not None and best == want
        found["false_match"] += accepted and want is None
        found["wrong_candidate"] += accepted and want is not None and best != want
    return found


def _share(n: int, of: int) -> float | None:
    return round(n / of, 4) if of else None


def rates(
    rows: list[Scored], tau: float, tau_study: float | None = None, margin: float = 0.0, lead: float = 0.0
) -> dict:
    """The matching study's rates (studies/matching.py), by which the shipped thresholds were
    chosen: recognised and wrong of the intended moves, and false of all actions (``false_match``
    here counts every accepted match to anything but the intended candidate, wrong candidates
    included, over every action). The instrument's rates, each over the actions it can happen to,
    are :func:`validity`'s. Arguments as :func:`tallies`."""
    t = tallies(rows, tau, tau_study, margin, lead)
    return {
        "tau": tau,
        "tau_study": tau_study if tau_study is not None else tau,
        "recognised": _share(t["recognised"], t["intended"]),
        "false_match": _share(t["false_match"] + t["wrong_candidate"], t["actions"]),
        "wrong_candidate": _share(t["wrong_candidate"], t["intended"]),
        "actions": t["actions"],
        "intended": t["intended"],
    }


def validity(rows: list[Scored], tau: float, tau_study: float | None = None) -> dict:
    """The instrument's rates: recognised and wrong candidate over the intended moves
    (``n_intended``), false match over the actions that mean no candidate (``n_null``), each with
    its count (``counts``); ``false_of_all`` is the study's criterion (:func:`rates`), kept beside
    them."""
    t = tallies(rows, tau, tau_study)
    return {
        "recognised": _share(t["recognised"], t["intended"]),
        "false_match": _share(t["false_match"], t["null"]),
        "wrong_candidate": _share(t["wrong_candidate"], t["intended"]),
        "false_of_all": _share(t["false_match"] + t["wrong_candidate"], t["actions"]),
        "counts": {key: t[key] for key in RATES},
        "actions": t["actions"],
        "intended": t["intended"],
        "n_intended": t["intended"],
        "n_null": t["null"],
    }


def meets_goal(found: dict) -> bool:
    """Within the goal's bounds on false and wrong-candidate matches (5% and 2%), as an idea's
    thresholds must be on the calibration trees (the study's rates: false of all actions)."""
    return found["false_match"] <= GOAL["false_match"] and (found["wrong_candidate"] or 0) <= GOAL["wrong_candidate"]


def anchors(item: dict, kind: str) -> list[tuple[str, list[str]]]:
    """Each candidate of the item's state with the texts that stand for it: its own text, and
    with ``hints`` its four hints (paraphrases of it by construction), with ``studies`` (at the
    Topic) its studies' texts; with ``+none`` (at the Topic) one more candidate, :data:`NONE`,
    the topic's own text, which an action that only restates the topic should be nearest to and
    which is never a match."""
    tree = resolve_tree(item["tree"])
    kind, none = kind.removesuffix("+none"), kind.endswith("+none")
    if item["state"] == "topic":
        targets = [(s.id, [s.text], list(s.hints), [st.text for st in s.studies]) for s in tree.subtopics]
    else:
        targets = [(st.id, [st.text], list(st.hints), []) for st in tree.subtopic[item["subtopic"]].studies]
    extra = {"text": lambda h, st: [], "hints": lambda h, st: h, "studies": lambda h, st: st}[kind]
    found = [(cid, text + extra(hints, studies)) for cid, text, hints, studies in targets]
    return found + [(NONE, [tree.topic])] if none and item["state"] == "topic" else found


def _embedded(embedder: Any, actions: list[str], texts: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The vectors of the candidates' ``texts`` and of the ``actions``, each text embedded once: an
    embedder that embeds an agent's text as a query (``embed_queries``) embeds the actions so, any
    other embeds actions and texts in one batch (as every recorded episode was scored)."""
    actions = list(dict.fromkeys(actions))
    if embeds_queries_apart(embedder):
        texts = list(dict.fromkeys(texts))
        queries = dict(zip(actions, embed_actions(embedder, actions), strict=True))
        return dict(zip(texts, embedder.embed(texts), strict=True)), queries
    everything = list(dict.fromkeys(actions + texts))
    vectors = dict(zip(everything, embedder.embed(everything), strict=True))
    return vectors, vectors


def anchored(items: list[dict], embedder: Any, kind: str = "text", how: str = "max") -> list[Scored]:
    """Each item's candidates scored over their anchors (:func:`anchors`): the best cosine
    (``max``) or the mean of the best two (``top2``). ``text`` with ``max`` is the paper's rule:
    one cosine with each candidate's own text. An embedder that embeds an agent's text as a query
    (``embed_queries``) embeds the actions so; any other embeds every text in one batch."""
    import numpy as np

    texts = [a for it in items for _, xs in anchors(it, kind) for a in xs]
    vectors, queries = _embedded(embedder, [it["action"] for it in items], texts)
    out = []
    for it in items:
        action = queries[it["action"]]
        cosines = {}
        for cid, xs in anchors(it, kind):
            c = sorted((float(vectors[x] @ action) for x in xs), reverse=True)
            cosines[cid] = c[0] if how == "max" else float(np.mean(c[:2]))
        out.append((list(cosines), cosines, it["intended"], it["state"]))
    return out


def candidate_order(item: dict) -> list[str]:
    """The candidates of the item's state in the engine's order."""
    tree = resolve_tree(item["tree"])
    if item["state"] == "topic":
        return [s.id for s in tree.subtopics]
    return [st.id for st in tree.subtopic[item["subtopic"]].studies]


def engine_cosines(items: list[dict], embedder: Any) -> list[dict[str, float]]:
    """Each item's cosines with the fitted rule's anchors (core/game/matching.py: the candidates'
    texts and hints, the topic's text), keyed and rounded as the engine keys and rounds them."""
    keyed = [match_anchors(resolve_tree(it["tree"]), it["state"], it.get("subtopic"), fitted=True) for it in items]
    vectors, queries = _embedded(embedder, [it["action"] for it in items], [t for found in keyed for _, t in found])
    return [
        {key: round(float(vectors[t] @ queries[it["action"]]), 6) for key, t in found}
        for it, found in zip(items, keyed, strict=True)
    ]


def fitted_rows(items: list[dict], cosines: list[dict[str, float]], rule: dict) -> list[Scored]:
    """Each item decided by the fitted ``rule`` through the engine's own reading
    (``core.game.matching.read_match``), as rows :func:`rates` counts with the rule's thresholds: the
    best candidate carries the rule's probability, the others 0."""
    out: list[Scored] = []
    for it, cos in zip(items, cosines, strict=True):
        order = candidate_order(it)
        reading = read_match(order, cos, it["state"], 0.0, rule)
        assert reading.rule is not None
        p = reading.rule["probability"]
        out.append((order, {c: (p if c == reading.best else 0.0) for c in order}, it["intended"], it["state"]))
    return out


def study_threshold(calibrate: list[Scored], tau: float) -> float:
    """The Subtopic state's threshold chosen on the calibration half's Subtopic actions, the state
    it governs: the one (on a 0.01 grid) that recognises the most intended moves there with at
    most 5% false matches of all actions there (:func:`rates`), the highest of equals (``tau`` when
    none does). DEFAULT_TAU_STUDY
    of core/players/embed.py is this for the local and nomic embedders (tests/test_matching_set.py
    re-derives it)."""
    at_subtopic = [r for r in calibrate if r[3] == "subtopic"]
    found = [rates(at_subtopic, tau, ts) for ts in TAUS]
    ok = [r for r in found if r["false_match"] is not None and r["false_match"] <= GOAL["false_match"]]
    return max(ok, key=lambda r: (r["recognised"] or 0, r["tau_study"]))["tau_study"] if ok else tau


def topic_threshold(calibrate: list[Scored]) -> float:
    """The lowest threshold (on a 0.01 grid) whose false matches of all actions (:func:`rates`) on
    the calibration half are at most 5%: the Topic threshold of an embedder that has no default,
    and nomic's."""
    safe = [r["tau"] for r in (rates(calibrate, t) for t in TAUS) if (r["false_match"] or 0) <= GOAL["false_match"]]
    return min(safe) if safe else max(TAUS)


def over_trees(
    rows: list[tuple[Scored, str]],
    state: str,
    tau: float,
    tau_study: float,
    draws: int = 2000,
    count: Callable[[list[Scored], float, float], dict] = rates,
) -> dict:
    """95% intervals for the rates at ``state`` that resample whole trees: the 2.5th and 97.5th
    percentiles of each rate over ``draws`` resamples of the trees with replacement (seed 0).
    ``count`` is what counts them: the study's :func:`rates` or the instrument's :func:`validity`."""
    import numpy as np

    by_tree: dict[str, list[Scored]] = {}
    for r, tree in rows:
        if r[3] == state:
            by_tree.setdefault(tree, []).append(r)
    trees = sorted(by_tree)
    rng = np.random.default_rng(0)
    found: dict[str, list[float]] = {key: [] for key in RATES}
    for _ in range(draws):
        picked = [r for k in rng.integers(0, len(trees), len(trees)) for r in by_tree[trees[k]]]
        got = count(picked, tau, tau_study)
        for key, values in found.items():
            if got[key] is not None:
                values.append(got[key])
    return {
        "trees": len(trees),
        "draws": draws,
        **{
            key: [round(float(np.percentile(v, 2.5)), 4), round(float(np.percentile(v, 97.5)), 4)] if v else None
            for key, v in found.items()
        },
    }


def measure_matcher(
    embedder: Any,
    tau: float | None = None,
    tau_study: float | None = None,
    labels: Path = LABELS,
    draws: int = 2000,
    rule: str = "paper",
) -> dict:
    """A match rule with ``embedder`` on the labelled actions: per state, the calibration and
    held-out rates with intervals over trees. The paper's rule at ``tau``/``tau_study`` when
    given, else at the embedder's defaults, else at the thresholds the calibration trees choose
    (those are reported in every case, as ``chosen``); the fitted rule (``rule="fitted"``) with
    the coefficients and probability thresholds shipped for the embedder, which were chosen on the
    calibration trees when it was fitted (reported as ``tau``/``tau_study``)."""
    items = read_labels(labels)
    if rule == "fitted":
        if tau is not None or tau_study is not None:
            raise MatchRuleError("--tau/--tau-study: the fitted rule decides by its own probability thresholds")
        fitted = fitted_rule(embedder.id)
        rows = fitted_rows(items, engine_cosines(items, embedder), fitted)
        tau, tau_study = fitted["topic"]["threshold"], fitted["subtopic"]["threshold"]
        chosen = {"tau": tau, "tau_study": tau_study}
        source = "the fitted rule's probability thresholds"
        return _measured(items, rows, embedder.id, "fitted-1", tau, tau_study, source, chosen, labels, draws)
    rows = anchored(items, embedder, "text", "max")
    calibrate = [r for r, it in zip(rows, items, strict=True) if it["split"] == "calibrate"]
    chosen_tau = topic_threshold(calibrate)
    chosen = {"tau": chosen_tau, "tau_study": study_threshold(calibrate, chosen_tau)}
    if tau is not None:
        source = "given"
    elif embedder.id in DEFAULT_TAU:
        source, tau = "the embedder's defaults", DEFAULT_TAU[embedder.id][0]
    else:
        source, tau = "chosen on the calibration trees", chosen["tau"]
    if tau_study is None:
        if embedder.id in DEFAULT_TAU_STUDY and source == "the embedder's defaults":
            tau_study = DEFAULT_TAU_STUDY[embedder.id][0]
        else:
            tau_study = study_threshold(calibrate, tau)
    return _measured(items, rows, embedder.id, "paper", tau, tau_study, source, chosen, labels, draws)


def _measured(
    items: list[dict],
    rows: list[Scored],
    embedder_id: str,
    rule: str,
    tau: float,
    tau_study: float,
    source: str,
    chosen: dict,
    labels: Path,
    draws: int,
) -> dict:
    """Per state, the calibration and held-out rates of decided ``rows`` with intervals over trees."""
    found: dict[str, Any] = {
        "embedder": embedder_id,
        "rule": rule,
        "tau": tau,
        "tau_study": tau_study,
        "thresholds": source,
        "chosen": chosen,
        "labels": labels.name,
        "actions": len(items),
        "goal": {k: round(v, 4) for k, v in GOAL.items()},
    }
    for state in ("topic", "subtopic"):
        found[state] = {}
        for name, split in (("calibration", "calibrate"), ("held_out", "held-out")):
            picked = [(r, it["tree"]) for r, it in zip(rows, items, strict=True) if it["split"] == split]
            at = validity([r for r, _ in picked if r[3] == state], tau, tau_study)
            found[state][name] = {**at, "intervals": over_trees(picked, state, tau, tau_study, draws, validity)}
    return found
