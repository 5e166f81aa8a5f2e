"""How the engine reads a free-text ACTION against the candidates of its state: the match rules.

Two rules, chosen per episode and recorded in its parameters (``Params.match_rule``), so that a
replay decides as the episode did:

- **the paper's** (Eq. 2-4, the default): one cosine between the action and each candidate's own
  text; the best candidate, accepted when its cosine reaches tau (``tau_study`` at the Subtopic).
- **fitted** (``fitted``, version 1): the action is also compared with each candidate's four hints
  (paraphrases of it by construction) and, at the Topic, with the topic's own text. A candidate's
  score is the best of its text and hints; the best candidate is accepted when a logistic rule over
  five numbers says a careful reader would agree: that score (``best``), its lead over the second
  candidate (``margin``) and over the others' mean (``lead``), the action's cosine with the topic
  (``topic``: a restatement of the topic names no subtopic) and the best candidate's own-text
  cosine (``text``, the paper's number). Coefficients and probability thresholds were fitted per
  state on the calibration trees of the labelled real actions (``core/data/matching``) by
  ``studies/matching.py``; the episode records them whole, so a later refit never changes a replay.

``anchors`` says what an action must be embedded against, ``read`` decides from those cosines;
the engine, ``trees match``, ``inquitree instrument measure`` and the matching study all decide through
``read``, so they cannot disagree (docs/instrument.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from inquitree.boundary.errors import InquiTreeError

if TYPE_CHECKING:
    from inquitree.core.game.tree import Tree

PAPER = "paper"
FITTED = "fitted"
RULES = (PAPER, FITTED)
FEATURES = ("best", "margin", "lead", "topic", "text")  # what the fitted rule reads of one action's cosines
HINT = "@hint"  # an anchor key: the candidate's id, this, the hint's level (s1@hint2)
TOPIC_TEXT = "@topic"  # the anchor key of the topic's own text (at the Topic, under the fitted rule)
FITTED_RULES = Path(__file__).resolve().parent.parent / "data" / "matching" / "rules.json"
_STATES = ("topic", "subtopic")


class MatchRuleError(InquiTreeError):
    pass


def best_candidate(order: list[str], cosines: dict[str, float]) -> str:
    """The candidate an ACTION matches best (Eq. 2): the highest cosine, the earlier candidate on a tie."""
    return max(order, key=lambda c: (cosines[c], -order.index(c)))


def decide(order: list[str], cosines: dict[str, float], threshold: float) -> tuple[str, bool]:
    """The paper's match decision (Eq. 2-4): the best candidate and whether it clears the
    threshold."""
    best = best_candidate(order, cosines)
    return best, cosines[best] >= threshold


def fitted_rule(embedder_id: str, path: Path = FITTED_RULES) -> dict[str, Any]:
    """The fitted rule shipped for ``embedder_id`` (``rules.json`` beside the labelled actions),
    checked; an embedder without one is refused with the embedders that have one."""
    shipped = json.loads(path.read_text(encoding="utf-8"))
    if embedder_id not in shipped:
        have = ", ".join(sorted(shipped)) or "none"
        raise MatchRuleError(
            f"--match-rule fitted: no rule is fitted for the embedder {embedder_id!r} (fitted for: {have}); "
            "studies/matching.py fits one on the labelled actions"
        )
    rule = dict(shipped[embedder_id])
    check_rule(rule)
    return rule


def check_rule(rule: dict[str, Any]) -> None:
    """Refuse a recorded or shipped fitted rule this version cannot apply, naming the field."""
    if rule.get("name") != FITTED or rule.get("version") != 1:
        raise MatchRuleError(
            f"match_rule: name {rule.get('name')!r} version {rule.get('version')!r}: this version knows "
            f"{FITTED!r} version 1 (or none: the paper's rule)"
        )
    if list(rule.get("features", [])) != list(FEATURES):
        raise MatchRuleError(f"match_rule.features {rule.get('features')!r}: expected {list(FEATURES)}")
    for state in _STATES:
        at = rule.get(state)
        if not isinstance(at, dict):
            raise MatchRuleError(f"match_rule.{state}: {at!r} is not an object with coefficients and threshold")
        coefficients, threshold = at.get("coefficients"), at.get("threshold")
        if (
            not isinstance(coefficients, list)
            or len(coefficients) != len(FEATURES) + 1
            or not all(_finite(c) for c in coefficients)
        ):
            raise MatchRuleError(
                f"match_rule.{state}.coefficients {coefficients!r}: expected {len(FEATURES) + 1} finite numbers "
                "(an intercept, then one a feature)"
            )
        if not _finite(threshold) or not 0 < threshold < 1:
            raise MatchRuleError(f"match_rule.{state}.threshold {threshold!r}: a probability in (0, 1)")


def _finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def match_anchors(tree: Tree, state: str, subtopic_id: str | None, fitted: bool) -> list[tuple[str, str]]:
    """What an action at ``state`` is compared with, as (key, text): each candidate's own text
    under its id (the subtopics at the Topic, the current subtopic's studies at the Subtopic);
    for the fitted rule also each candidate's hints (``id@hintK``) and, at the Topic, the topic's
    own text (``@topic``)."""
    if state == "topic":
        targets = [(s.id, s.text, s.hints) for s in tree.subtopics]
    else:
        assert subtopic_id is not None
        targets = [(st.id, st.text, st.hints) for st in tree.subtopic[subtopic_id].studies]
    found = [(cid, text) for cid, text, _ in targets]
    if not fitted:
        return found
    found += [(f"{cid}{HINT}{k}", h) for cid, _, hints in targets for k, h in enumerate(hints, 1)]
    return found + ([(TOPIC_TEXT, tree.topic)] if state == "topic" else [])


def features(order: list[str], cosines: dict[str, float]) -> tuple[str, list[float], dict[str, list[float]]]:
    """What the fitted rule reads of one action's cosines (keyed as :func:`anchors` keys them):
    the best candidate by the best of its text and hints, the values of :data:`FEATURES`, and
    each candidate's hint cosines."""
    hints = {c: [v for k, v in cosines.items() if k.startswith(f"{c}{HINT}")] for c in order}
    score = {c: max([cosines[c], *hints[c]]) for c in order}
    best = best_candidate(order, score)
    others = sorted((score[c] for c in order if c != best), reverse=True)
    values = [
        score[best],
        score[best] - others[0] if others else 0.0,
        score[best] - sum(others) / len(others) if others else 0.0,
        cosines.get(TOPIC_TEXT, 0.0),
        cosines[best],
    ]
    return best, values, hints


@dataclasses.dataclass(frozen=True)
class Reading:
    """One match decision, as MatchScored records it."""

    best: str
    accepted: bool
    best_cosine: float  # the best candidate's score: its cosine (paper), the best of text and hints (fitted)
    candidates: list[dict[str, Any]]  # [{"id", "cosine"[, "hints"]}] in candidate order
    rule: dict[str, Any] | None  # the fitted rule's numbers: topic cosine, features, probability, threshold


def probability(coefficients: list[float], values: list[float]) -> float:
    """The fitted rule's probability that accepting the best candidate is right (a logistic of
    the intercept plus each coefficient times its feature), computed without overflow."""
    z = coefficients[0] + sum(c * v for c, v in zip(coefficients[1:], values, strict=True))
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def read_match(order: list[str], cosines: dict[str, float], state: str, threshold: float, rule: dict | None) -> Reading:
    """The decision for the candidates ``order`` from the cosines of :func:`anchors`' keys:
    the paper's rule against ``threshold`` when ``rule`` is None, else the fitted rule at ``state``."""
    if rule is None:
        best, accepted = decide(order, cosines, threshold)
        return Reading(best, accepted, cosines[best], [{"id": c, "cosine": cosines[c]} for c in order], None)
    best, values, hints = features(order, cosines)
    at = rule[state]
    p = probability(at["coefficients"], values)
    found = {
        "name": rule["name"],
        "version": rule["version"],
        **({"topic_cosine": cosines[TOPIC_TEXT]} if TOPIC_TEXT in cosines else {}),
        "features": dict(zip(FEATURES, (round(v, 6) for v in values), strict=True)),
        "probability": round(p, 6),
        "threshold": at["threshold"],
    }
    candidates = [{"id": c, "cosine": cosines[c], "hints": hints[c]} for c in order]
    return Reading(best, p >= at["threshold"], values[0], candidates, found)


def recorded_cosines(candidates: list[dict[str, Any]], rule: dict[str, Any] | None) -> dict[str, float]:
    """The cosines a MatchScored event was decided from, keyed as :func:`anchors` keys them, so
    that a replay decides again from what was recorded."""
    found = {c["id"]: c["cosine"] for c in candidates}
    for c in candidates:
        found.update({f"{c['id']}{HINT}{k}": h for k, h in enumerate(c.get("hints", []), 1)})
    if rule and "topic_cosine" in rule:
        found[TOPIC_TEXT] = rule["topic_cosine"]
    return found


def decided(best_cosine: float | None, tau: float, accepted: bool, rule: dict[str, Any] | None, digits: int = 3) -> str:
    """How a recorded match was decided, for a note beside the transcript: the cosine against tau
    (the paper's rule), or the fitted rule's probability against its threshold."""
    if best_cosine is None:
        return "no action to match"
    if rule is None:
        return f"cos {best_cosine:.{digits}f} vs tau {tau}: {'accepted' if accepted else 'below tau'}"
    return (
        f"text and hints {best_cosine:.{digits}f}, fitted p {rule['probability']:.{digits}f} vs "
        f"{rule['threshold']}: {'accepted' if accepted else 'below the threshold'}"
    )
