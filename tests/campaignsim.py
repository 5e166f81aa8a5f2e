"""Simulated campaigns whose truth is known, to measure the intervals and the paired test of
``warehouse/bootstrap.py`` (docs/DECISIONS.md #25, #26): ``tests/test_bootstrap.py`` checks the
coverage and the test's size on them, and ``bench/intervals.py`` writes the full tables.

A campaign is the paper's design: T papers, runs per paper; a paper's own mean is drawn around
the true mean (between-paper spread sigma_b), each run around its paper's mean (within-paper
spread sigma_w), and the estimate is the mean over papers of per-paper means, as in Table 2. The
estimand is the true mean over the population of papers. Kinds:

- ``normal``: the above, every paper with the same number of runs;
- ``unbalanced``: papers with 1 to ``runs`` runs each (cells that failed or were cut short);
- ``skewed``: paper means from a log-normal (a few papers far above the rest, as coverage
  often is), scaled so that the population mean is the true mean;
- ``bernoulli``: 0/1 runs (a fake spotted or not) with paper-level probabilities ~ Beta(2, 3).

For the paired test, the papers' true differences B - A are drawn around 0 (spread sigma_b)
and each pair around its paper's difference: the null is true on average over papers, while
single papers differ, which is what made flipping single pairs reject far too often.
"""

from __future__ import annotations

import dataclasses

import numpy as np

TRUE_MEAN = 0.4


@dataclasses.dataclass(frozen=True)
class Design:
    name: str
    papers: int
    runs: int
    sigma_b: float
    sigma_w: float
    kind: str = "normal"


DESIGNS = [
    Design("2 papers, 3 runs", 2, 3, 0.15, 0.08),
    Design("3 papers, 3 runs", 3, 3, 0.15, 0.08),
    Design("5 papers, 3 runs", 5, 3, 0.15, 0.08),
    Design("7 papers, 3 runs", 7, 3, 0.15, 0.08),
    Design("10 papers, 3 runs", 10, 3, 0.15, 0.08),
    Design("IT-18-like, between-paper spread dominates", 18, 3, 0.15, 0.08),
    Design("IT-18-like, equal spreads", 18, 3, 0.10, 0.10 * 3**0.5),
    Design("IT-18-like, within-paper spread dominates", 18, 3, 0.05, 0.20),
    Design("3 papers, 1-6 runs (unbalanced)", 3, 6, 0.15, 0.15, "unbalanced"),
    Design("10 papers, 1-6 runs (unbalanced)", 10, 6, 0.15, 0.15, "unbalanced"),
    Design("5 papers, skewed paper means (log-normal)", 5, 3, 0.0, 0.08, "skewed"),
    Design("10 papers, skewed paper means (log-normal)", 10, 3, 0.0, 0.08, "skewed"),
    Design("18 papers, skewed paper means (log-normal)", 18, 3, 0.0, 0.08, "skewed"),
    Design("18 papers, 0/1 outcomes, p ~ Beta(2, 3)", 18, 3, 0.0, 0.0, "bernoulli"),
]

PAIRED_DESIGNS = [
    Design("3 papers, 3 pairs each", 3, 3, 0.10, 0.05),
    Design("5 papers, 3 pairs each", 5, 3, 0.10, 0.05),
    Design("10 papers, 3 pairs each", 10, 3, 0.10, 0.05),
    Design("18 papers, 3 pairs each", 18, 3, 0.10, 0.05),
    Design("18 papers, 1-6 pairs each (unbalanced)", 18, 6, 0.10, 0.05, "unbalanced"),
]


def campaign(rng: np.random.Generator, d: Design) -> tuple[list[str], list[float]]:
    """(tree of each episode, its value) for one simulated campaign of design ``d``."""
    if d.kind == "bernoulli":
        probs = rng.beta(2, 3, d.papers)  # mean 0.4
        values = (rng.random((d.papers, d.runs)) < probs[:, None]).astype(float)
        return [f"p{i}" for i in range(d.papers) for _ in range(d.runs)], list(values.ravel())
    if d.kind == "skewed":
        means = TRUE_MEAN * np.exp(rng.normal(0, 1, d.papers) - 0.5)  # E[exp(N(0,1))] = e^0.5
    else:
        means = TRUE_MEAN + rng.normal(0, d.sigma_b, d.papers)
    runs = rng.integers(1, d.runs + 1, d.papers) if d.kind == "unbalanced" else np.full(d.papers, d.runs)
    trees, values = [], []
    for i, (mean, n) in enumerate(zip(means, runs, strict=False)):
        trees += [f"p{i}"] * int(n)
        values += list(mean + rng.normal(0, d.sigma_w, int(n)))
    return trees, values


def coverage(boot, d: Design, campaigns: int, seed: int = 2026) -> tuple[float, float]:
    """(share of campaigns whose interval covers the true mean, median interval width)."""
    rng = np.random.default_rng(seed)
    covered, widths = 0, []
    for _ in range(campaigns):
        r = boot.mean(*campaign(rng, d))
        covered += r["ci_low"] <= TRUE_MEAN <= r["ci_high"]
        widths.append(r["ci_high"] - r["ci_low"])
    return covered / campaigns, float(np.median(widths))


def paired_rejections(test, d: Design, campaigns: int, seed: int = 2026, level: float = 0.05) -> float:
    """The share of null campaigns (true mean difference 0) where ``test(trees, differences)``
    gives p < ``level``: the test's size, which should be ``level``."""
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(campaigns):
        # A paper's true difference, then its pairs around it: the same shape as a campaign.
        trees, values = campaign(rng, dataclasses.replace(d, kind="unbalanced" if d.kind == "unbalanced" else "normal"))
        differences = [v - TRUE_MEAN for v in values]  # centred: the papers' differences average to 0
        rejected += test(trees, differences) < level
    return rejected / campaigns


def pair_level_flips(permutations: int = 2000, seed: int = 0):
    """The test as it was before (#26 as first written): signs flipped pair by pair, the run as
    the unit. Kept to measure what the paper-level test fixed."""

    def test(trees, differences) -> float:
        codes = np.unique(np.asarray(trees), return_inverse=True)[1]
        n_trees = codes.max() + 1
        sizes = np.bincount(codes)
        w = np.asarray(differences) / (sizes[codes] * n_trees)
        observed = abs(w.sum())
        signs = np.random.default_rng(seed).integers(0, 2, size=(permutations, len(w))) * 2 - 1
        return (int((np.abs(signs @ w) >= observed - 1e-12).sum()) + 1) / (permutations + 1)

    return test
