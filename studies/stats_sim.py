"""Does every printed interval hold its rate? The statistics of ``inquitree.stats`` on simulated
campaigns whose truth is known (``tests/campaignsim.py``), in every design of docs/statistics.md at 2,
3, 5, 8, 12 and 18 papers:

    python studies/stats_sim.py [--campaigns 2000] [--before OLD_MODULE.py] [--out studies/results/stats_sim.json]

- intervals: per design and paper count, the share of campaigns that print a 95% interval, how
  often a printed one covers the true mean, the share of rows with a warning, the median width;
- paired: the sign-flip test's size (rejections at 5% under a true null), among all rows and
  among rows without a warning, and how often its interval covers the true difference;
- asymmetry: the paired test's size on the asymmetric null at 13 to 40 papers, where the
  symmetry warning may stop;
- power: how often it rejects a true difference of 0.10, beside what ``papers_needed`` predicts;
- family-wise error: 10 equal agents compared pairwise (45 tests) at 5, 12 and 18 papers, raw and
  after Holm's adjustment: the chance of at least one "significant" pair;
- ranks: 5 agents 0.05 apart and 6 agents 0.02 apart; how often each agent's rank interval holds
  its true rank, and how often every agent's interval holds at once, per agent and simultaneous;
- fixed papers: the interval about exactly these papers against the single-pair sign flip it
  replaced and the interval for papers like these, with equal and differing effects by paper;
- pilots: 30 pilots of 8 papers planned as `inquitree power --agents` plans, plainly and with
  the spreads at their 80% upper bound, and the true power of each plan;
- episode units: intervals whose units are episodes (``steps_bounds``: one tree a row, each
  episode a unit) on samples of 5 to 1,000 episodes drawn from the steps of episodes played here
  (the random and oracle agents on the three synthetic trees, randomness 0-9), whose mean is the
  truth: Cox's log-scale interval, the t interval, and what ``stats`` prints (Cox below
  ``COX_MAX_UNITS`` units).

``--before FILE`` also runs an older interval module's ``Bootstrap`` (a copy taken from git history,
where the warehouse computed its own intervals before ``inquitree.stats``) on the same campaigns,
for a before/after table. The results go to ``--out`` as JSON and a markdown table is printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import sys
import time
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree import stats

from campaignsim import (
    DESIGNS,
    PAIRED,
    PAPERS,
    RANK_TIES,
    REDO_DESIGNS,
    RUN_SPREADS,
    campaign,
    equal_agents,
    fake_spotting_campaign,
    paired_campaign,
    redo_campaign,
    run_shock_campaign,
    run_spread_campaign,
    skewed_gain_agents,
)


def _old(path: str | None):
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("old_intervals", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_intervals"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.Bootstrap()


def _prior(path: str | None):
    """An older ``stats.py`` (``git show COMMIT:stats.py > FILE``), run on the same campaigns as
    the shipped one for the before/after columns of the parts that name it; None without one."""
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("prior_stats", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["prior_stats"] = module
    spec.loader.exec_module(module)
    return module


def _t_interval(trees: list[str], values: list[float], bounds) -> tuple[float, float]:
    """The plain t interval on the paper means, clipped to the metric's range: the baseline the
    printed interval's width is measured against (zero width when the means do not spread)."""
    _, means, _ = stats.paper_means(trees, values)
    half = (
        stats.t_quantile(0.975, len(means) - 1) * float(means.std(ddof=1)) / len(means) ** 0.5
        if len(means) > 1
        else np.inf
    )
    low, high = bounds if bounds is not None else (None, None)
    lo, hi = float(means.mean()) - half, float(means.mean()) + half
    return max(lo, low) if low is not None else lo, min(hi, high) if high is not None else hi


def _hull(trees: list[str], values: list[float]) -> tuple[float, float]:
    """The score interval widened by the skew-corrected t interval on paper means in [0, 1], used
    whatever the share of papers at a bound: what the printed interval would be without the
    switch to the score interval alone (the whole range when the means do not spread)."""
    _, means, _ = stats.paper_means(trees, values)
    if means.std(ddof=1) <= 1e-12:
        return 0.0, 1.0
    return stats.score_and_skew(means)


def intervals(campaigns: int, before, prior=None) -> list[dict]:
    rows = []
    for name, design in DESIGNS.items():
        for papers in PAPERS:
            rng = np.random.default_rng(zlib.crc32(f"{name}/{papers}".encode()))
            printed = covered = warned = t_covered = unwarned = unwarned_covered = hull_covered = 0
            hull_widths = []
            widths, t_widths = [], []
            old_covered = old_zero = 0
            prior_covered = prior_printed = prior_warned = 0
            t0 = time.perf_counter()
            for _ in range(campaigns):
                trees, values = campaign(rng, name, papers)
                r = stats.mean_interval(trees, values, design.bounds)
                if prior is not None:
                    o = prior.mean_interval(trees, values, design.bounds)
                    prior_warned += o.warning is not None
                    if o.low is not None:
                        prior_printed += 1
                        prior_covered += o.low <= design.truth <= o.high
                warned += r.warning is not None
                if r.low is not None and r.high is not None:
                    printed += 1
                    covered += r.low <= design.truth <= r.high
                    unwarned += r.warning is None
                    unwarned_covered += r.warning is None and r.low <= design.truth <= r.high
                    widths.append(r.high - r.low)
                t_low, t_high = _t_interval(trees, values, design.bounds)
                if t_high > t_low:
                    t_widths.append(t_high - t_low)
                t_covered += t_low <= design.truth <= t_high
                if design.bounds == (0.0, 1.0):  # the hull of both parts, whatever the share at a bound
                    h_low, h_high = _hull(trees, values)
                    hull_covered += h_low <= design.truth <= h_high
                    hull_widths.append(h_high - h_low)
                if before is not None:
                    o = before.mean(trees, values)
                    if o["ci_low"] is not None:
                        old_covered += o["ci_low"] <= design.truth <= o["ci_high"]
                        old_zero += o["ci_high"] - o["ci_low"] < 1e-12
            row = {
                "design": name,
                "what": design.what,
                "papers": papers,
                "campaigns": campaigns,
                "printed": round(printed / campaigns, 4),
                "coverage": round(covered / printed, 4) if printed else None,
                "warned": round(warned / campaigns, 4),
                "coverage_unwarned": round(unwarned_covered / unwarned, 4) if unwarned else None,
                "median_width": round(float(np.median(widths)), 4) if widths else None,
                "t_coverage": round(t_covered / campaigns, 4),
                "t_median_width": round(float(np.median(t_widths)), 4) if t_widths else None,
                "width_vs_t": round(float(np.median(widths) / np.median(t_widths)), 2) if widths and t_widths else None,
                "hull_coverage": round(hull_covered / campaigns, 4) if hull_widths else None,
                "hull_width_vs_t": round(float(np.median(hull_widths) / np.median(t_widths)), 2)
                if hull_widths and t_widths
                else None,
                "seconds": round(time.perf_counter() - t0, 1),
            }
            if before is not None:
                row["before_coverage"] = round(old_covered / campaigns, 4)
                row["before_zero_width"] = round(old_zero / campaigns, 4)
            if prior is not None:
                row["prior_coverage"] = round(prior_covered / prior_printed, 4) if prior_printed else None
                row["prior_warned"] = round(prior_warned / campaigns, 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


@dataclasses.dataclass
class Tally:
    """Rejections of a test over campaigns, and how many came in rows without a warning: the
    size, the share warned and the size where the warning is silent, as the tables report them."""

    campaigns: int
    rejected: int = 0
    warned: int = 0
    unwarned: int = 0
    unwarned_rejected: int = 0

    def add(self, rejected: bool, warning: str | None) -> None:
        self.rejected += rejected
        self.warned += warning is not None
        if warning is None:
            self.unwarned += 1
            self.unwarned_rejected += rejected

    def shares(self) -> dict:
        return {
            "size": round(self.rejected / self.campaigns, 4),
            "warned": round(self.warned / self.campaigns, 4),
            "size_unwarned": round(self.unwarned_rejected / self.unwarned, 4) if self.unwarned else None,
        }


def paired(campaigns: int, before) -> list[dict]:
    rows = []
    for name in (n for n in PAIRED if n not in ("paired-lognormal", "paired-heavy")):  # from 30 papers: skewed_null
        for papers in sorted(set(PAPERS) | {7, 9}):
            rng = np.random.default_rng(zlib.crc32(f"{name}/{papers}/paired".encode()))
            tally, printed, covered = Tally(campaigns), 0, 0
            old_rejected = old_disagree = 0
            t0 = time.perf_counter()
            for _ in range(campaigns):
                trees, diffs = paired_campaign(rng, name, papers)
                r = stats.paired_test(trees, diffs)
                significant = r.p is not None and r.p <= stats.ALPHA
                tally.add(significant, r.warning)
                if r.low is not None and r.high is not None:
                    printed += 1
                    covered += r.low <= 0.0 <= r.high
                    assert (r.low <= 0.0 <= r.high) == (not significant), "test and interval disagree"
                if before is not None:
                    p = before.sign_flip_p(trees, diffs)
                    o = before.mean(trees, diffs)
                    old_rejected += p < stats.ALPHA
                    if o["ci_low"] is not None:
                        old_disagree += (p < stats.ALPHA) == (o["ci_low"] <= 0 <= o["ci_high"])
            row = {
                "design": name,
                "what": PAIRED[name],
                "papers": papers,
                "campaigns": campaigns,
                **tally.shares(),
                "interval_printed": round(printed / campaigns, 4),
                "interval_coverage": round(covered / printed, 4) if printed else None,
                "seconds": round(time.perf_counter() - t0, 1),
            }
            if before is not None:
                row["before_size"] = round(old_rejected / campaigns, 4)
                row["before_disagree"] = round(old_disagree / campaigns, 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


# Beyond PAPERS: where the paired test's size holds on the asymmetric null, which is where the
# symmetry warning (stats.SYMMETRY_PAPERS) may stop.
ASYMMETRY_PAPERS = (13, 14, 15, 16, 18, 21, 22, 24, 26, 28, 30, 34, 40)


def asymmetry(campaigns: int) -> list[dict]:
    rows = []
    for papers in ASYMMETRY_PAPERS:
        rng = np.random.default_rng(zlib.crc32(f"paired-asymmetric/{papers}/asym".encode()))
        rejected, t0 = 0, time.perf_counter()
        for _ in range(campaigns):
            trees, diffs = paired_campaign(rng, "paired-asymmetric", papers)
            r = stats.paired_test(trees, diffs)
            rejected += r.p is not None and r.p <= stats.ALPHA
        size = rejected / campaigns
        row = {
            "papers": papers,
            "campaigns": campaigns,
            "size": round(size, 4),
            "size_se": round((size * (1 - size) / campaigns) ** 0.5, 4),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def power(campaigns: int) -> list[dict]:
    rows = []
    effect, sd_between, sd_within = 0.10, 0.10, 0.05
    need = stats.papers_needed(effect, sd_between, sd_within, runs=3, simulations=campaigns)
    for papers in sorted(set(PAPERS) | {need.papers or 0} - {0}):
        rng = np.random.default_rng(papers)
        hits = sum(
            (stats.paired_test(*paired_campaign(rng, "paired-normal", papers, effect)).p or 1) <= stats.ALPHA
            for _ in range(campaigns)
        )
        rows.append(
            {
                "design": "paired-normal, true difference 0.10",
                "papers": papers,
                "campaigns": campaigns,
                "power": round(hits / campaigns, 4),
                "papers_needed_for_80": need.papers,
                "predicted_power_there": need.power,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def family_wise(campaigns: int) -> list[dict]:
    rows = []
    agents = 10
    for papers in (5, 12, 18):
        if 2 / 2**papers > stats.ALPHA:
            continue
        rng = np.random.default_rng(1000 + papers)
        raw_any = holm_any = 0
        for _ in range(campaigns):
            who, paper, value = equal_agents(rng, agents, papers)
            table = np.array(value).reshape(agents, papers)
            ps = []
            for a in range(agents):
                for b in range(a + 1, agents):
                    ps.append(stats.sign_flip_p(table[b] - table[a]))
            raw_any += min(ps) <= stats.ALPHA
            holm_any += min(p for p in stats.holm(ps) if p is not None) <= stats.ALPHA
        rows.append(
            {
                "design": f"{agents} equal agents, all {agents * (agents - 1) // 2} pairs",
                "papers": papers,
                "campaigns": campaigns,
                "any_significant_raw": round(raw_any / campaigns, 4),
                "any_significant_holm": round(holm_any / campaigns, 4),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


RANK_DESIGNS = {
    "5 agents 0.05 apart, shared paper difficulty": [0.40, 0.45, 0.50, 0.55, 0.60],
    "6 agents 0.02 apart, shared paper difficulty": [0.45, 0.47, 0.49, 0.51, 0.53, 0.55],
}


def ranks(campaigns: int) -> list[dict]:
    """Each agent's rank interval and the simultaneous ones: how often each holds its agent's
    true rank, and how often all agents' intervals hold at once."""
    rows = []
    for design, truth in RANK_DESIGNS.items():
        for papers in (5, 12, 18):
            rng = np.random.default_rng(2000 + papers + 100 * len(truth))
            held = np.zeros(len(truth))
            all_held = {False: 0, True: 0}
            widths: dict[bool, list[int]] = {False: [], True: []}
            for _ in range(campaigns):
                difficulty = rng.normal(0, 0.15, papers)
                agents, trees, values = [], [], []
                for k, mean in enumerate(truth):
                    for p in range(papers):
                        agents.append(f"a{k}")
                        trees.append(f"p{p}")
                        values.append(float(mean + difficulty[p] + rng.normal(0, 0.08)))
                for joint in (False, True):
                    found = stats.rank_intervals(agents, trees, values, resamples=500, seed=0, simultaneous=joint)
                    hits = [r.low <= len(truth) - int(r.agent[1:]) <= r.high for r in found]
                    all_held[joint] += all(hits)
                    widths[joint] += [r.high - r.low for r in found]
                    if not joint:
                        for r, hit in zip(found, hits, strict=True):
                            held[int(r.agent[1:])] += hit
            rows.append(
                {
                    "design": design,
                    "papers": papers,
                    "campaigns": campaigns,
                    "rank_interval_holds": [round(h / campaigns, 4) for h in held],
                    "all_hold_at_once": round(all_held[False] / campaigns, 4),
                    "median_rank_interval_width": float(np.median(widths[False])),
                    "simultaneous_all_hold": round(all_held[True] / campaigns, 4),
                    "simultaneous_median_width": float(np.median(widths[True])),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def fixed_papers(campaigns: int) -> list[dict]:
    """Intervals about exactly these papers (``--fixed-papers``): the t interval on the pairs'
    spread within papers against the single-pair sign flip it replaced and the interval for
    papers like these, when every paper has the same effect and when effects differ by paper
    (N(0.05, 0.10), drawn once per campaign: the estimand is their mean over these papers)."""
    rows = []
    for spread in (0.0, 0.10):
        for papers in (8, 18):
            rng = np.random.default_rng(9000 + papers + int(100 * spread))
            held = {"fixed": 0, "single_pair_flips": 0, "papers_like_these": 0}
            widths: dict[str, list[float]] = {k: [] for k in held}
            for _ in range(campaigns):
                effects = rng.normal(0.05, spread, papers) if spread else np.full(papers, 0.05)
                groups = [list(e + rng.normal(0, 0.05, 3)) for e in effects]
                trees = [f"p{i}" for i, g in enumerate(groups) for _ in g]
                d = [v for g in groups for v in g]
                w = np.full(len(d), 1 / len(d))
                found = {
                    "fixed": stats.paired_test(trees, d, population="these"),
                    "single_pair_flips": stats._sign_flip(np.array(d), w, papers, len(d), 0, None, "", "pairs"),
                    "papers_like_these": stats.paired_test(trees, d),
                }
                truth = float(effects.mean())
                for name, r in found.items():
                    if r.low is not None and r.high is not None:
                        held[name] += r.low <= truth <= r.high
                        widths[name].append(r.high - r.low)
            row = {"effects_sd": spread, "papers": papers, "campaigns": campaigns}
            for name in held:
                row[f"{name}_holds"] = round(held[name] / campaigns, 4)
                row[f"{name}_median_width"] = round(float(np.median(widths[name])), 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def fixed_spread(campaigns: int, prior=None) -> list[dict]:
    """``--fixed-papers`` when the runs of some papers vary more than others' (``RUN_SPREADS``):
    how often the paired interval about these papers holds the mean of their true differences,
    how often a row is warned and how often an unwarned one holds; beside it, the same from
    ``prior`` (the pooled spread it replaced)."""
    rows = []
    for design in RUN_SPREADS:
        for papers in (8, 18, 40) if design.startswith("two runs") else (8, 18):
            rng = np.random.default_rng(zlib.crc32(f"{design}/{papers}/fixed".encode()))
            held = printed = warned = unwarned = unwarned_held = 0
            prior_held = prior_printed = prior_warned = 0
            widths = []
            for _ in range(campaigns):
                trees, d, truth = run_spread_campaign(rng, design, papers)
                r = stats.paired_test(trees, d, population="these")
                warned += r.warning is not None
                if r.low is not None and r.high is not None:
                    printed += 1
                    hit = r.low <= truth <= r.high
                    held += hit
                    widths.append(r.high - r.low)
                    if r.warning is None:
                        unwarned += 1
                        unwarned_held += hit
                if prior is not None:
                    o = prior.paired_test(trees, d, population="these")
                    prior_warned += o.warning is not None
                    if o.low is not None:
                        prior_printed += 1
                        prior_held += o.low <= truth <= o.high
            row = {
                "design": design,
                "what": RUN_SPREADS[design],
                "papers": papers,
                "campaigns": campaigns,
                "coverage": round(held / printed, 4) if printed else None,
                "warned": round(warned / campaigns, 4),
                "coverage_unwarned": round(unwarned_held / unwarned, 4) if unwarned else None,
                "median_width": round(float(np.median(widths)), 4) if widths else None,
            }
            if prior is not None:
                row["prior_coverage"] = round(prior_held / prior_printed, 4) if prior_printed else None
                row["prior_warned"] = round(prior_warned / campaigns, 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


SKEWED_NULL_PAPERS = (30, 40, 60, 100)


def skewed_null(campaigns: int, prior=None) -> list[dict]:
    """The paired test from 30 papers on (the sign flip with the bootstrap-t): its size on strongly
    skewed null effects (``paired-lognormal``), on normal ones and on symmetric heavy-tailed ones
    (``paired-heavy``, where a skew warning is a false alarm), the share of rows warned, the size
    among unwarned rows and the share of campaigns with an unwarned rejection; beside it,
    ``prior``'s size and warnings."""
    rows = []
    for name in ("paired-lognormal", "paired-normal", "paired-heavy"):
        for papers in SKEWED_NULL_PAPERS:
            rng = np.random.default_rng(zlib.crc32(f"{name}/{papers}/skewed-null".encode()))
            tally, prior_rejected, prior_warned = Tally(campaigns), 0, 0
            t0 = time.perf_counter()
            for _ in range(campaigns):
                trees, diffs = paired_campaign(rng, name, papers)
                r = stats.paired_test(trees, diffs)
                tally.add(r.p is not None and r.p <= stats.ALPHA, r.warning)
                if prior is not None:
                    o = prior.paired_test(trees, diffs)
                    prior_rejected += o.p is not None and o.p <= stats.ALPHA
                    prior_warned += o.warning is not None
            row = {
                "design": name,
                "what": PAIRED[name],
                "papers": papers,
                "campaigns": campaigns,
                **tally.shares(),
                "unwarned_rejections": round(tally.unwarned_rejected / campaigns, 4),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            if prior is not None:
                row["prior_size"] = round(prior_rejected / campaigns, 4)
                row["prior_warned"] = round(prior_warned / campaigns, 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


# Failures not at random (docs/DECISIONS.md #33): two agents equal in ability; B's episodes fail on
# hard papers (paper level) or when the run goes badly (episode level).
FAILURE_DESIGNS = {
    "hard papers": "B fails 80% of its episodes on papers harder than 0.6, 5% elsewhere; A fails 5%",
    "bad runs": "B fails 70% of the runs that go below 0.3, 5% of the rest; A fails 5%",
}


def _failing_campaign(rng: np.random.Generator, papers: int, design: str, n: int | None = None):
    """Per paper: difficulty, the shared true mean, each agent's value and whether its episode failed."""
    n = n or papers
    difficulty = rng.uniform(0, 1, n)
    mean = 0.15 + 0.7 * (1 - difficulty)
    values = np.clip(mean[:, None] + rng.normal(0, 0.08, (n, 2)), 0, 1)
    failed = rng.uniform(size=(n, 2)) < 0.05
    if design == "hard papers":
        failed[:, 1] = rng.uniform(size=n) < np.where(difficulty > 0.6, 0.8, 0.05)
    else:
        failed[:, 1] = rng.uniform(size=n) < np.where(values[:, 1] < 0.3, 0.7, 0.05)
    return mean, values, failed


STEPS_LIMIT = 99.0  # the turn limit of the steps designs: no mean of steps can pass it
STEPS_DESIGNS = {  # each paper's mean steps: a log-normal (median, log-scale SD) cut at the limit
    "short inquiries (median 20)": (20.0, 0.5),
    "median 50": (50.0, 0.5),
    "a third of papers at the limit (median 85)": (85.0, 0.35),
    "widely spread (median 40, SD 0.9)": (40.0, 0.9),
}


def steps_range(campaigns: int) -> list[dict]:
    """Mean steps over papers whose episodes stop at a turn limit of 99: each paper's mean a
    log-normal cut at the limit (the truth: that distribution's mean, from two million draws). Now:
    the printed interval (``interval_of_means`` with the limit as its ceiling); cut: the log-scale
    interval cut at the limit, which it replaced; unbounded: the log-scale interval as it was before
    the limit was given, how often its upper end passed 99 and its median upper end."""
    rows = []
    for design, (median, sd) in STEPS_DESIGNS.items():
        draws = np.random.default_rng(zlib.crc32(f"steps/{design}".encode())).lognormal(math.log(median), sd, 2_000_000)
        truth = float(np.minimum(draws, STEPS_LIMIT).mean())
        for papers in (3, 5, 8, 12):
            rng = np.random.default_rng(zlib.crc32(f"steps/{design}/{papers}".encode()))
            held = {"now": 0, "cut": 0}
            printed = warned = held_unwarned = past = 0
            uppers = []
            for _ in range(campaigns):
                x = np.minimum(rng.lognormal(math.log(median), sd, papers), STEPS_LIMIT)
                now = stats.interval_of_means(x, papers, (0.0, None), ceiling=STEPS_LIMIT)
                free = stats.interval_of_means(x, papers, (0.0, None))
                if now.low is None or now.high is None or free.low is None or free.high is None:
                    continue
                cut = (free.low, min(free.high, STEPS_LIMIT))
                printed += 1
                ok = now.low <= truth <= now.high
                held["now"] += ok
                held["cut"] += cut[0] <= truth <= cut[1]
                warned += now.warning is not None
                held_unwarned += ok and now.warning is None
                past += free.high > STEPS_LIMIT
                uppers.append(free.high)
            row = {
                "design": design,
                "papers": papers,
                "campaigns": campaigns,
                "truth": round(truth, 2),
                "printed": round(printed / campaigns, 4),
                "coverage": round(held["now"] / printed, 4),
                "warned": round(warned / printed, 4),
                "coverage_unwarned": round(held_unwarned / (printed - warned), 4) if printed > warned else None,
                "cut_coverage": round(held["cut"] / printed, 4),
                "unbounded_past_limit": round(past / printed, 4),
                "unbounded_median_upper": round(float(np.median(uppers)), 1),
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def failures(campaigns: int) -> list[dict]:
    """Two agents equal in ability, B failing when it goes badly: with the unfinished episodes left
    out (complete case) and under the failure rule (a failed episode scores 0), how often B ranks
    first, how often B's interval holds its truth (complete case: the ability the two share; the
    rule: the mean with failures scored 0), and how often the paired test calls a difference."""
    rows = []
    for design in FAILURE_DESIGNS:
        big = np.random.default_rng(zlib.crc32(f"failures/{design}/truth".encode()))
        mean, values, failed = _failing_campaign(big, 0, design, n=2_000_000)
        truth_ability = float(mean.mean())
        truth_floor = (values * ~failed).mean(axis=0)  # each agent's mean with a failure at 0
        for papers in (18, 40):
            rng = np.random.default_rng(zlib.crc32(f"failures/{design}/{papers}".encode()))
            tally = {
                rule: {"b_first": 0, "b_holds": 0, "a_holds": 0, "rejects": 0, "warned": 0}
                for rule in ("complete case", "failure rule")
            }
            for _ in range(campaigns):
                _, v, f = _failing_campaign(rng, papers, design)
                names = [f"p{k}" for k in range(papers)]
                for rule, t in tally.items():
                    if rule == "complete case":
                        keep_a, keep_b, both = ~f[:, 0], ~f[:, 1], ~f[:, 0] & ~f[:, 1]
                        a_vals, b_vals, truth_a, truth_b = v[:, 0], v[:, 1], truth_ability, truth_ability
                    else:
                        keep_a = keep_b = both = np.ones(papers, bool)
                        a_vals, b_vals = v[:, 0] * ~f[:, 0], v[:, 1] * ~f[:, 1]
                        truth_a, truth_b = truth_floor
                    ia = stats.mean_interval(np.array(names)[keep_a], a_vals[keep_a], (0, 1))
                    ib = stats.mean_interval(np.array(names)[keep_b], b_vals[keep_b], (0, 1))
                    t["b_first"] += ib.estimate > ia.estimate
                    t["b_holds"] += ib.low is not None and ib.low <= truth_b <= ib.high
                    t["a_holds"] += ia.low is not None and ia.low <= truth_a <= ia.high
                    test = stats.paired_test(np.array(names)[both], (b_vals - a_vals)[both])
                    t["rejects"] += test.p is not None and test.p < 0.05
                    t["warned"] += bool(ib.warning)
            for rule, t in tally.items():
                row = {
                    "design": design,
                    "papers": papers,
                    "rule": rule,
                    "campaigns": campaigns,
                    "truth_a": round(float(truth_ability if rule == "complete case" else truth_floor[0]), 4),
                    "truth_b": round(float(truth_ability if rule == "complete case" else truth_floor[1]), 4),
                }
                row |= {k: round(n / campaigns, 4) for k, n in t.items()}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def rank_ties(campaigns: int) -> list[dict]:
    """Rank intervals when two agents are equal in truth (``RANK_TIES``): an interval holds when
    it spans every rank the agent can hold (both ranks the two share: [2, 2] says an agent ranks
    above its equal, which is false). Per agent (each on its own) and all at once, for
    the per-agent resampled intervals and the simultaneous ones, with the share of simultaneous
    tables warned and how often an unwarned one holds."""
    rows = []
    for design, skewed in RANK_TIES.items():
        for papers in (8, 12, 18, 30, 60):
            rng = np.random.default_rng(zlib.crc32(f"{design}/{papers}".encode()))
            held = np.zeros(5)
            at_once = {False: 0, True: 0}
            warned = unwarned = unwarned_held = 0
            for _ in range(campaigns):
                agents, trees, values, truth = skewed_gain_agents(rng, papers, skewed)
                for joint in (False, True):
                    found = stats.rank_intervals(agents, trees, values, resamples=500, seed=0, simultaneous=joint)
                    hits = [r.low <= truth[int(r.agent[1:])][0] and r.high >= truth[int(r.agent[1:])][1] for r in found]
                    at_once[joint] += all(hits)
                    if joint:
                        warned += found[0].warning is not None
                        if found[0].warning is None:
                            unwarned += 1
                            unwarned_held += all(hits)
                    else:
                        for r, hit in zip(found, hits, strict=True):
                            held[int(r.agent[1:])] += hit
            row = {
                "design": design,
                "papers": papers,
                "campaigns": campaigns,
                "rank_interval_holds": [round(h / campaigns, 4) for h in held],
                "all_hold_at_once": round(at_once[False] / campaigns, 4),
                "simultaneous_all_hold": round(at_once[True] / campaigns, 4),
                "simultaneous_warned": round(warned / campaigns, 4),
                "simultaneous_unwarned_all_hold": round(unwarned_held / unwarned, 4) if unwarned else None,
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


POOLED_LEVELS = (1, 3, 5)


def _jackknife_pooled(trees: list, spotted: list, shown: list) -> tuple[float, float, bool] | None:
    """The interval Fig. 3c printed before Fieller's: the t interval on the pooled rate's jackknife
    standard error over papers, clipped to [0, 1], and whether its warning (a fifth of the papers'
    rates at 0 or 1) fired."""
    names = sorted(set(trees))
    num = np.array([sum(x for t, x in zip(trees, spotted, strict=True) if t == n) for n in names])
    den = np.array([sum(y for t, y in zip(trees, shown, strict=True) if t == n) for n in names])
    if len(names) < stats.MIN_PAPERS or den.sum() == 0:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (num.sum() - num) / (den.sum() - den)
        per = num / den
    out = out[np.isfinite(out)]
    k = len(out)
    se = float(((k - 1) / k * ((out - out.mean()) ** 2).sum()) ** 0.5) if k > 1 else 0.0
    if se == 0:
        return None
    half = stats.t_quantile(1 - stats.ALPHA / 2, k - 1) * se
    rate = num.sum() / den.sum()
    at_bound = int(((per <= 0) | (per >= 1)).sum())  # NaN (no fake) counts as neither
    return max(0.0, rate - half), min(1.0, rate + half), at_bound >= np.ceil(stats.AT_BOUND_SHARE * len(names))


def pooled(campaigns: int) -> list[dict]:
    """Fig. 3c's pooled hit rate (``fake_spotting_campaign``) at randomness 1, 3 and 5: how often
    Fieller's interval (``stats.pooled_rate``) holds the truth, the share of rows warned and how
    often an unwarned row holds; beside it the jackknife t interval it replaced and its warning."""
    rows = []
    for level in POOLED_LEVELS:
        for papers in CHANGE_PAPERS:
            rng = np.random.default_rng(zlib.crc32(f"pooled/{level}/{papers}".encode()))
            t = {
                k: 0
                for k in ("printed", "held", "warned", "unwarned", "unwarned_held", "old", "old_held", "old_warned")
            }
            for _ in range(campaigns):
                trees, spotted, shown, truth = fake_spotting_campaign(rng, papers, level)
                r = stats.pooled_rate(trees, spotted, shown)
                if r.low is not None and r.high is not None:
                    hit = r.low <= truth <= r.high
                    t["printed"] += 1
                    t["held"] += hit
                    t["warned"] += r.warning is not None
                    if r.warning is None:
                        t["unwarned"] += 1
                        t["unwarned_held"] += hit
                old = _jackknife_pooled(trees, spotted, shown)
                if old is not None:
                    t["old"] += 1
                    t["old_held"] += old[0] <= truth <= old[1]
                    t["old_warned"] += old[2]
            row = {
                "randomness": level,
                "papers": papers,
                "campaigns": campaigns,
                "coverage": round(t["held"] / t["printed"], 4) if t["printed"] else None,
                "warned": round(t["warned"] / t["printed"], 4) if t["printed"] else None,
                "coverage_unwarned": round(t["unwarned_held"] / t["unwarned"], 4) if t["unwarned"] else None,
                "jackknife_coverage": round(t["old_held"] / t["old"], 4) if t["old"] else None,
                "jackknife_warned": round(t["old_warned"] / t["old"], 4) if t["old"] else None,
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


PLAN_SEEDS = 10


def _true_power(n: int, effect: float, sd: float, missing: float, campaigns: int, seed: int) -> float:
    """The power of the printed test on ``n`` papers of which each drops out with ``missing``
    (one run each): played on ``campaigns`` campaigns of its own seed."""
    rng = np.random.default_rng([seed, n, 99])
    short = rng.random((campaigns, n)) < missing
    d = effect + rng.standard_normal((campaigns, n)) * sd
    hits = 0
    for m in map(int, np.unique((~short).sum(axis=1))):
        rows = (~short).sum(axis=1) == m
        if m and stats.smallest_p(m) <= stats.ALPHA:
            hits += int((stats._sign_flip_pvalues(d[rows][~short[rows]].reshape(-1, m), 0) <= stats.ALPHA).sum())
    return hits / campaigns


def plans(campaigns: int, prior=None) -> list[dict]:
    """``papers_needed`` with a share of papers losing their one run (0.3, as the audit's plan):
    for ``PLAN_SEEDS`` seeds, the papers asked, the power the plan prints and the true power at that
    count (20,000 campaigns played through the test); beside it ``prior``'s plans."""
    effect, sd_between, sd_within, missing = 0.10, 0.10, 0.05, 0.3
    sd = float(np.hypot(sd_between, sd_within))
    rows = []
    for name, module in (("now", stats), ("before", prior)):
        if module is None:
            continue
        for seed in range(PLAN_SEEDS):
            plan = module.papers_needed(
                effect, sd_between, sd_within, simulations=campaigns, seed=seed, missing=missing
            )
            truth = _true_power(plan.papers, effect, sd, missing, 20_000, seed)
            rows.append(
                {
                    "stats": name,
                    "seed": seed,
                    "campaigns": campaigns,
                    "papers": plan.papers,
                    "printed_power": round(plan.power, 4),
                    "true_power": round(truth, 4),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


RUN_SHOCKS = (0.0, 0.05, 0.10)


def _two_way(values: list[float], papers: int, runs: int, truth: float) -> bool:
    """Whether the two-way (paper x run) cluster-robust interval of Cameron, Gelbach and Miller
    (2011) holds ``truth``: the variance of the grand mean is the papers' plus the runs' minus the
    cells', with Satterthwaite's degrees of freedom over the first two; the measured alternative to
    the run effect test, not what InquiTree prints."""
    y = np.asarray(values).reshape(papers, runs)
    vp = float(y.mean(axis=1).var(ddof=1)) / papers
    vr = float(y.mean(axis=0).var(ddof=1)) / runs
    vc = float(y.var(ddof=1)) / (papers * runs)
    extra = max(0.0, vr - vc)
    v = vp + extra
    df = v * v / (vp * vp / (papers - 1) + extra * extra / (runs - 1))
    half = stats.t_quantile(1 - stats.ALPHA / 2, max(1, int(df))) * v**0.5
    return abs(float(y.mean()) - truth) <= half


def run_shocks(campaigns: int) -> list[dict]:
    """A shock shared by every paper of one run (``run_shock_campaign``): how often the interval
    over papers holds the truth (the mean over papers and runs like these) and the mean over papers
    like these played in these runs (what a row says it speaks of), how often the run
    effect test (``stats.run_effect``, which warns the row at p <= 0.05) fires, how often an
    unwarned row holds, and how often the interval over runs as well as papers that every
    multi-run row gives (``stats.runs_interval``) holds, and how wide it is. With no shock the
    test's firing is its size."""
    rows = []
    for shock in RUN_SHOCKS:
        for runs in (2, 3):
            for papers in (18, 40):
                rng = np.random.default_rng(zlib.crc32(f"runshock/{shock}/{runs}/{papers}".encode()))
                held = printed = warned = unwarned = unwarned_held = two_way = over_runs = held_given = 0
                widths = []
                for k in range(campaigns):
                    trees, run_ids, values, truth, given = run_shock_campaign(rng, papers, runs, shock)
                    two_way += _two_way(values, papers, runs, truth)
                    r = stats.mean_interval(trees, values, bounds=(0, 1))
                    test = stats.run_effect(trees, run_ids, values, seed=k, draws=500)
                    assert test is not None and test.low is not None and test.high is not None
                    over_runs += test.low <= truth <= test.high
                    widths.append(test.high - test.low)
                    fired = test.p <= stats.ALPHA
                    warned += fired
                    if r.low is not None and r.high is not None:
                        printed += 1
                        hit = r.low <= truth <= r.high
                        held += hit
                        held_given += r.low <= given <= r.high
                        if not fired:
                            unwarned += 1
                            unwarned_held += hit
                row = {
                    "shock": shock,
                    "runs": runs,
                    "papers": papers,
                    "campaigns": campaigns,
                    "coverage": round(held / printed, 4) if printed else None,
                    "these_runs_coverage": round(held_given / printed, 4) if printed else None,
                    "warned": round(warned / campaigns, 4),
                    "coverage_unwarned": round(unwarned_held / unwarned, 4) if unwarned else None,
                    "two_way_coverage": round(two_way / campaigns, 4),
                    "runs_coverage": round(over_runs / campaigns, 4),
                    "runs_median_width": round(float(np.median(widths)), 3),
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def shared_seeds(campaigns: int) -> list[dict]:
    """Two runs of every paper whose episodes repeat one seed (two suites pooled with the same
    seed), against runs with their own seeds: each value is the paper's effect (N(0.5, 0.15)) plus a
    part the seed decides (N(0, 0.05): the fakes drawn, a seeded agent's choices) plus a part it
    does not (N(0, 0.02)). A repeated seed makes the runs' spread within a paper too small, so
    ``--fixed-papers`` (the truth: these papers' mean effect) is too narrow; the interval for papers
    like these (the truth: 0.5) is not. Warned: how often the warehouse's own check
    (``shared_seeds_said``, run in DuckDB on the campaign's papers and seeds) speaks."""
    import tempfile

    from inquitree.warehouse.warehouse import Warehouse

    rows = []
    with tempfile.TemporaryDirectory() as tmp, Warehouse(str(Path(tmp) / "w.duckdb")) as wh:
        for repeated in (False, True):
            for papers in (8, 18, 40):
                rng = np.random.default_rng(zlib.crc32(f"sharedseed/{repeated}/{papers}".encode()))
                held = {"fixed": 0, "papers_like_these": 0}
                warned = 0
                for _ in range(campaigns):
                    effects = rng.normal(0.5, 0.15, papers)
                    seeded = rng.normal(0, 0.05, (papers, 1 if repeated else 2))
                    values = np.clip(effects[:, None] + seeded + rng.normal(0, 0.02, (papers, 2)), 0, 1)
                    trees = [f"p{i}" for i in range(papers) for _ in range(2)]
                    seeds = [0, 0] * papers if repeated else [0, 1] * papers
                    said = wh.con.execute("SELECT shared_seeds_said(?, ?)", [trees, seeds]).fetchone()
                    warned += said is not None and said[0] is not None
                    groups = [list(v) for v in values]
                    found = {
                        "fixed": (stats.interval_of_groups(groups, (0.0, 1.0)), float(effects.mean())),
                        "papers_like_these": (stats.mean_interval(trees, list(values.ravel()), bounds=(0, 1)), 0.5),
                    }
                    for name, (r, truth) in found.items():
                        held[name] += r.low is not None and r.high is not None and r.low <= truth <= r.high
                row = {
                    "repeated_seed": repeated,
                    "papers": papers,
                    "campaigns": campaigns,
                    "fixed_holds": round(held["fixed"] / campaigns, 4),
                    "papers_like_these_holds": round(held["papers_like_these"] / campaigns, 4),
                    "warned": round(warned / campaigns, 4),
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


CHANGE_PAPERS = (5, 8, 12, 18)


def _jackknife_change(trees: list, f: list, base: list) -> tuple[float, float] | None:
    """The interval Fig. 3b printed before Fieller's: the t interval on the relative change's
    jackknife standard error over papers (each paper left out of both levels at once)."""
    names = sorted(set(trees))
    sums = {(t, b): [] for t in names for b in (True, False)}
    for t, v, b in zip(trees, f, base, strict=True):
        sums[t, b].append(v)

    def change(keep: list[str]) -> float:
        f0 = np.mean([np.mean(sums[t, True]) for t in keep])
        f1 = np.mean([np.mean(sums[t, False]) for t in keep])
        return 100 * (f1 - f0) / f0 if f0 > 0 else np.nan

    point = change(names)
    out = np.array([change([t for t in names if t != u]) for u in names])
    out = out[np.isfinite(out)]
    if not np.isfinite(point) or len(out) < 2:
        return None
    k = len(out)
    se = float(((k - 1) / k * ((out - out.mean()) ** 2).sum()) ** 0.5)
    half = stats.t_quantile(1 - stats.ALPHA / 2, k - 1) * se
    return point - half, point + half


def change(campaigns: int) -> list[dict]:
    """Fig. 3b's relative change (``REDO_DESIGNS``, ``redo_campaign``): how often Fieller's
    interval (``stats.relative_change``) is bounded and, when bounded, covers the true change; the
    share of rows warned (unbounded); beside it the jackknife t interval it replaced: its coverage
    and median width."""
    rows = []
    for design in REDO_DESIGNS:
        for papers in CHANGE_PAPERS:
            rng = np.random.default_rng(zlib.crc32(f"change/{design}/{papers}".encode()))
            bounded = held = warned = 0
            widths, old_widths, old_held, old_printed = [], [], 0, 0
            for _ in range(campaigns):
                trees, f, base, truth = redo_campaign(rng, design, papers)
                r = stats.relative_change(trees, f, base)
                warned += r.warning is not None
                if r.low is not None and r.high is not None:
                    bounded += 1
                    held += r.low <= truth <= r.high
                    widths.append(r.high - r.low)
                old = _jackknife_change(trees, f, base)
                if old is not None:
                    old_printed += 1
                    old_held += old[0] <= truth <= old[1]
                    old_widths.append(old[1] - old[0])
            row = {
                "design": design,
                "papers": papers,
                "campaigns": campaigns,
                "bounded": round(bounded / campaigns, 4),
                "coverage": round(held / bounded, 4) if bounded else None,
                "warned": round(warned / campaigns, 4),
                "median_width": round(float(np.median(widths)), 1) if widths else None,
                "jackknife_coverage": round(old_held / old_printed, 4) if old_printed else None,
                "jackknife_median_width": round(float(np.median(old_widths)), 1) if old_widths else None,
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


TIED_AGENTS = 15
TIED_PAPERS = (8, 12, 18, 30)


def tied_agents(campaigns: int, prior=None) -> list[dict]:
    """Rank intervals of ``TIED_AGENTS`` agents equal in truth (``equal_agents``): every rank is
    theirs, so an interval holds only when it spans all of them. Per agent (the mean and the
    lowest share over agents), every agent at once, the simultaneous intervals, and the share of
    simultaneous tables warned; beside it ``prior``'s per-agent share."""
    rows = []
    k = TIED_AGENTS
    for papers in TIED_PAPERS:
        rng = np.random.default_rng(zlib.crc32(f"tied/{k}/{papers}".encode()))
        held, prior_held = np.zeros(k), np.zeros(k)
        at_once = joint_held = joint_warned = 0
        t0 = time.perf_counter()
        for _ in range(campaigns):
            agents, trees, values = equal_agents(rng, k, papers)
            spans = [(r.low, r.high) == (1, k) for r in stats.rank_intervals(agents, trees, values, resamples=500)]
            held += spans
            at_once += all(spans)
            joint = stats.rank_intervals(agents, trees, values, simultaneous=True)
            joint_held += all((r.low, r.high) == (1, k) for r in joint)
            joint_warned += joint[0].warning is not None
            if prior is not None:
                prior_held += [
                    (r.low, r.high) == (1, k) for r in prior.rank_intervals(agents, trees, values, resamples=500)
                ]
        row = {
            "papers": papers,
            "agents": k,
            "campaigns": campaigns,
            "each_holds_mean": round(float(held.mean()) / campaigns, 4),
            "each_holds_lowest": round(float(held.min()) / campaigns, 4),
            "all_hold_at_once": round(at_once / campaigns, 4),
            "simultaneous_all_hold": round(joint_held / campaigns, 4),
            "simultaneous_warned": round(joint_warned / campaigns, 4),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        if prior is not None:
            row["prior_each_holds_mean"] = round(float(prior_held.mean()) / campaigns, 4)
            row["prior_each_holds_lowest"] = round(float(prior_held.min()) / campaigns, 4)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def pilots(campaigns: int, count: int = 30) -> list[dict]:
    """How far a plan from a pilot can be trusted: ``count`` pilots of 8 papers x 3 pairs drawn
    from the power part's truth (difference 0.10, SD 0.10 between, 0.05 within), each planned by
    ``spreads`` + ``papers_needed`` as `inquitree power --agents` does, plainly and with the
    spreads at their 80% upper bound; the true power of each plan is then simulated."""
    effect, between, within, runs = 0.10, 0.10, 0.05, 3
    true_power: dict[int, float] = {}

    def power_at(n: int) -> float:
        if n not in true_power:
            rng = np.random.default_rng(7000 + n)
            d = rng.normal(effect, (between**2 + within**2 / runs) ** 0.5, size=(campaigns, n))
            true_power[n] = float(np.mean(stats._sign_flip_pvalues(d, 0) <= stats.ALPHA))
        return true_power[n]

    rng = np.random.default_rng(31)
    rows = []
    for k in range(count):
        truth = rng.normal(effect, between, 8)
        trees = [f"p{i}" for i in range(8) for _ in range(runs)]
        diffs = [float(t + e) for t in truth for e in rng.normal(0, within, runs)]
        b, w, _ = stats.spreads(trees, diffs)
        plain = stats.papers_needed(effect, b, w, runs=runs, simulations=campaigns, seed=k)
        cb, cw, _ = stats.conservative_spreads(b, w, 8)
        cautious = stats.papers_needed(effect, cb, cw, runs=runs, simulations=campaigns, seed=k)
        row = {"pilot": k, "sd_between": round(b, 4), "sd_within": round(w, 4)}
        for name, plan in (("plain", plain), ("conservative", cautious)):
            n = plan.papers or 200
            row[f"{name}_papers"] = plan.papers
            row[f"{name}_true_power"] = round(power_at(n), 4)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


UNIT_COUNTS = (5, 10, 20, 30, 100, 300, 1000)


def _step_populations(episodes: int) -> dict[str, np.ndarray]:
    """The steps of ``episodes`` finished episodes per tree and agent, played with the hash embedder."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.events.types import EpisodeScored

    from enginekit import OracleAgent, RandomAgent, play

    out = {}
    for tid in ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7"):
        tree = resolve_tree(tid)
        for agent in ("random", "oracle"):
            steps = []
            for i in range(episodes):
                player = OracleAgent(tree) if agent == "oracle" else RandomAgent(tree, i)
                played = play(tree, player, seed=i, randomness=i % 10)
                steps += [e.steps for e in played.events if isinstance(e, EpisodeScored)][-1:]
            out[f"{tid} {agent}"] = np.array(steps, float)
    return out


def episode_units(campaigns: int, episodes: int = 1000) -> list[dict]:
    """Coverage of Cox's interval, the t interval and the printed one, with episodes as units: the
    same ``stats.interval_of_means`` with ``COX_MAX_UNITS`` set so that it takes Cox's always, the t
    interval always, or as shipped (set back at the end, whatever happens)."""
    rows = []
    shipped = stats.COX_MAX_UNITS
    methods = {"cox": 10**9, "t": 0, "printed": shipped}
    try:
        for name, population in _step_populations(episodes).items():
            truth = float(population.mean())
            for n in UNIT_COUNTS:
                rng = np.random.default_rng(zlib.crc32(f"{name}/{n}".encode()))
                samples = [rng.choice(population, n) for _ in range(campaigns)]
                row: dict = {"design": name, "papers": n, "campaigns": campaigns, "truth": round(truth, 3)}
                for method, limit in methods.items():
                    stats.COX_MAX_UNITS, covered, printed = limit, 0, 0
                    for x in samples:
                        r = stats.interval_of_means(x, n, (0.0, None), unit="episode")
                        if r.low is not None and r.high is not None:
                            printed += 1
                            covered += r.low <= truth <= r.high
                    row[method] = round(covered / printed, 4) if printed else None
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        stats.COX_MAX_UNITS = shipped
    return rows


def _grid(rows: list[dict], names, counts, cell, unit: str = "papers") -> list[str]:
    """A markdown table: one line per design in ``names``, one column per count of ``unit``, each
    cell ``cell(row)`` of that design's row at that count."""
    by = {(r["design"], r["papers"]): r for r in rows}
    lines = ["| design | " + " | ".join(f"{n} {unit}" for n in counts) + " |", "|---" * (len(counts) + 1) + "|"]
    return lines + [f"| {name} | " + " | ".join(cell(by[(name, n)]) for n in counts) + " |" for name in names]


def _coverage_cell(r: dict) -> str:
    cell = "none" if r["coverage"] is None else f"{100 * r['coverage']:.1f}%"
    if r["warned"] and r["coverage"] is not None:
        cell += f" (warned {100 * r['warned']:.1f}%"
        cell += f", unwarned held {100 * r['coverage_unwarned']:.1f}%)" if r.get("coverage_unwarned") else ")"
    if r.get("width_vs_t") is not None:
        cell += f", {r['width_vs_t']:.2f}x [t {100 * r['t_coverage']:.1f}%]"
    if "before_coverage" in r:
        cell += f" [before {100 * r['before_coverage']:.1f}%]"
    return cell


def _prior_cell(r: dict) -> str:
    """Coverage and warned share now, then before (a prior stats module on the same campaigns)."""
    cell = f"{_pct(r['coverage'])}, warned {_pct(r['warned'])}, unwarned held {_pct(r.get('coverage_unwarned'))}"
    return cell + f"; before {_pct(r['prior_coverage'])}, warned {_pct(r['prior_warned'])}"


def _size_cell(r: dict) -> str:
    cell = "cannot" if r["interval_printed"] == 0 else f"{100 * r['size']:.1f}%"
    if r["interval_printed"] and r["warned"]:
        cell += f" (warned {100 * r['warned']:.0f}%)"
    if "before_size" in r:
        cell += f" [{100 * r['before_size']:.1f}%; disagreed {100 * r['before_disagree']:.1f}%]"
    return cell


def _pct(x: float | None) -> str:
    """A share as a percentage with one decimal; "none" when there is none."""
    return "none" if x is None else f"{100 * x:.1f}%"


def _by_papers(title: str, cells: list[tuple[int, str]]) -> list[str]:
    """A two-column table, one row per paper count, after a blank line."""
    return ["", f"| papers | {title} |", "|---|---|", *[f"| {papers} | {cell} |" for papers, cell in cells]]


def _md_table(header: str, rows: list[str]) -> list[str]:
    """A markdown table after a blank line: ``header`` (its cells between bars), the rule under it
    with one dash cell per column, then ``rows``."""
    return ["", header, "|" + "---|" * (header.count("|") - 1), *rows]


NEW = ("rarebad",)  # designs whose before/after the intervals part tabulates when run with --prior


def _md_prior(result: dict) -> list[str]:
    """The interval designs in ``NEW``, now and before, when the intervals part ran with --prior."""
    rows = result["intervals"]
    changed = [n for n in NEW if any(r["design"] == n and "prior_coverage" in r for r in rows)]
    if not changed:
        return []
    since = result.get("prior_intervals", result.get("prior"))
    return [
        "",
        f"Designs added since {since}: coverage, the share of rows warned and how often an "
        "unwarned interval held, now and before:",
        "",
        *_grid(rows, changed, PAPERS[1:], _prior_cell),
    ]


def _with_prior(rows: list[dict], header: str, line, first: tuple[str, str], prior: str | None) -> list[str]:
    """A table of ``rows`` (``line(row)`` each, under ``header``), with a last column from the
    prior stats module when there is one: ``first`` (its words, its key) and the share warned."""
    if prior:
        header += f" before ({prior}): {first[0]}, warned |"
    rule = "|---" * header.count(" | ") + "|---|"
    cells = [line(r) + (f" {_pct(r.get(first[1]))}, {_pct(r.get('prior_warned'))} |" if prior else "") for r in rows]
    return ["", header, rule, *cells]


def _md_intervals(result: dict) -> list[str]:
    """The printed intervals' coverage and width, design by paper count."""
    out: list[str] = []
    out += [
        "Coverage of the printed 95% intervals (share of printed intervals that hold the true mean; "
        '"none": no interval is printed, with a warning), their median width as a multiple of the plain '
        "t interval's on the same campaigns (clipped to the range; campaigns where it has no width left "
        "out), and in brackets how often that t interval held the mean:",
        "",
        *_grid(result["intervals"], DESIGNS, PAPERS, _coverage_cell),
    ]
    out += _md_prior(result)
    bounded = [n for n, d in DESIGNS.items() if d.bounds == (0.0, 1.0)]
    if all(
        r.get("hull_width_vs_t") is not None for r in result["intervals"] if r["design"] in bounded and r["papers"] > 2
    ):
        out += [
            "",
            "The hull of the score and skew-corrected intervals used on every campaign, whatever the share of "
            "papers at a bound (coverage, median width as a multiple of the t interval's):",
            "",
            *_grid(
                result["intervals"],
                bounded,
                PAPERS[1:],
                lambda r: f"{100 * r['hull_coverage']:.1f}%, {r['hull_width_vs_t']:.2f}x",
            ),
        ]
    return out


def _md_paired(result: dict) -> list[str]:
    """The paired test's size under true nulls."""
    return [
        "",
        'The paired test\'s size under a true null (rejections at 5%; "cannot": p_min > 0.05, no '
        'rejection is possible and the row says so; "warned": the share of rows that carry a warning). '
        "Its interval is the test inverted, so it holds the true difference exactly when the test does not "
        "reject."
        + (
            " In brackets, before: the size, and how often the old interval and test disagreed (one said "
            "there was a difference, the other not):"
            if any("before_size" in r for r in result["paired"])
            else ""
        ),
        "",
        *_grid(
            result["paired"],
            [n for n in PAIRED if any(r["design"] == n for r in result["paired"])],
            sorted({r["papers"] for r in result["paired"]}),
            _size_cell,
        ),
    ]


def _md_asymmetry(result: dict) -> list[str]:
    """The paired test's size on the asymmetric null."""
    return _by_papers(
        "size on the asymmetric null (Monte Carlo SE)",
        [(r["papers"], f"{100 * r['size']:.1f}% ({100 * r['size_se']:.1f})") for r in result["asymmetry"]],
    )


def _md_power(result: dict) -> list[str]:
    """The paired test's simulated power, and the papers the planner asks for."""
    out: list[str] = []
    out += _by_papers(
        "simulated power (difference 0.10, SD 0.10 between, 0.05 within, 3 pairs)",
        [(r["papers"], f"{100 * r['power']:.1f}%") for r in result["power"]],
    )
    first = result["power"][0]
    out += ["", f"`papers_needed` for 80%: {first['papers_needed_for_80']} papers."]
    return out


def _md_family_wise(result: dict) -> list[str]:
    """How often any of several comparisons is called significant, raw and after Holm."""
    out: list[str] = []
    out += ["", '| comparisons | papers | any "significant", raw | after Holm |', "|---|---|---|---|"]
    out += [
        f"| {r['design']} | {r['papers']} | {100 * r['any_significant_raw']:.1f}% | "
        f"{100 * r['any_significant_holm']:.1f}% |"
        for r in result["family_wise"]
    ]
    return out


def _md_ranks(result: dict) -> list[str]:
    """How often each agent's rank interval holds its true rank."""
    out: list[str] = []
    out += [
        "",
        "| agents | papers | each agent's interval holds its true rank (best to worst) | all at once | "
        "median width | simultaneous: all at once | simultaneous: median width |",
        "|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| {r['design']} | {r['papers']} | "
        + ", ".join(f"{100 * h:.1f}%" for h in reversed(r["rank_interval_holds"]))
        + f" | {100 * r['all_hold_at_once']:.1f}% | {r['median_rank_interval_width']:g} | "
        f"{100 * r['simultaneous_all_hold']:.1f}% | {r['simultaneous_median_width']:g} |"
        for r in result["ranks"]
    ]
    return out


def _md_fixed_papers(result: dict) -> list[str]:
    """``--fixed-papers`` intervals about these papers, against single-pair flips."""
    out: list[str] = []
    out += [
        "",
        "| effects' SD between papers | papers | about these papers: holds, median width | single-pair flips "
        "(before) | papers like these |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| {r['effects_sd']:g} | {r['papers']} | "
        + " | ".join(
            f"{100 * r[f'{k}_holds']:.1f}%, {r[f'{k}_median_width']:.3f}"
            for k in ("fixed", "single_pair_flips", "papers_like_these")
        )
        + " |"
        for r in result["fixed_papers"]
    ]
    return out


def _md_fixed_spread(result: dict) -> list[str]:
    """``--fixed-papers`` where runs vary unequally, now and before."""
    prior = result.get("prior_fixed_spread", result.get("prior"))
    return _with_prior(
        result["fixed_spread"],
        "| `--fixed-papers`, runs varying unequally | papers | holds | warned | unwarned rows hold | median width |",
        lambda r: (
            f"| {r['design']} ({r['what']}) | {r['papers']} | {_pct(r['coverage'])} | {_pct(r['warned'])} | "
            f"{_pct(r['coverage_unwarned'])} | {r['median_width']:.3f} |"
        ),
        ("holds", "prior_coverage"),
        prior,
    )


def _md_skewed_null(result: dict) -> list[str]:
    """The paired test's size on skewed nulls, now and before."""
    return _with_prior(
        result["skewed_null"],
        "| null design | papers | size | warned | size among unwarned rows | unwarned rejections |",
        lambda r: (
            f"| {r['design']} | {r['papers']} | {_pct(r['size'])} | {_pct(r['warned'])} | "
            f"{_pct(r['size_unwarned'])} | {_pct(r['unwarned_rejections'])} |"
        ),
        ("size", "prior_size"),
        result.get("prior_skewed_null", result.get("prior")),
    )


def _md_rank_ties(result: dict) -> list[str]:
    """Rank intervals where agents tie."""
    out: list[str] = []
    out += [
        "",
        "| agents | papers | each agent's interval holds (a3 best, a2, a4 equal to a2, a1, a0) | all at once | "
        "simultaneous: all at once | simultaneous: warned | simultaneous, unwarned: all at once |",
        "|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| {r['design']} | {r['papers']} | "
        + ", ".join(_pct(r["rank_interval_holds"][k]) for k in (3, 2, 4, 1, 0))
        + f" | {_pct(r['all_hold_at_once'])} | {_pct(r['simultaneous_all_hold'])} | "
        f"{_pct(r['simultaneous_warned'])} | {_pct(r['simultaneous_unwarned_all_hold'])} |"
        for r in result["rank_ties"]
    ]
    return out


def _md_pooled(result: dict) -> list[str]:
    """Fig. 3c's pooled rates: Fieller's interval against the jackknife t."""
    return _md_table(
        "| Fig. 3c, randomness | papers | Fieller: holds | warned | unwarned rows hold | "
        "jackknife t (before): holds | its 0/1 warning fired |",
        [
            f"| a = {r['randomness']} | {r['papers']} | {_pct(r['coverage'])} | {_pct(r['warned'])} | "
            f"{_pct(r['coverage_unwarned'])} | {_pct(r['jackknife_coverage'])} | {_pct(r['jackknife_warned'])} |"
            for r in result["pooled"]
        ],
    )


def _md_plans(result: dict) -> list[str]:
    """Power plans with papers losing their run: printed against true power."""
    plans = [[r for r in result["plans"] if r["stats"] == name] for name in ("now", "before")]
    return _md_table(
        "| power plan, 30% of papers losing their run | seeds | papers asked | printed power | true power | "
        "plans short of 80% | printed above true (most) |",
        [
            f"| {rs[0]['stats']} | {len(rs)} | {min(r['papers'] for r in rs)}-{max(r['papers'] for r in rs)} | "
            f"{_pct(min(r['printed_power'] for r in rs))}-{_pct(max(r['printed_power'] for r in rs))} | "
            f"{_pct(min(r['true_power'] for r in rs))}-{_pct(max(r['true_power'] for r in rs))} | "
            f"{sum(r['true_power'] < 0.8 for r in rs)} of {len(rs)} | "
            f"{100 * max(r['printed_power'] - r['true_power'] for r in rs):.1f} points |"
            for rs in plans
            if rs
        ],
    )


def _md_run_shocks(result: dict) -> list[str]:
    """Intervals under a shock shared by one run's papers."""
    return _md_table(
        "| run shock SD | runs | papers | interval over papers holds | it holds for these runs | "
        "run effect warned | unwarned rows hold | two-way cluster-robust: holds | "
        "over runs and papers (every row): holds | its median width |",
        [
            f"| {r['shock']:.2f} | {r['runs']} | {r['papers']} | {_pct(r['coverage'])} | "
            f"{_pct(r.get('these_runs_coverage'))} | {_pct(r['warned'])} | "
            f"{_pct(r['coverage_unwarned'])} | {_pct(r.get('two_way_coverage'))} | "
            f"{_pct(r.get('runs_coverage'))} | {r.get('runs_median_width', '')} |"
            for r in result["run_shocks"]
        ],
    )


def _md_steps_range(result: dict) -> list[str]:
    """Steps intervals against the turn limit."""
    return _md_table(
        f"| mean steps, turn limit {STEPS_LIMIT:.0f} | papers | holds | warned | unwarned rows hold | "
        "cut at the limit (before): holds | unbounded (before that): upper end past the limit | its median "
        "upper end |",
        [
            f"| {r['design']} | {r['papers']} | {_pct(r['coverage'])} | {_pct(r['warned'])} | "
            f"{_pct(r['coverage_unwarned'])} | {_pct(r['cut_coverage'])} | {_pct(r['unbounded_past_limit'])} | "
            f"{r['unbounded_median_upper']:.1f} |"
            for r in result["steps_range"]
        ],
    )


def _md_shared_seeds(result: dict) -> list[str]:
    """Intervals where a paper's runs repeat one seed."""
    return _md_table(
        "| runs of a paper | papers | --fixed-papers holds | papers like these holds | warned (shared_seeds_said) |",
        [
            f"| {'one seed repeated' if r['repeated_seed'] else 'a seed each'} | {r['papers']} | "
            f"{_pct(r['fixed_holds'])} | {_pct(r['papers_like_these_holds'])} | {_pct(r['warned'])} |"
            for r in result["shared_seeds"]
        ],
    )


def _md_change(result: dict) -> list[str]:
    """Fig. 3b's relative change: Fieller's interval against the jackknife t."""
    return _md_table(
        "| Fig. 3b design | papers | Fieller: bounded | covers when bounded | median width (points) | "
        "warned | jackknife t: covers | median width |",
        [
            f"| {r['design']} | {r['papers']} | {_pct(r['bounded'])} | {_pct(r['coverage'])} | "
            f"{r['median_width']} | {_pct(r['warned'])} | {_pct(r['jackknife_coverage'])} | "
            f"{r['jackknife_median_width']} |"
            for r in result["change"]
        ],
    )


def _md_tied_agents(result: dict) -> list[str]:
    """Rank sets of many agents equal in truth."""
    rows = result["tied_agents"]
    before = "prior_each_holds_mean" in rows[0]
    return _md_table(
        "| agents | papers | each agent's interval spans the tie (mean, lowest) | "
        + ("before (mean, lowest) | " if before else "")
        + "all at once | simultaneous: all at once | simultaneous: warned |",
        [
            f"| {r['agents']} equal | {r['papers']} | "
            f"{_pct(r['each_holds_mean'])}, {_pct(r['each_holds_lowest'])} | "
            + (f"{_pct(r['prior_each_holds_mean'])}, {_pct(r['prior_each_holds_lowest'])} | " if before else "")
            + f"{_pct(r['all_hold_at_once'])} | {_pct(r['simultaneous_all_hold'])} | "
            f"{_pct(r['simultaneous_warned'])} |"
            for r in rows
        ],
    )


def _md_failures(result: dict) -> list[str]:
    """Agents with failed episodes under each failure rule."""
    out: list[str] = []
    out += [
        "",
        "| failures | papers | rule | truth A / B | B ranks first | B's interval holds | A's holds | "
        "paired test rejects |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| {r['design']} | {r['papers']} | {r['rule']} | {r['truth_a']:.3f} / {r['truth_b']:.3f} | "
        f"{_pct(r['b_first'])} | {_pct(r['b_holds'])} | {_pct(r['a_holds'])} | {_pct(r['rejects'])} |"
        for r in result["failures"]
    ]
    return out


def _md_pilots(result: dict) -> list[str]:
    """Plans from a pilot of 8 papers: the papers asked and the power they reach."""
    out: list[str] = []
    rows = result["pilots"]
    out += [
        "",
        "| plan from a pilot of 8 papers | papers asked (min-median-max) | true power (min-median-max) | "
        "pilots whose plan reaches 80% |",
        "|---|---|---|---|",
    ]
    for name in ("plain", "conservative"):
        asked = sorted(r[f"{name}_papers"] or 201 for r in rows)
        got = sorted(r[f"{name}_true_power"] for r in rows)
        reach = sum(p >= 0.8 for p in got)
        out.append(
            f"| {name} | {asked[0]}-{asked[len(asked) // 2]}-{asked[-1]} | "
            f"{100 * got[0]:.1f}%-{100 * got[len(got) // 2]:.1f}%-{100 * got[-1]:.1f}% | {reach} of {len(rows)} |"
        )
    return out


def _md_episode_units(result: dict) -> list[str]:
    """Episodes as units: Cox's, the t and the printed interval on n episodes."""
    units = result["episode_units"]
    return [
        "",
        "Episodes as units (one tree's steps, each episode a unit): coverage of Cox's log-scale interval / "
        "the t interval / the printed one, on samples of n episodes:",
        "",
        *_grid(
            units,
            dict.fromkeys(r["design"] for r in units),
            UNIT_COUNTS,
            lambda r: " / ".join(f"{100 * r[m]:.1f}%" for m in ("cox", "t", "printed")),
            "episodes",
        ),
    ]


# The tables of docs/statistics.md, in its order: the key of a part's result and its table.
MARKDOWN: tuple[tuple[str, Callable[[dict], list[str]]], ...] = (
    ("intervals", _md_intervals),
    ("paired", _md_paired),
    ("asymmetry", _md_asymmetry),
    ("power", _md_power),
    ("family_wise", _md_family_wise),
    ("ranks", _md_ranks),
    ("fixed_papers", _md_fixed_papers),
    ("fixed_spread", _md_fixed_spread),
    ("skewed_null", _md_skewed_null),
    ("rank_ties", _md_rank_ties),
    ("pooled", _md_pooled),
    ("plans", _md_plans),
    ("run_shocks", _md_run_shocks),
    ("steps_range", _md_steps_range),
    ("shared_seeds", _md_shared_seeds),
    ("change", _md_change),
    ("tied_agents", _md_tied_agents),
    ("failures", _md_failures),
    ("pilots", _md_pilots),
    ("episode_units", _md_episode_units),
)


def markdown(result: dict) -> str:
    """The tables of docs/statistics.md, from a result of this study (its parts that ran)."""
    out: list[str] = []
    for key, table in MARKDOWN:
        if key in result:
            out += table(result)
    return "\n".join(out)


# Each part: the key of its result and how it runs (on the arguments, --before's and --prior's modules).
PARTS: dict[str, tuple[str, Callable]] = {
    "intervals": ("intervals", lambda a, before, prior: intervals(a.campaigns, before, prior)),
    "paired": ("paired", lambda a, before, prior: paired(a.campaigns, before)),
    "asymmetry": ("asymmetry", lambda a, before, prior: asymmetry(a.campaigns)),
    "power": ("power", lambda a, before, prior: power(a.campaigns)),
    "fwer": ("family_wise", lambda a, before, prior: family_wise(a.campaigns)),
    "ranks": ("ranks", lambda a, before, prior: ranks(a.campaigns)),
    "fixed": ("fixed_papers", lambda a, before, prior: fixed_papers(a.campaigns)),
    "spreads": ("fixed_spread", lambda a, before, prior: fixed_spread(a.campaigns, prior)),
    "skewnull": ("skewed_null", lambda a, before, prior: skewed_null(a.campaigns, prior)),
    "ties": ("rank_ties", lambda a, before, prior: rank_ties(a.campaigns)),
    "change": ("change", lambda a, before, prior: change(a.campaigns)),
    "pooled": ("pooled", lambda a, before, prior: pooled(a.campaigns)),
    "plans": ("plans", lambda a, before, prior: plans(a.campaigns, prior)),
    "runshock": ("run_shocks", lambda a, before, prior: run_shocks(a.campaigns)),
    "sharedseed": ("shared_seeds", lambda a, before, prior: shared_seeds(a.campaigns)),
    "tied": ("tied_agents", lambda a, before, prior: tied_agents(a.campaigns, prior)),
    "failures": ("failures", lambda a, before, prior: failures(a.campaigns)),
    "stepsrange": ("steps_range", lambda a, before, prior: steps_range(a.campaigns)),
    "pilots": ("pilots", lambda a, before, prior: pilots(a.campaigns)),
    "units": ("episode_units", lambda a, before, prior: episode_units(a.campaigns, a.episodes)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", type=int, default=2000)
    parser.add_argument(
        "--before", default=None, help="a copy of an older interval module (from git history), for comparison"
    )
    parser.add_argument(
        "--prior",
        default=None,
        help="an older stats.py (git show COMMIT:stats.py > FILE): before/after on the same campaigns",
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "stats_sim.json"))
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated parts: " + ",".join(PARTS),
    )
    parser.add_argument("--tables", metavar="RESULT.json", help="print the markdown tables of an earlier result")
    parser.add_argument("--episodes", type=int, default=1000, help="units: episodes played per tree and agent")
    args = parser.parse_args()
    if args.tables:
        print(markdown(json.loads(Path(args.tables).read_text())))
        return
    before, prior = _old(args.before), _prior(args.prior)
    parts = set((args.only or ",".join(PARTS)).split(","))
    if parts - set(PARTS):
        parser.error(f"--only {args.only}: no part {', '.join(sorted(parts - set(PARTS)))}; parts: {','.join(PARTS)}")
    t0 = time.perf_counter()
    result: dict = {"campaigns": args.campaigns, "before": args.before}
    if args.only and Path(args.out).exists():  # a part run again replaces that part of an earlier result
        result = json.loads(Path(args.out).read_text())  # its campaigns stay the whole run's
        result[f"campaigns_{args.only}"] = args.campaigns
    for part in PARTS:
        if part in parts:
            key, run = PARTS[part]
            result[key] = run(args, before, prior)
            if args.prior:  # the older stats.py each part's "before" columns ran
                result[f"prior_{key}"] = Path(args.prior).name
    result["seconds" if not args.only else f"seconds_{args.only}"] = round(time.perf_counter() - t0, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))
    print(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
