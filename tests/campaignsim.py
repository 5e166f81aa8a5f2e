"""Simulated campaigns whose truth is known, to measure the statistics of ``inquitree.stats``:
``tests/test_stats.py`` checks a few cells quickly, ``studies/stats_sim.py`` writes the full tables
(docs/statistics.md).

A campaign is T papers with runs per paper; each paper has its own true mean, each run its value
around it, and the estimand is the mean over the population of papers. The shapes are those the
benchmark produces and those the first intervals were found failing on:

- ``normal``: a metric in [0, 1] (coverage), paper means ~ N(0.5, 0.15), runs +- 0.08, 3 runs;
- ``unbalanced``: the same with 1 to 6 runs per paper (cells that failed or were cut short);
- ``floor70`` / ``floor50`` / ``ceiling70``: 70% (50%) of the papers at exactly 0 (or 1) in every
  run, as a weak agent scores; the rest ~ U(0.1, 0.9), each run a share of 6 subtopics;
- ``ushape``: paper difficulty ~ Beta(0.3, 0.3) (most papers all-or-nothing), runs a share of 6;
- ``nearceiling``: a strong agent that fails badly on a few papers: paper means ~ Beta(12, 0.4)
  (mean 0.968, a long left tail), each run a little below its paper's mean (|N(0, 0.01)|), none
  exactly at 1: skewed and close to a bound without sitting on it;
- ``skewed08`` / ``skewed05``: steps, paper means log-normal (sigma 0.8 or 0.5) around 30, runs
  log-normal (sigma 0.2) around their paper's mean: positive and unbounded above;
- ``rarebad``: a rare bad paper away from the bounds: paper means ~ N(0.7, 0.05), but one paper
  in twenty at 0.1; runs +- 0.03 (true mean 0.67).

Paired designs give the papers' true differences B - A and pairs around them (SD 0.05):

- ``paired-normal``: differences ~ N(0, 0.10), 3 pairs per paper;
- ``paired-unbalanced``: the same with 1 to 6 pairs;
- ``paired-asymmetric``: +0.30 on a quarter of the papers, -0.10 on the rest (mean 0);
- ``paired-lognormal``: strongly skewed effects, 0.1 (exp(N(0, 1)) - e^0.5) (mean 0, skewness 6.2).

``run_spread_campaign`` gives papers whose runs vary unequally (``--fixed-papers``), and
``skewed_gain_agents`` agents of which two are equal in truth (the rank intervals' designs).

``effect`` shifts every paper's difference (power); 0 is the null (size).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class Design:
    name: str
    truth: float
    bounds: tuple[float | None, float | None] | None
    what: str


DESIGNS = {
    d.name: d
    for d in [
        Design("normal", 0.5, (0.0, 1.0), "coverage-like, paper means ~ N(0.5, 0.15), 3 runs"),
        Design("unbalanced", 0.5, (0.0, 1.0), "as normal, 1-6 runs per paper"),
        Design("floor70", 0.15, (0.0, 1.0), "70% of papers at 0, the rest ~ U(0.1, 0.9)"),
        Design("floor50", 0.25, (0.0, 1.0), "50% of papers at 0, the rest ~ U(0.1, 0.9)"),
        Design("ceiling70", 0.85, (0.0, 1.0), "70% of papers at 1, the rest ~ U(0.1, 0.9)"),
        Design("ushape", 0.5, (0.0, 1.0), "paper difficulty ~ Beta(0.3, 0.3)"),
        Design(
            "nearceiling",
            12 / 12.4 - 0.01 * float(np.sqrt(2 / np.pi)),
            (0.0, 1.0),
            "paper means ~ Beta(12, 0.4), none at 1",
        ),
        Design("skewed08", 30.0, (0.0, None), "steps, paper means log-normal sigma 0.8"),
        Design("skewed05", 30.0, (0.0, None), "steps, paper means log-normal sigma 0.5"),
        Design("rarebad", 0.95 * 0.7 + 0.05 * 0.1, (0.0, 1.0), "paper means ~ N(0.7, 0.05), 1 in 20 at 0.1"),
    ]
}
PAIRED = {
    "paired-normal": "paper differences ~ N(0, 0.10), 3 pairs",
    "paired-unbalanced": "paper differences ~ N(0, 0.10), 1-6 pairs",
    "paired-asymmetric": "+0.30 on a quarter of papers, -0.10 on the rest (mean 0), 3 pairs",
    "paired-lognormal": "0.1 (exp(N(0, 1)) - e^0.5): skewness 6.2, mean 0, 3 pairs",
    "paired-heavy": "0.1 t(3) / sqrt(3): symmetric, heavy-tailed, SD 0.10, 3 pairs",
}
PAPERS = (2, 3, 5, 8, 12, 18)


def _share_of_six(rng: np.random.Generator, theta: np.ndarray, runs: np.ndarray) -> list[np.ndarray]:
    return [rng.binomial(6, t, int(r)) / 6 for t, r in zip(theta, runs, strict=True)]


def campaign(rng: np.random.Generator, design: str, papers: int) -> tuple[list[str], list[float]]:
    """(paper of each episode, its value) for one simulated campaign."""
    runs = rng.integers(1, 7, papers) if design == "unbalanced" else np.full(papers, 3)
    if design in ("normal", "unbalanced"):
        theta = rng.normal(0.5, 0.15, papers)
        values = [np.clip(t + rng.normal(0, 0.08, int(r)), 0, 1) for t, r in zip(theta, runs, strict=True)]
    elif design in ("floor70", "floor50", "ceiling70"):
        share = 0.5 if design == "floor50" else 0.7
        at = rng.random(papers) < share
        theta = np.where(at, 1.0 if design == "ceiling70" else 0.0, rng.uniform(0.1, 0.9, papers))
        values = _share_of_six(rng, theta, runs)
    elif design == "ushape":
        values = _share_of_six(rng, rng.beta(0.3, 0.3, papers), runs)
    elif design == "nearceiling":
        theta = rng.beta(12, 0.4, papers)
        values = [np.clip(t - np.abs(rng.normal(0, 0.01, int(r))), 0, 1) for t, r in zip(theta, runs, strict=True)]
    elif design == "rarebad":
        theta = np.where(rng.random(papers) < 0.05, 0.1, rng.normal(0.7, 0.05, papers))
        values = [np.clip(t + rng.normal(0, 0.03, int(r)), 0, 1) for t, r in zip(theta, runs, strict=True)]
    elif design in ("skewed08", "skewed05"):
        sigma = 0.8 if design == "skewed08" else 0.5
        means = 30 * np.exp(rng.normal(0, sigma, papers) - sigma**2 / 2)
        values = [m * np.exp(rng.normal(0, 0.2, int(r)) - 0.02) for m, r in zip(means, runs, strict=True)]
    else:
        raise ValueError(f"no design {design!r}")
    trees = [f"p{i}" for i, r in enumerate(runs) for _ in range(int(r))]
    return trees, [float(v) for vs in values for v in vs]


def paired_campaign(rng: np.random.Generator, design: str, papers: int, effect: float = 0.0):
    """(paper of each pair, its difference B - A) for one simulated paired campaign."""
    runs = rng.integers(1, 7, papers) if design == "paired-unbalanced" else np.full(papers, 3)
    if design in ("paired-normal", "paired-unbalanced"):
        truth = rng.normal(0, 0.10, papers)
    elif design == "paired-asymmetric":
        truth = np.where(rng.random(papers) < 0.25, 0.30, -0.10)
    elif design == "paired-lognormal":
        truth = 0.1 * (np.exp(rng.normal(0, 1, papers)) - np.exp(0.5))
    elif design == "paired-heavy":
        truth = 0.1 * rng.standard_t(3, papers) / np.sqrt(3)
    else:
        raise ValueError(f"no paired design {design!r}")
    truth = truth + effect
    trees = [f"p{i}" for i, r in enumerate(runs) for _ in range(int(r))]
    values = [float(v) for t, r in zip(truth, runs, strict=True) for v in t + rng.normal(0, 0.05, int(r))]
    return trees, values


def equal_agents(rng: np.random.Generator, agents: int, papers: int) -> tuple[list, list, list]:
    """(agent, paper, value) of ``agents`` agents that are equal in truth: every paper has its own
    difficulty, shared by all, and each agent's run on it varies around it."""
    difficulty = rng.normal(0.5, 0.15, papers)
    rows = [
        (f"agent{a}", f"p{p}", float(difficulty[p] + rng.normal(0, 0.08))) for a in range(agents) for p in range(papers)
    ]
    a, p, v = zip(*rows, strict=True)
    return list(a), list(p), list(v)


RUN_SPREADS = {
    "equal spreads": "every paper's runs +- 0.05, 3 runs",
    "one erratic paper": "one paper's runs +- 0.40, the rest +- 0.05, 3 runs",
    "noisy papers kept one run": "a quarter of the papers +- 0.40 with 1 run, the rest +- 0.05 with 3",
    "two runs, equal spreads": "every paper's runs +- 0.05, 2 runs",
    "two runs, one erratic paper": "one paper's runs +- 0.40, the rest +- 0.05, 2 runs",
}


def run_spread_campaign(rng: np.random.Generator, design: str, papers: int) -> tuple[list[str], list[float], float]:
    """(paper of each pair, its difference, the mean of these papers' true differences): papers
    whose true differences ~ N(0.05, 0.10) are fixed once drawn, and whose runs vary unequally
    (``RUN_SPREADS``): the estimand of ``--fixed-papers`` is the mean over these papers."""
    effects = rng.normal(0.05, 0.10, papers)
    sd, runs = np.full(papers, 0.05), np.full(papers, 3)
    if design.startswith("two runs"):
        runs[:] = 2
    if design in ("one erratic paper", "two runs, one erratic paper"):
        sd[0] = 0.40
    elif design == "noisy papers kept one run":
        noisy = np.arange(papers) < max(1, papers // 4)
        sd[noisy], runs[noisy] = 0.40, 1
    elif design not in ("equal spreads", "two runs, equal spreads"):
        raise ValueError(f"no run-spread design {design!r}")
    trees = [f"p{i}" for i, r in enumerate(runs) for _ in range(int(r))]
    values = [float(v) for e, s, r in zip(effects, sd, runs, strict=True) for v in e + rng.normal(0, s, int(r))]
    return trees, values, float(effects.mean())


RANK_TIES = {
    "4 agents 0.1 apart and a fifth equal to the second, its gains over it skewed": True,
    "4 agents 0.1 apart and a fifth equal to the second, its gains over it symmetric": False,
}


def skewed_gain_agents(rng: np.random.Generator, papers: int, skewed: bool) -> tuple[list, list, list, list]:
    """(agent, paper, value) of agents a0..a3 0.1 apart (a3 best) with a shared paper difficulty,
    and a4, equal in truth to a2, whose gain over a2 on each paper is 0.1 (exp(N(0, 1)) - e^0.5)
    (``skewed``) or N(0, 0.1): most papers a little worse, a few far better. Also each agent's
    true ranks as (best, worst) (a2 and a4 share ranks 2 and 3)."""
    difficulty = rng.normal(0, 0.1, papers)
    truth = [0.4, 0.5, 0.6, 0.7]
    rows = []
    for k, mean in enumerate(truth):
        rows += [(f"a{k}", f"p{p}", float(mean + difficulty[p] + rng.normal(0, 0.05))) for p in range(papers)]
    gains = 0.1 * (np.exp(rng.normal(0, 1, papers)) - np.exp(0.5)) if skewed else rng.normal(0, 0.1, papers)
    rows += [("a4", f"p{p}", float(0.6 + difficulty[p] + gains[p] + rng.normal(0, 0.05))) for p in range(papers)]
    a, p, v = zip(*rows, strict=True)
    ranks = [(5, 5), (4, 4), (2, 3), (1, 1), (2, 3)]
    return list(a), list(p), list(v), ranks


REDO_DESIGNS = {
    "baseline 0.20, +50%": "each paper's level-0 redo rate ~ Beta(4, 16), at level a 1.5 times it",
    "baseline 0.05, +100%": "each paper's level-0 redo rate ~ Beta(1, 19), at level a 0.05 more",
}


def redo_campaign(rng: np.random.Generator, design: str, papers: int, runs: int = 2) -> tuple[list, list, list, float]:
    """Fig. 3b's numbers (``REDO_DESIGNS``): for each paper a level-0 redo rate and a level-a one,
    ``runs`` episodes of each level, each with 1 + Poisson(5) result observations whose redo share
    is binomial at the paper's rate. Returns (paper, f, is_baseline) per episode and the true
    relative change of the mean rates over papers like these, in percent."""
    if design == "baseline 0.20, +50%":
        base = rng.beta(4, 16, papers)
        level, truth = np.minimum(1.0, 1.5 * base), 50.0  # 1.5 x Beta(4, 16) passes 1 with probability < 1e-9
    elif design == "baseline 0.05, +100%":
        base = rng.beta(1, 19, papers)
        level, truth = base + 0.05, 100.0
    else:
        raise ValueError(f"no redo design {design!r}")
    rows = []
    for p in range(papers):
        for rate, is_base in ((base[p], True), (level[p], False)):
            for _ in range(runs):
                m = 1 + int(rng.poisson(5))
                rows.append((f"p{p}", float(rng.binomial(m, rate)) / m, is_base))
    trees, f, is_base = (list(x) for x in zip(*rows, strict=True))
    return trees, f, is_base, truth


def run_shock_campaign(
    rng: np.random.Generator, papers: int, runs: int, shock: float
) -> tuple[list[str], list[str], list[float], float, float]:
    """(paper, run, value) of one agent on ``papers`` papers x ``runs`` runs whose every paper in a
    run shares that run's shock ~ N(0, ``shock``) (one API day, one seed reused across trees):
    paper effects ~ N(0.5, 0.15), each episode +- 0.05, clipped to [0, 1]. Two truths: 0.5, the
    mean over papers and runs like these (the clipping is symmetric about it), and the mean over
    papers like these played in these runs (their shocks fixed: each run's clipped normal mean)."""
    effects, shocks = rng.normal(0.5, 0.15, papers), rng.normal(0, shock, runs)
    values = np.clip(effects[:, None] + shocks[None, :] + rng.normal(0, 0.05, (papers, runs)), 0, 1)
    trees = [f"p{p}" for p in range(papers) for _ in range(runs)]
    run_ids = [f"r{r}" for _ in range(papers) for r in range(runs)]
    return trees, run_ids, [float(v) for v in values.ravel()], 0.5, _clipped_mean(0.5 + shocks, math.hypot(0.15, 0.05))


def _clipped_mean(mu: np.ndarray, sd: float) -> float:
    """The mean over ``mu`` of E[clip(X, 0, 1)] for X ~ N(mu, sd^2)."""
    a, b = -mu / sd, (1 - mu) / sd
    cdf = np.vectorize(lambda z: 0.5 * math.erfc(-z / math.sqrt(2)))
    pdf = np.exp(-(a**2) / 2) / math.sqrt(2 * math.pi), np.exp(-(b**2) / 2) / math.sqrt(2 * math.pi)
    inside = mu * (cdf(b) - cdf(a)) + sd * (pdf[0] - pdf[1])
    return float(np.mean(inside + (1 - cdf(b))))


def fake_spotting_campaign(
    rng: np.random.Generator, papers: int, randomness: int, runs: int = 2
) -> tuple[list, list, list, float]:
    """Fig. 3c's numbers: each paper's chance of spotting a fake ~ Beta(2, 3) (mean 0.4); each of
    ``runs`` episodes sees 1 + Poisson(5) results, each a fake with probability 0.1 ``randomness``,
    each fake spotted at the paper's chance. Returns (paper, spotted, shown) per episode and the
    truth, 0.4: the expected spotted over the expected shown for papers like these (the fakes a
    paper is shown do not depend on its chance)."""
    chance = rng.beta(2, 3, papers)
    rows = []
    for p in range(papers):
        for _ in range(runs):
            shown = int(rng.binomial(1 + int(rng.poisson(5)), 0.1 * randomness))
            rows.append((f"p{p}", float(rng.binomial(shown, chance[p])), float(shown)))
    trees, spotted, shown = (list(x) for x in zip(*rows, strict=True))
    return trees, spotted, shown, 0.4
