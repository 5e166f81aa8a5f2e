"""How well a judge reads conclusions: the 150 conclusion items InquiTree ships
(``core/data/judging/qwen-conclusions.jsonl``, read by hand as credited, partial or absent; how in
the README beside it), each judged again by the judge under test from the agent's own submitted
items (``qwen-conclusions-submitted.jsonl``, taken from the study's exported episodes), and
counted against the reading: exact agreement, Cohen's kappa over the three categories with an
interval that resamples trees, and the confusion table. Any judge of the registry can be measured
so: an embedding judge with thresholds of its own, or a chat model (``openai:MODEL``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from inquitree.core.game import resolve_tree

if TYPE_CHECKING:
    pass

DATA = Path(__file__).resolve().parent.parent / "data" / "judging"
LABELS = DATA / "qwen-conclusions.jsonl"
SUBMITTED = DATA / "qwen-conclusions-submitted.jsonl"
CATEGORIES = ("absent", "partial", "credited")
SCORE = {0.0: "absent", 0.6: "partial", 1.0: "credited"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def agreement(pairs: list[tuple[str, str]], categories: tuple[str, ...] = CATEGORIES) -> dict:
    """Exact agreement, Cohen's kappa and the confusion table of (reading, judge) pairs (or of
    any two readings over ``categories``)."""
    n = len(pairs)
    table = {r: {j: sum(1 for a, b in pairs if (a, b) == (r, j)) for j in categories} for r in categories}
    if not n:
        return {"items": 0, "agreement": None, "kappa": None, "confusion": table}
    kappa = _kappa(pairs, categories)
    return {
        "items": n,
        "agreement": round(sum(table[c][c] for c in categories) / n, 4),
        "kappa": round(kappa, 4) if kappa is not None else None,
        "confusion": table,
    }


def _kappa(pairs: list[tuple[str, str]], categories: tuple[str, ...]) -> float | None:
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    expected = sum((sum(a == c for a, _ in pairs) / n) * (sum(b == c for _, b in pairs) / n) for c in categories)
    return (observed - expected) / (1 - expected) if expected < 1 else None


def kappa_over_trees(pairs_by_tree: dict[str, list[tuple[str, str]]], draws: int = 2000) -> list[float] | None:
    """A 95% interval for kappa that resamples whole trees (the items of one tree are one model's
    conclusions about one paper): percentiles of ``draws`` resamples with replacement, seed 0. A
    resample where kappa is undefined (every pair in one category) is left out."""
    import numpy as np

    trees = sorted(pairs_by_tree)
    if len(trees) < 2:
        return None
    rng = np.random.default_rng(0)
    found = []
    for _ in range(draws):
        picked = [p for k in rng.integers(0, len(trees), len(trees)) for p in pairs_by_tree[trees[k]]]
        value = _kappa(picked, CATEGORIES)
        if value is not None:
            found.append(value)
    return [round(float(np.percentile(found, 2.5)), 4), round(float(np.percentile(found, 97.5)), 4)] if found else None


def category(score: float | None) -> str | None:
    """A verdict's category; None for a failed verdict (no score)."""
    return None if score is None else SCORE.get(round(float(score), 1))


def measure_judge(
    judge: Any,
    labels: Path = LABELS,
    submitted: Path = SUBMITTED,
    draws: int = 2000,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """``judge`` on every labelled item, per split (``calibration``, ``held_out``): agreement,
    kappa with its interval over trees, the confusion table, and how many verdicts failed (a
    failed verdict is left out of the agreement and counted in ``failed``)."""
    items = read_jsonl(labels)
    conclusions = {r["episode"]: r for r in read_jsonl(submitted)}
    wanted: dict[str, list[dict]] = {}
    for it in items:
        wanted.setdefault(it["episode"], []).append(it)
    verdicts: dict[tuple[str, str], str | None] = {}
    for n, (episode, its) in enumerate(sorted(wanted.items()), 1):
        if episode not in conclusions:
            raise ValueError(f"{submitted}: no submitted conclusion of episode {episode!r} (needed by {labels.name})")
        whole = resolve_tree(conclusions[episode]["tree"])
        # only the labelled items are asked about: a model judge makes one call an item
        asked = {it["item"] for it in its}
        tree = dataclasses.replace(whole, conclusions=tuple(c for c in whole.conclusions if c.id in asked))
        got = {v.item_id: v.score for v in judge.judge(tree, list(conclusions[episode]["items"]))}
        for it in its:
            verdicts[(episode, it["item"])] = category(got.get(it["item"]))
        if progress:
            progress(n, len(wanted))
    found: dict[str, Any] = {
        "judge": judge.id,
        "labels": labels.name,
        "items": len(items),
        "episodes": len(wanted),
    }
    for name, split in (("calibration", "calibrate"), ("held_out", "held-out")):
        by_tree: dict[str, list[tuple[str, str]]] = {}
        failed = 0
        for it in items:
            if it["split"] != split:
                continue
            said = verdicts[(it["episode"], it["item"])]
            if said is None:
                failed += 1
                continue
            by_tree.setdefault(it["tree"], []).append((it["reading"], said))
        pairs = [p for ps in by_tree.values() for p in ps]
        found[name] = {**agreement(pairs), "failed": failed, "kappa_interval": kappa_over_trees(by_tree, draws)}
    return found


def submitted_items(episode_files: list[Path]) -> list[dict]:
    """Each exported episode's tree and submitted conclusion items (its ConclusionSubmitted event),
    in file-name order: how ``qwen-conclusions-submitted.jsonl`` is made from the study's episodes
    (tests/test_judging_set.py makes it again and compares)."""
    out = []
    for path in sorted(episode_files, key=lambda p: p.name):
        tree = items = None
        for line in path.open(encoding="utf-8"):
            event = json.loads(line)
            if event.get("type") == "EpisodeStarted":
                tree = event["payload"]["tree_id"]
            elif event.get("type") == "ConclusionSubmitted":
                items = event["payload"]["items"]
        if tree is not None and items is not None:
            out.append({"episode": path.stem, "tree": tree, "items": items})
    return out
