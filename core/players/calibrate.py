"""Embedding checks on trees: hint monotonicity (Eq. 6) and the choice of tau (Eq. 4).

Targets are every subtopic (matched at Topic) and every study (matched at
Subtopic). For each target o with hints h1..h4 we measure cos(E(h_i), E(o)).

How a tau is recommended (DECISIONS.md #1): the level-4 hint names the intended
action outright, so an agent that repeats it must be accepted; the level-1 hint
is a deliberately vague pointer, and accepting replies that vague would make
the game trivial. The recommended tau is the midpoint between the 90th
percentile of level-1 cosines and the 10th percentile of level-4 cosines,
rounded to 0.05. Cross-target cosines (a target's text against the other
candidates of the same state) are reported beside it: above tau they mean two
candidates are hard to tell apart, which argmax (Eq. 3) resolves but a reader
should know.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Sequence

from inquitree.core.game import Tree

if TYPE_CHECKING:  # NumPy is imported where vectors are made: a face imports this module at start-up
    import numpy as np


def is_monotone(cosines: Sequence[float]) -> bool:
    """Eq. 6: every hint level strictly closer to its target than the level before."""
    return all(cosines[i] < cosines[i + 1] for i in range(len(cosines) - 1))


def hint_cosines(embedder, target: str, hints: Sequence[str]) -> list[float]:
    """cos(E(h_i), E(target)) for each hint, in one embedding call."""
    vecs = embedder.embed([target, *hints])
    return [float(vecs[0] @ v) for v in vecs[1:]]


@dataclasses.dataclass(frozen=True)
class TargetCosines:
    kind: str  # "subtopic" | "study"
    id: str
    hint_cosines: tuple[float, float, float, float]
    max_cross: float  # highest cosine to another candidate of the same state

    @property
    def monotone(self) -> bool:
        return is_monotone(self.hint_cosines)


@dataclasses.dataclass(frozen=True)
class TreeCalibration:
    tree_id: str
    embedder_id: str
    targets: tuple[TargetCosines, ...]

    def level(self, i: int) -> list[float]:
        return [t.hint_cosines[i - 1] for t in self.targets]

    @property
    def cross(self) -> list[float]:
        return [t.max_cross for t in self.targets]

    @property
    def violations(self) -> list[TargetCosines]:
        return [t for t in self.targets if not t.monotone]


def _cos_matrix(embedder, texts: Sequence[str]) -> np.ndarray:
    v = embedder.embed(list(texts))
    return v @ v.T


def calibrate_tree(tree: Tree, embedder) -> TreeCalibration:
    groups: list[tuple[str, list]] = [("subtopic", list(tree.subtopics))]
    groups += [("study", list(s.studies)) for s in tree.subtopics]
    # one embedding call for the whole tree
    texts: list[str] = []
    for _, targets in groups:
        for t in targets:
            texts.append(t.text)
            texts.extend(t.hints)
    vecs = embedder.embed(texts)
    out: list[TargetCosines] = []
    k = 0
    for kind, targets in groups:
        idx = []
        for t in targets:
            idx.append(k)
            k += 1 + len(t.hints)
        for j, t in enumerate(targets):
            o = vecs[idx[j]]
            h = [float(vecs[idx[j] + 1 + i] @ o) for i in range(len(t.hints))]
            hints = (h[0], h[1], h[2], h[3])
            cross = [float(vecs[idx[m]] @ o) for m in range(len(targets)) if m != j]
            out.append(TargetCosines(kind, t.id, hints, max(cross) if cross else float("nan")))
    return TreeCalibration(tree.id, embedder.id, tuple(out))


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    vals = [v for v in values if not math.isnan(v)]
    return float(np.percentile(vals, q)) if vals else float("nan")


def recommend_tau(calibrations: Sequence[TreeCalibration]) -> float:
    h1 = [c for cal in calibrations for c in cal.level(1)]
    h4 = [c for cal in calibrations for c in cal.level(4)]
    mid = (percentile(h1, 90) + percentile(h4, 10)) / 2
    return round(round(mid / 0.05) * 0.05, 2)


def summary_rows(cal: TreeCalibration) -> list[tuple[str, float, float, float]]:
    """(what, mean, min, max) for h1..h4 and the cross-target cosines."""
    import numpy as np

    rows = []
    for i in range(1, 5):
        v = cal.level(i)
        rows.append((f"h{i}", float(np.mean(v)), min(v), max(v)))
    cross = [c for c in cal.cross if not math.isnan(c)]
    if cross:
        rows.append(("cross-target", float(np.mean(cross)), min(cross), max(cross)))
    return rows
