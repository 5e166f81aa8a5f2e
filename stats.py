"""The statistics InquiTree prints, on plain lists: intervals for a mean over papers, the paired
test with its interval, Holm's adjustment, rank intervals and the papers a comparison needs.

    from inquitree.stats import mean_interval, paired_test
    mean_interval(["p1", "p1", "p2", "p3"], [0.2, 0.4, 0.9, 0.0], bounds=(0, 1))
    paired_test(["p1", "p2", "p3", "p4", "p5", "p6"], [0.1, 0.05, 0.2, -0.02, 0.12, 0.08])

The paper is the unit (docs/DECISIONS.md #25, #26): one entry per episode (or per pair of
episodes), each with its paper's id; an estimate is the mean over papers of per-paper means,
so a paper with five runs weighs what a paper with one does. The warehouse's SQL functions
(``warehouse/intervals.py``) call these same functions, so a notebook that calls them on the
numbers of a query gets the query's interval.

Why these methods (measured by ``studies/stats_sim.py``, table in docs/statistics.md): a t
interval on paper means holds on symmetric designs and covered 48-92% on the shapes a weak
agent produces, so the interval follows the metric's scale and what the papers show:

- a metric in ``bounds=(low, high)`` (coverage, a conclusion score, a rate): the score interval
  on the paper means (Wilson's form with the papers' share of the largest spread a mean in the
  range allows), which follows their closeness to a bound; while fewer than a fifth of the
  papers sit at a bound, widened by Hall's skew-corrected t interval where that reaches further
  (:func:`bounded_interval`);
- a positive metric, ``bounds=(0, None)`` (steps): the t interval for the mean of a log-normal
  (Cox's method, the log-scale mean plus half the variance, with t quantiles), which held on
  skewed paper means where the t interval covered 85-89%;
- anything else (a difference): the t interval.

Fewer than 3 papers get no interval, with a warning that says so; an interval is never of zero
width (a spread of 0 gets a warning instead) and never outside the metric's range.

The paired test flips the signs of the papers' mean differences (exact over every sign pattern
up to ``EXACT_PAPERS`` papers, else ``FLIPS`` seeded patterns) and its interval is the set of
shifts the same test does not reject at 5%, so the two never disagree. Its smallest attainable
p-value, ``p_min``, is 2 / 2^papers: with 5 papers or fewer it is above 0.05, no difference can
be shown, and no interval is printed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

LEVEL = 0.95
ALPHA = 1 - LEVEL
MIN_PAPERS = 3  # fewer papers: no interval (a warning says why)
AT_BOUND_SHARE = 0.2  # from this share of papers at a bound: the score interval alone (bounded_interval)
# Below this many units a positive metric without an upper bound (steps) gets Cox's log-scale
# interval, from it on the t interval: Cox's interval is centred on the mean of a log-normal,
# which real step counts are not, so as units grow it narrows around a point beside the mean
# (steps_bounds over thousands of episodes printed intervals that left out their own mean);
# the t interval needs no shape once the mean of this many units is near normal. Measured on
# recorded steps by studies/stats_sim.py ("episodes as units" in docs/statistics.md).
COX_MAX_UNITS = 30
EXACT_PAPERS = 20  # up to this many papers the paired test enumerates every sign pattern
LIKE = "about papers like these"  # what a default interval or test speaks of (docs/DECISIONS.md #26)
FIXED = "about these papers only"  # what population="these" speaks of
SYMMETRY_PAPERS = 30  # fewer papers: the paired test's symmetry assumption carries a warning (docs/statistics.md)
FLIPS = 20_000  # beyond: this many seeded sign patterns


@dataclass(frozen=True)
class Interval:
    """A 95% interval for a mean over papers. ``low``/``high`` are None when no interval holds
    (``warning`` says why); ``se`` is the standard error of the mean of paper means."""

    estimate: float | None
    low: float | None
    high: float | None
    se: float | None
    method: str
    warning: str | None
    papers: int
    episodes: int

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class PairedTest(Interval):
    """The paired sign-flip test of a mean difference over papers, with the interval that
    inverts it: ``p`` (two-sided) and ``p_min``, the smallest p this many papers can give."""

    p: float | None = None
    p_min: float | None = None


# -- grouping ------------------------------------------------------------------------------------
def by_paper(papers: Sequence, values: Sequence) -> dict[str, list[float]]:
    """Each paper's values, the papers in sorted order; entries whose paper or value is None or
    NaN are left out."""
    groups: dict[str, list[float]] = {}
    for p, v in zip(papers, values, strict=True):
        if p is not None and v is not None and not math.isnan(float(v)):
            groups.setdefault(str(p), []).append(float(v))
    return {k: groups[k] for k in sorted(groups)}


def paper_means(papers: Sequence, values: Sequence) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The papers (sorted ids), the mean of each paper's values and how many values it has."""
    groups = by_paper(papers, values)
    means = np.array([np.mean(g) for g in groups.values()]) if groups else np.zeros(0)
    return list(groups), means, np.array([len(g) for g in groups.values()], np.int64)


# -- Student's t without SciPy -------------------------------------------------------------------
def t_cdf_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with a whole number of degrees of freedom, in closed form
    (Abramowitz and Stegun 26.7.3-26.7.4: a finite series in theta = atan(t / sqrt(df)))."""
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, sin = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 1:
        term, total = math.cos(theta), 0.0
        if df > 1:
            total = term
            for k in range(3, df - 1, 2):
                term *= c2 * (k - 1) / k
                total += term
        return 2 / math.pi * (theta + sin * total)
    term, total = 1.0, 1.0
    for k in range(2, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return sin * total


# Above this many degrees of freedom t_quantile takes the Cornish-Fisher expansion: the series
# of t_cdf_two_sided has df / 2 terms, and bisecting on it took seconds for intervals whose units
# are episodes (tens of thousands of them) at lab scale.
SERIES_MAX_DF = 200


def t_quantile(p: float, df: int) -> float:
    """The p quantile (p > 0.5) of Student's t with ``df`` degrees of freedom (no SciPy):
    t_{1, 0.975} = 12.706, t_{4, 0.975} = 2.776. Up to ``SERIES_MAX_DF``, by bisection on
    :func:`t_cdf_two_sided`; above it, the normal quantile corrected in powers of 1 / df
    (Abramowitz and Stegun 26.7.5, four terms), which agrees with the bisection to 1e-9 there
    and comes closer as df grows."""
    if df > SERIES_MAX_DF:
        z, v = normal_quantile(p), float(df)
        g1 = (z**3 + z) / 4
        g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
        g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
        g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
        return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4
    target, low, high = 2 * p - 1, 0.0, 1e6
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf_two_sided(mid, df) < target else (low, mid)
    return (low + high) / 2


def normal_quantile(p: float) -> float:
    """The p quantile (p > 0.5) of the standard normal, by bisection on its distribution
    function (math.erfc): z_{0.975} = 1.959964."""
    low, high = 0.0, 40.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if 1 - 0.5 * math.erfc(mid / math.sqrt(2)) < p else (low, mid)
    return (low + high) / 2


def _fmt(x: float) -> str:
    return f"{x:.6g}"


# -- intervals for a mean over papers ------------------------------------------------------------
def mean_interval(
    papers: Sequence,
    values: Sequence,
    bounds: tuple[float | None, float | None] | None = None,
    population: str = "papers",
) -> Interval:
    """The 95% interval for the mean over papers of per-paper means of ``values``.

    ``bounds``: the metric's range, ``(low, high)``, e.g. ``(0, 1)`` for coverage; ``(0, None)``
    for a positive metric without an upper bound (steps); None for a metric of any sign.
    ``population``: ``papers`` (papers like these, the default) or ``these`` (exactly these
    papers: :func:`fixed_paper_interval`)."""
    if population == "these":
        return fixed_paper_interval(papers, values, bounds)
    _, means, counts = paper_means(papers, values)
    return interval_of_means(means, int(counts.sum()), bounds)


def _pooled_within(groups: list[list[float]]) -> float | None:
    """The variance of values around their paper's mean, pooled over the papers with two or more
    values (degrees of freedom: values minus papers); None when no paper has two."""
    df = sum(len(g) - 1 for g in groups)
    if df < 1:
        return None
    return sum(float(((np.asarray(g) - np.mean(g)) ** 2).sum()) for g in groups) / df


@dataclass(frozen=True)
class FixedSpread:
    """The standard error of the mean of paper means when the papers are fixed (only the runs
    vary), each paper with its own run-to-run variance: ``se``, its Welch-Satterthwaite degrees of
    freedom ``df`` (rounded down) and ``borrowed``, the papers with one run, whose variance cannot
    be estimated and is taken as the pooled variance of the papers that have two or more."""

    se: float
    df: int
    borrowed: int


def _fixed_spread(groups: list[list[float]]) -> FixedSpread | None:
    """:class:`FixedSpread` of each paper's values; None when no paper has two.

    Pooling the run-to-run variance over papers, as before, held only when every paper's runs
    spread alike: with one erratic paper among 8 its paired interval held 87.2% (94.0% with each
    paper's own spread), and when the noisy papers kept a single run, 29.8% (studies/stats_sim.py,
    docs/statistics.md; such rows are now warned). Each paper's own
    variance over its runs, divided by its runs, gives the variance of its mean; their sum over
    n^2 is the variance of the mean of paper means, with Satterthwaite's degrees of freedom, which
    fall towards one paper's runs minus one when that paper carries the spread.

    Smyth's moderated variances (each paper's shrunk towards a fitted common one, "Linear models
    and empirical Bayes methods", 2004) were measured as the alternative at two runs a paper: they
    hold 93.5-94.7% when the papers' runs vary alike, where this holds 95.9-99.1%, but 78.1-83.1%
    with one erratic paper, where this holds 91.3-92.9%: shrinking is wrong exactly when a paper
    differs. So each paper keeps its own spread, and two runs a paper are warned instead."""
    n = len(groups)
    multi = [np.asarray(g, np.float64) for g in groups if len(g) > 1]
    if not multi:
        return None
    terms = [(float(g.var(ddof=1)) / len(g) / n**2, len(g) - 1) for g in multi]
    borrowed = n - len(multi)
    if borrowed:
        pooled_df = sum(df for _, df in terms)
        pooled = sum(float(((g - g.mean()) ** 2).sum()) for g in multi) / pooled_df
        terms.append((pooled * borrowed / n**2, pooled_df))
    variance = sum(v for v, _ in terms)
    if variance <= 0:
        return FixedSpread(0.0, sum(df for _, df in terms[: len(multi)]), borrowed)
    df = variance**2 / sum(v * v / df for v, df in terms if v > 0)
    return FixedSpread(math.sqrt(variance), max(1, int(math.floor(df + 1e-9))), borrowed)


def fixed_paper_interval(
    papers: Sequence, values: Sequence, bounds: tuple[float | None, float | None] | None = None
) -> Interval:
    """The interval for the mean over exactly these papers (docs/DECISIONS.md #26): only the runs vary.
    A t interval on each paper's own run-to-run spread (:func:`_fixed_spread`, Satterthwaite's
    degrees of freedom), clipped to the metric's range; none when no paper has two runs, and a
    warning when some paper has one."""
    return interval_of_groups(list(by_paper(papers, values).values()), bounds)


def interval_of_groups(
    groups: list[list[float]],
    bounds: tuple[float | None, float | None] | None = None,
    what: str = "t interval",
    units: str = "runs",
    ceiling: float | None = None,
) -> Interval:
    """:func:`fixed_paper_interval` from each paper's values (``what`` and ``units``: the method's
    words for the interval and for a paper's values, e.g. a test's pairs); ``ceiling`` as in
    :func:`interval_of_means`."""
    n, runs = len(groups), sum(len(g) for g in groups)
    if n == 0:
        return Interval(None, None, None, None, "no data", "no episodes", 0, 0)
    estimate = float(np.mean([np.mean(g) for g in groups]))
    spread = _fixed_spread(groups)
    if spread is None:
        why = f"one {units[:-1]} per paper: the spread of {units} within a paper is unknown"
        method = f"{FIXED}: {what} on each paper's spread of its {units}"
        return Interval(estimate, None, None, None, "no interval", why, n, runs)
    se, df = spread.se, spread.df
    method = (
        f"{FIXED}: {what} on each paper's own spread of its {units} ({runs} {units} within {n} papers, "
        f"{df} df by Welch-Satterthwaite)"
    )
    if no_spread(np.asarray([v for g in groups for v in g], np.float64), se):
        why = f"no run differs from its paper's other runs: no spread to build an interval from ({FIXED})"
        return Interval(estimate, None, None, 0.0, "no interval", why, n, runs)
    warnings = []
    if spread.borrowed:
        warnings.append(
            f"{spread.borrowed} of {n} papers have one {units[:-1]}: their spread cannot be estimated and is "
            f"taken as the other papers' pooled spread; if their {units} vary more, the interval is too narrow "
            f"({FIXED})"
        )
    if two := sum(len(g) == 2 for g in groups):
        warnings.append(
            f"{two} of {n} papers have two {units}: each one's spread rests on one degree of freedom, so a paper "
            f"whose {units} vary more than the others' can look quiet and the interval then covers less than 95% "
            "(91-93% with one erratic paper, docs/statistics.md); three or more a paper hold"
        )
    warning = "; ".join(warnings) or None
    half = t_quantile(1 - ALPHA / 2, df) * se
    lo, hi = estimate - half, estimate + half
    low_b, high_b = bounds if bounds is not None else (None, None)
    if low_b is not None and lo < low_b:
        lo, method = float(low_b), method + ", clipped to the range"
    if high_b is not None and hi > high_b:
        hi, method = float(high_b), method + (", clipped to the range" if "clipped" not in method else "")
    return _cut_at(Interval(estimate, lo, hi, se, method, warning, n, runs), ceiling)


def _cut_at(found: Interval, ceiling: float | None) -> Interval:
    """``found`` with its upper end cut at ``ceiling`` (the largest mean the turn limits allow),
    saying so; unchanged below it or without one."""
    if ceiling is None or found.high is None or found.high <= ceiling:
        return found
    return replace(
        found,
        low=None if found.low is None else min(found.low, ceiling),
        high=float(ceiling),
        method=f"{found.method}, its upper end cut at {_fmt(ceiling)}, the largest mean the turn limits allow",
    )


def interval_of_means(
    means: np.ndarray,
    episodes: int,
    bounds: tuple[float | None, float | None] | None = None,
    unit: str = "paper",
    ceiling: float | None = None,
) -> Interval:
    """:func:`mean_interval` from the per-paper means themselves (``unit``: what one of them
    is, for the method's text: ``episode`` when the values are one paper's episodes).
    ``ceiling``: the largest mean the metric allows where its range has no fixed upper bound
    (steps: the turn limit). Over papers, an interval reaching past it is replaced by the bounded
    interval for a mean in [0, ceiling], which knows that the means pile up there: the log-scale
    interval cut at the ceiling covered 92.6-93.2% at 3-8 papers when a third of them reached it, the
    bounded one 94.8-97.5% in every steps design (``studies/stats_sim.py --only stepsrange``). Over
    episodes it is cut there; either says so."""
    found = _interval_of_means(means, episodes, bounds, unit)
    if ceiling is None or found.high is None or found.high <= ceiling or unit != "paper" or ceiling <= 0:
        return _cut_at(found, ceiling)
    bounded = _interval_of_means(np.minimum(means, ceiling), episodes, (0.0, float(ceiling)), unit)
    if bounded.low is None or bounded.high is None:
        return _cut_at(found, ceiling)
    return replace(
        bounded,
        method=f"{bounded.method}, {_fmt(ceiling)} the largest mean the turn limits allow (the log-scale "
        "interval reached past it)",
    )


def _interval_of_means(
    means: np.ndarray,
    episodes: int,
    bounds: tuple[float | None, float | None] | None,
    unit: str,
) -> Interval:
    n = len(means)
    about = LIKE if unit == "paper" else f"about {unit}s like these"
    low_b, high_b = bounds if bounds is not None else (None, None)
    if n == 0:
        return Interval(None, None, None, None, "no data", "no episodes", 0, 0)
    for b, side in ((low_b, "below"), (high_b, "above")):
        if b is not None and ((means < b - 1e-9) if side == "below" else (means > b + 1e-9)).any():
            bad = float(means[(means < b - 1e-9) if side == "below" else (means > b + 1e-9)][0])
            raise ValueError(f"a paper's mean {_fmt(bad)} is {side} the metric's bound {_fmt(b)}")
    estimate = float(means.mean())
    sd = float(means.std(ddof=1)) if n > 1 else 0.0
    se = sd / math.sqrt(n) if n > 1 else None
    if n < MIN_PAPERS:
        return Interval(
            estimate,
            None,
            None,
            se,
            "no interval",
            f"{n} {unit}{'s' if n != 1 else ''}: a 95% interval needs at least {MIN_PAPERS} {unit}s "
            "to hold on bounded or skewed metrics",
            n,
            episodes,
        )
    if low_b is not None and high_b is not None:
        bounded = bounded_interval(means, low_b, high_b)
        if bounded is not None:
            lo, hi, how, warning = bounded
            return Interval(estimate, lo, hi, se, f"{about}: {how} over {n} {unit}s ({n - 1} df)", warning, n, episodes)
    if no_spread(means, sd):
        return Interval(
            estimate,
            None,
            None,
            0.0,
            "no interval",
            f"all {n} {unit}s have the same value ({_fmt(estimate)}): no spread to build an interval from",
            n,
            episodes,
        )
    q = t_quantile(1 - ALPHA / 2, n - 1)
    if low_b == 0 and high_b is None and n < COX_MAX_UNITS and (means > 0).all():
        y = np.log(means)
        ybar, s2 = float(y.mean()), float(y.var(ddof=1))
        centre, half = ybar + s2 / 2, q * math.sqrt(s2 / n + s2**2 / (2 * (n - 1)))
        return Interval(
            estimate,
            math.exp(centre - half),
            math.exp(centre + half),
            se,
            f"{about}: log-scale t interval for a positive mean (Cox's method) over {n} {unit}s ({n - 1} df)",
            None if unit == "paper" else few_units_warning(n, unit),
            n,
            episodes,
        )
    lo, hi = estimate - q * sd / math.sqrt(n), estimate + q * sd / math.sqrt(n)
    method = f"{about}: t interval over {n} {unit} means ({n - 1} df)"
    if unit != "paper":
        method = f"{about}: t interval over {n} {unit}s ({n - 1} df)"
    if (low_b is not None and lo < low_b) or (high_b is not None and hi > high_b):
        method += f", clipped to the range [{_fmt(low_b) if low_b is not None else '-inf'}, "
        method += f"{_fmt(high_b) if high_b is not None else 'inf'}]"
        lo = max(lo, float(low_b)) if low_b is not None else lo
        hi = min(hi, float(high_b)) if high_b is not None else hi
    return Interval(estimate, lo, hi, se, method, None, n, episodes)


def few_units_warning(n: int, unit: str) -> str:
    """What an interval over fewer than COX_MAX_UNITS episodes of one tree must say: sampled from
    recorded step counts, neither Cox's interval nor the t interval held 95% this few units
    (docs/statistics.md, "episodes as units")."""
    return (
        f"{n} {unit}s: over fewer than {COX_MAX_UNITS} {unit}s, intervals for step counts sampled from "
        "recorded episodes covered less than 95%"
    )


def bounded_interval(means: np.ndarray, low_b: float, high_b: float) -> tuple[float, float, str, str | None] | None:
    """The 95% interval for a mean in ``[low_b, high_b]`` from 3 or more paper means, and its
    method's words; None when the means have no spread and sit inside the range (no interval).

    The method follows what the papers show, not a threshold on exact values alone: closeness to
    a bound through :func:`score_interval` (its spread shrinks towards the bound, so the interval
    reaches further into the range than towards the bound), skew through :func:`skew_corrected`.
    While fewer than a fifth of the papers sit at a bound the interval is the hull of both (a
    strong agent that fails badly on a few papers: left-skewed means near 1 with none at 1, where
    the t interval covered 84-90%); from a fifth on (a floor or ceiling agent) the score interval
    alone, which held 94-97% there at about the t interval's width, where the hull is half as
    wide again. Measured in ``studies/stats_sim.py`` (docs/statistics.md).

    The fourth item is a warning when no paper sits at a bound but the mean is within 1 / papers
    of one: there a tail too rare for these papers to show (a strong agent's rare failure) moves
    the mean by more than the papers can tell, and such intervals covered 87-93% below 18 papers."""
    n, width = len(means), high_b - low_b
    x = np.clip((means - low_b) / width, 0.0, 1.0)
    at_low, at_high = int((x <= 1e-9).sum()), int((x >= 1 - 1e-9).sum())
    at_bound = at_low + at_high >= max(1, math.ceil(AT_BOUND_SHARE * n))
    if not at_bound and no_spread(x, float(x.std(ddof=1))):
        return None
    warning = None
    how = f"score interval for a mean in [{_fmt(low_b)}, {_fmt(high_b)}]"
    if at_bound:
        lo, hi = score_interval(x)
        where = ", ".join(f"{k} at {_fmt(b)}" for k, b in ((at_low, low_b), (at_high, high_b)) if k)
        how += f" ({where} of {n})"
    else:
        lo, hi = score_and_skew(x)
        how += " widened by the skew-corrected t interval where it reaches further"
        gap = min(float(x.mean()), 1 - float(x.mean()))
        if gap < 1 / n:
            low_side = x.mean() < 0.5
            side, there = (_fmt(low_b), at_low) if low_side else (_fmt(high_b), at_high)
            reach = "which no paper reaches" if not there else f"which {there} of the {n} papers reach"
            warning = (
                f"the mean is within 1/{n} of the range's end {side}, {reach}: a rare paper "
                f"far from it, which {n} papers cannot show, would move the mean more than the interval "
                "allows (such intervals held 87-93% in simulation, docs/statistics.md)"
            )
        else:
            warning = _one_paper_warning(x, lo, hi, low_b, high_b)
    return low_b + lo * width, low_b + hi * width, how, warning


def _one_paper_warning(x: np.ndarray, lo: float, hi: float, low_b: float, high_b: float) -> str | None:
    """A warning when one more paper at an end of the range would move the mean of ``x`` (paper
    means scaled to [0, 1], none at a bound) past the interval [lo, hi]: the papers agree so
    closely that the interval is narrower than one paper's pull, and a kind of paper too rare for
    them to include (a failure on one paper in twenty) would leave the true mean outside it. When
    no such paper is drawn nothing else in the data says it exists: in simulation (``rarebad``,
    docs/statistics.md) such intervals held 77.6-83.9% at 8-18 papers, and the unwarned ones
    99.4-100%."""
    n, mean = len(x), float(x.mean())
    pulls = ((mean / (n + 1), mean - lo, low_b), ((1 - mean) / (n + 1), hi - mean, high_b))
    pull, room, end = max(pulls, key=lambda t: t[0] - t[1])
    if pull <= room:
        return None
    scale = high_b - low_b
    return (
        f"one more paper at {_fmt(end)} would move the mean by {pull * scale:.3g}, past the interval's "
        f"{room * scale:.3g} on that side: these {n} papers agree more closely than one paper unlike them "
        "would allow, and a kind of paper too rare for them to include would leave the true mean outside "
        "the interval (docs/statistics.md)"
    )


def score_interval(x: np.ndarray) -> tuple[float, float]:
    """The means m in [0, 1] that a t test with m's own spread does not reject: |mean - m| <=
    t x sqrt(r m (1 - m) / n), with r the papers' variance as a share of the largest a mean in
    [0, 1] allows (s^2 / (mean (1 - mean)), at most 1; 1 when every paper sits at one bound).
    Wilson's score interval for a proportion is the case r = 1; with r from the data it is as
    wide as the t interval at the mean and, unlike it, never reaches past a bound nor collapses
    to zero width there."""
    n, mean = len(x), float(x.mean())
    share = 1.0 if not 0.0 < mean < 1.0 else min(1.0, float(x.var(ddof=1)) / (mean * (1 - mean)))
    k = t_quantile(1 - ALPHA / 2, n - 1) ** 2 * share / n
    centre = (mean + k / 2) / (1 + k)
    half = math.sqrt(k * mean * (1 - mean) + k * k / 4) / (1 + k)
    return max(0.0, centre - half), min(1.0, centre + half)


def score_and_skew(x: np.ndarray) -> tuple[float, float]:
    """The hull of :func:`score_interval` and :func:`skew_corrected` (clipped to [0, 1]) on values
    in [0, 1] that spread."""
    lo, hi = score_interval(x)
    skew_lo, skew_hi = skew_corrected(x)
    return min(lo, max(skew_lo, 0.0)), max(hi, min(skew_hi, 1.0))


def skew_corrected(x: np.ndarray) -> tuple[float, float]:
    """The t interval corrected for the papers' skew by Hall's transformation (Hall, "On the
    removal of skewness by transformation", JRSS B 54(1), 1992): with T = (mean - m) / s and g
    the sample skewness, g(T) = T + g T^2 / 3 + g^2 T^3 / 27 + g / (6 n) is close to symmetric,
    so the interval inverts it at the t quantiles. It reaches further on the side of the long
    tail, and is the t interval when the papers are symmetric.

    g rises everywhere but is flat at T = -3 / g (its slope is (1 + g T / 3)^2), and the
    correction is not carried past that point: beyond it the inverse runs off as fast as the
    skew grows, and one paper far from seven alike (skewness 1.8) put the end at the range's
    bound, an interval that admits every paper at 1 when seven of eight sit near 0.5. Capped,
    that end is mean + 3 s / g (0.82 there, against the t interval's 0.69 and 0.74 from the
    binomial bound on how common such papers can be); where the expansion holds the cap is never
    reached (studies/stats_sim.py measures coverage with it)."""
    n, mean = len(x), float(x.mean())
    s = float(x.std(ddof=1))
    gamma = float(((x - mean) ** 3).mean()) / s**3
    q = t_quantile(1 - ALPHA / 2, n - 1) / math.sqrt(n)

    def inverse(y: float) -> float:
        if abs(gamma) < 1e-9:
            return y
        return 3 / gamma * (float(np.cbrt(max(0.0, 1 + gamma * (y - gamma / (6 * n))))) - 1)

    return mean - s * inverse(q), mean - s * inverse(-q)


# -- a ratio of two means over papers ------------------------------------------------------------
def relative_change(papers: Sequence, values: Sequence, is_baseline: Sequence) -> Interval:
    """100 (f - f0) / f0 between the mean over papers of per-paper means at a level (``f``) and at
    the baseline (``f0``, where ``is_baseline``), with Fieller's 95% interval for the ratio f / f0
    (Fieller, "Some problems in interval estimation", JRSS B 16(2), 1954).

    The ratios theta the interval keeps are those where f - theta f0 is within t standard errors
    of 0: a quadratic in theta, from the papers' variances of each side's mean and their covariance
    on the papers that have both (papers independent of each other; the sides of one paper may be
    correlated). When the baseline's own interval reaches 0 the set is unbounded (the change could
    be any size) and no interval is printed: a t interval on a jackknife standard error, which this
    replaced, was hundreds of points wide there and covered 80-88% at 5-8 papers (docs/statistics.md)."""
    sides: dict[str, list[list[float]]] = {}
    for paper, v, base in zip(papers, values, is_baseline, strict=True):
        if paper is None or v is None or base is None or v != v:
            continue
        sides.setdefault(str(paper), [[], []])[0 if base else 1].append(float(v))
    episodes = sum(len(a) + len(b) for a, b in sides.values())
    names = sorted(sides)
    y = np.array([np.mean(sides[p][0]) if sides[p][0] else np.nan for p in names])
    x = np.array([np.mean(sides[p][1]) if sides[p][1] else np.nan for p in names])
    has_y, has_x = ~np.isnan(y), ~np.isnan(x)
    both = has_x & has_y
    n = int(both.sum())
    if not has_y.any() or not has_x.any():
        return Interval(None, None, None, None, "no data", "no papers with both levels", len(names), episodes)
    xbar, ybar = float(x[has_x].mean()), float(y[has_y].mean())
    if ybar <= 0:
        why = "the relative change is undefined: the level-0 frequency is 0"
        return Interval(None, None, None, None, "no interval", why, len(names), episodes)
    estimate = 100 * (xbar / ybar - 1)
    if n < MIN_PAPERS:
        why = f"{n} paper{'s' if n != 1 else ''} with both levels: a 95% interval needs at least {MIN_PAPERS} papers"
        return Interval(estimate, None, None, None, "no interval", why, len(names), episodes)
    nx, ny = int(has_x.sum()), int(has_y.sum())
    vxx = float(x[has_x].var(ddof=1)) / nx if nx > 1 else 0.0
    vyy = float(y[has_y].var(ddof=1)) / ny if ny > 1 else 0.0
    vxy = float(np.cov(x[both], y[both])[0, 1]) * n / (nx * ny) if n > 1 else 0.0
    theta = xbar / ybar
    se = 100 * math.sqrt(max(0.0, vxx - 2 * theta * vxy + theta * theta * vyy)) / ybar
    if se <= 1e-9 * max(1.0, abs(estimate)):  # the levels in step on every paper: never a zero-width interval
        why = f"the two levels move in step on all {n} papers: no spread to build an interval from"
        return Interval(estimate, None, None, 0.0, "no interval", why, len(names), episodes)
    q = t_quantile(1 - ALPHA / 2, n - 1)
    method = (
        f"{LIKE}: Fieller's interval for the ratio of the mean at this level to the level-0 mean over {n} "
        f"papers ({n - 1} df), papers independent"
    )
    left = len(names) - n
    if left:
        method += f"; {left} paper{'s' if left != 1 else ''} with one level only count in that level's mean"
    found = _fieller(xbar, ybar, vxx, vyy, vxy, q)
    if found is None:
        why = (
            f"Fieller's interval is unbounded: the level-0 frequency {_fmt(ybar)} is within its own 95% interval "
            f"of 0 (t {_fmt(ybar / math.sqrt(vyy)) if vyy > 0 else 'inf'} < {_fmt(q)}), so these papers bound "
            "no relative change; the absolute frequencies beside it are what they show"
        )
        return Interval(estimate, None, None, se, method, why, len(names), episodes)
    low, high = found
    if low < 0:  # frequencies cannot fall below 0: the change not below -100%
        low, method = 0.0, method + ", cut at -100%"
    return Interval(estimate, 100 * (low - 1), 100 * (high - 1), se, method, None, len(names), episodes)


def _fieller(xbar: float, ybar: float, vxx: float, vyy: float, vxy: float, q: float) -> tuple[float, float] | None:
    """The ratios theta with (xbar - theta ybar)^2 <= q^2 (vxx - 2 theta vxy + theta^2 vyy): Fieller's
    set for xbar / ybar from the means' variances and covariance; None when it is unbounded (the
    denominator's own interval reaches 0)."""
    a = ybar * ybar - q * q * vyy
    b = xbar * ybar - q * q * vxy
    c = xbar * xbar - q * q * vxx
    if a <= 0:
        return None
    root = math.sqrt(max(0.0, b * b - a * c))
    return (b - root) / a, (b + root) / a


POOLED_FEW_PAPERS = 5  # fewer papers with a denominator: the pooled rate's interval is warned
POOLED_FEW_COUNTS = 10  # fewer counted in all (fakes shown, answers given): warned too


def pooled_rate(papers: Sequence, numerators: Sequence, denominators: Sequence) -> Interval:
    """A pooled rate, sum over sum (Fig. 3c's fakes spotted over fakes shown, the control's correct
    answers over answers), with Fieller's 95% interval for the ratio of the papers' mean totals
    (:func:`_fieller`; papers independent, each paper's numerator and denominator correlated as
    they come), cut to [0, 1]. A paper whose denominator is 0 (no fake shown) counts in both means.

    The rate weights each paper by its denominator: a paper shown more fakes counts more. Measured
    on simulated Fig. 3c campaigns (studies/stats_sim.py, "pooled rates"), the interval held
    93.9-95.3% once ``POOLED_FEW_PAPERS`` papers had a denominator and ``POOLED_FEW_COUNTS`` were
    counted, and less below (87.6% with under 5 papers and under 10 fakes): those rows are warned. The
    t interval on a jackknife standard error it replaced held about as often, while its warning (a
    fifth of the papers' rates at 0 or 1) fired on 96-100% of the rows at a = 1, which held."""
    totals: dict[str, list[float]] = {}
    for paper, x, y in zip(papers, numerators, denominators, strict=True):
        if paper is None or x is None or y is None or x != x or y != y:
            continue
        t = totals.setdefault(str(paper), [0.0, 0.0])
        t[0] += float(x)
        t[1] += float(y)
    n = len(totals)
    episodes = sum(1 for p, x, y in zip(papers, numerators, denominators, strict=True) if p is not None)
    x = np.array([t[0] for t in totals.values()])
    y = np.array([t[1] for t in totals.values()])
    if n == 0 or y.sum() == 0:
        return Interval(None, None, None, None, "no interval", "no denominator", n, episodes)
    estimate = float(x.sum() / y.sum())
    if n < MIN_PAPERS:
        why = f"{n} paper{'s' if n != 1 else ''}: a 95% interval needs at least {MIN_PAPERS} papers"
        return Interval(estimate, None, None, None, "no interval", why, n, episodes)
    vxx, vyy = float(x.var(ddof=1)) / n, float(y.var(ddof=1)) / n
    vxy = float(np.cov(x, y)[0, 1]) / n
    se = math.sqrt(max(0.0, vxx - 2 * estimate * vxy + estimate**2 * vyy)) / float(y.mean())
    method = (
        f"{LIKE}: Fieller's interval for the pooled rate (sum over sum, each paper weighted by its "
        f"denominator) over {n} papers ({n - 1} df), papers independent"
    )
    if se == 0:
        why = f"no spread over the {n} papers to build an interval from"
        return Interval(estimate, None, None, 0.0, "no interval", why, n, episodes)
    found = _fieller(float(x.mean()), float(y.mean()), vxx, vyy, vxy, t_quantile(1 - ALPHA / 2, n - 1))
    if found is None:
        why = "Fieller's interval is unbounded: the papers' denominators are not bounded away from 0"
        return Interval(estimate, None, None, se, method, why, n, episodes)
    low, high = found
    if low < 0 or high > 1:
        low, high, method = max(0.0, low), min(1.0, high), method + ", cut to [0, 1]"
    warnings = []
    counted, shown = int((y > 0).sum()), float(y.sum())
    if counted < POOLED_FEW_PAPERS or shown < POOLED_FEW_COUNTS:
        warnings.append(
            f"{counted} of {n} papers have a denominator, {_fmt(shown)} counted in all: below {POOLED_FEW_PAPERS} "
            f"papers or {POOLED_FEW_COUNTS} counted the interval held less than 95% (docs/statistics.md)"
        )
    return Interval(estimate, low, high, se, method, "; ".join(warnings) or None, n, episodes)


# -- independence of runs -------------------------------------------------------------------------
RUN_EFFECT_DRAWS = 2000  # seeded permutations of the run labels within papers


@dataclass(frozen=True)
class RunEffect:
    """:func:`run_effect`: its p-value, the runs and the papers it compared, and its method; ``low``
    and ``high``, the interval over runs as well as papers like these (:func:`runs_interval`)."""

    p: float
    runs: int
    papers: int
    method: str
    low: float | None = None
    high: float | None = None


def run_effect(
    papers: Sequence,
    runs: Sequence,
    values: Sequence,
    seed: int = 0,
    draws: int = RUN_EFFECT_DRAWS,
    bounds: tuple[float, float] | None = (0.0, 1.0),
) -> RunEffect | None:
    """Do the runs of a campaign differ beyond what its papers allow? A shock shared by every paper
    of one run (one API day, one seed reused across trees) makes the papers dependent, and an
    interval over papers then covers far less than 95% (docs/statistics.md, "shared run shocks").

    The test: on the papers that have every run (a run's values on a paper averaged), the spread
    of the runs' means around the grand mean after each paper's own mean is taken out, against the
    same with the run labels permuted within each paper (``draws`` seeded permutations): with no
    run effect the labels are exchangeable within a paper, so the test holds its size whatever the
    values' shape. None with fewer than 2 runs or 2 such papers. The same grid gives
    :func:`runs_interval` (``bounds``: the metric's range), the interval that holds whether or not
    the test sees the shock."""
    cells: dict[tuple[str, str], list[float]] = {}
    for paper, run, v in zip(papers, runs, values, strict=True):
        if paper is None or run is None or v is None or v != v:
            continue
        cells.setdefault((str(paper), str(run)), []).append(float(v))
    run_names = sorted({r for _, r in cells})
    runs_of: dict[str, int] = {}  # each paper's runs, counted once (a check of every run per cell grew
    for paper, _ in cells:  # with the square of the runs: 0.8 s of a 5M-event leaderboard)
        runs_of[paper] = runs_of.get(paper, 0) + 1
    full = sorted(p for p, n in runs_of.items() if n == len(run_names))
    if len(run_names) < 2 or len(full) < 2:
        return None
    grid = np.array([[np.mean(cells[p, r]) for r in run_names] for p in full])  # papers x runs
    low, high = runs_interval(grid, bounds)
    y = grid - grid.mean(axis=1, keepdims=True)

    def spread(x: np.ndarray) -> np.ndarray:  # (..., papers, runs): the runs' means' sum of squares
        return (x.mean(axis=-2) ** 2).sum(axis=-1)

    observed = float(spread(y))
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((draws, *y.shape)), axis=-1)
    permuted = np.take_along_axis(np.broadcast_to(y, (draws, *y.shape)), order, axis=-1)
    tol = 1e-12 * max(1.0, observed)
    p = (1 + int((spread(permuted) >= observed - tol).sum())) / (draws + 1)
    method = (
        f"run effect: the spread of the {len(run_names)} runs' means, their labels permuted within each of "
        f"{len(full)} papers ({draws} seeded permutations, seed {seed})"
    )
    return RunEffect(p, len(run_names), len(full), method, low, high)


def runs_interval(grid: np.ndarray, bounds: tuple[float, float] | None = None) -> tuple[float, float]:
    """The 95% interval for the mean over papers and runs like these, from a papers x runs grid of
    means: a shock that every paper of one run shares (one API day) moves the grand mean by the
    runs' mean shock, which no interval over papers can see. The grand mean's error is a part that
    varies with the papers (their means' spread, P - 1 degrees of freedom) plus a part that varies
    with the runs (the runs' means' spread, R - 1), independent of each other; each is bounded by
    its own t interval at level 1 - ALPHA / 2, so by Bonferroni the sum holds at least 95% whatever
    the two variances are, with no estimate of one borrowed from the other (Satterthwaite's
    degrees of freedom on a 1-df run variance, as in two-way cluster-robust variance, held
    83-92% with two or three runs: docs/statistics.md). With two runs the run part is 12.7 times
    the runs' means' half-difference, and that width is what two runs can show. ``bounds``: the
    metric's range, where the interval is cut."""
    papers, runs = grid.shape
    q = 1 - ALPHA / 4
    half = t_quantile(q, papers - 1) * float(grid.mean(axis=1).std(ddof=1)) / papers**0.5
    half += t_quantile(q, runs - 1) * float(grid.mean(axis=0).std(ddof=1)) / runs**0.5
    mean = float(grid.mean())
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return low, high


# -- the paired test -------------------------------------------------------------------------------
def paired_test(papers: Sequence, differences: Sequence, seed: int = 0, population: str = "papers") -> PairedTest:
    """The two-sided sign-flip test that the mean over papers of per-paper mean differences is
    0, and the 95% interval of the shifts it does not reject (docs/statistics.md).

    ``population``: ``papers`` (the default) speaks of papers like these: the papers' mean
    differences are flipped. ``these`` speaks of exactly these papers: :func:`fixed_paired_test`."""
    if population == "these":
        return fixed_paired_test(list(by_paper(papers, differences).values()))
    _, means, counts = paper_means(papers, differences)
    return paired_test_of_means(means, int(counts.sum()), seed)


def fixed_paired_test(groups: list[list[float]]) -> PairedTest:
    """The test and interval for the mean over exactly these papers of their mean differences
    (docs/DECISIONS.md #26), from each paper's pairs: only the runs vary, so the standard error is the
    pairs' spread within their papers (:func:`fixed_paper_interval`), with t quantiles on
    degrees of freedom by Welch-Satterthwaite, each paper with its own spread; the p-value is the
    same t statistic's on the same degrees of freedom, so the two agree.

    Flipping single pairs, as before, tested that B and A do alike on every one of these papers:
    when the effect differs by paper that null is false even where the mean effect is 0, and its
    interval carried the spread of the effects between papers, twice as wide as this one and on
    one 18-paper campaign wider than the interval for papers like these."""
    n = len(groups)
    pairs = sum(len(g) for g in groups)
    if n == 0:
        return PairedTest(None, None, None, None, "no data", "no pairs", 0, 0)
    r = interval_of_groups(groups, what="t test and interval", units="pairs")
    spread = _fixed_spread(groups)
    if r.low is None or r.se is None or r.se == 0 or spread is None:
        return PairedTest(r.estimate, None, None, r.se, r.method, r.warning, n, pairs)
    p = 1.0 - t_cdf_two_sided(abs(r.estimate or 0.0) / r.se, spread.df)
    return PairedTest(r.estimate, r.low, r.high, r.se, r.method, r.warning, n, pairs, p=p, p_min=0.0)


def _patterns(d: np.ndarray, w: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Sign patterns of the weighted values ``w * d`` (one row of values, or rows x values): the
    signed sum of each (per row: patterns x rows), its signed sum of weights, the weight each
    pattern stands for and the number of patterns in all. Up to ``EXACT_PAPERS`` values every
    pattern whose first sign is + (a pattern and its mirror are extreme at the same shifts, so
    each stands for two); beyond, ``FLIPS`` seeded patterns."""
    n = d.shape[-1]
    x = (w * d).T  # values x rows (or values)
    if n <= EXACT_PAPERS:
        sums, ks = x[:1], w[:1]
        for value, weight in zip(x[1:], w[1:], strict=True):  # doubling, without a 2^n x n table
            sums = np.concatenate([sums - value, sums + value])
            ks = np.concatenate([ks - weight, ks + weight])
        return sums, ks, 2, 2**n
    flips = (np.random.default_rng(seed).integers(0, 2, size=(FLIPS, n), dtype=np.int8) * 2 - 1).astype(np.float64)
    return flips @ x, flips @ w, 1, FLIPS + 1


def smallest_p(papers: int) -> float:
    """The smallest two-sided p the sign-flip test can give on ``papers`` differences: the observed
    pattern and its mirror among all 2^papers (exact), or 1 / (``FLIPS`` + 1) beyond ``EXACT_PAPERS``."""
    return 2 / 2**papers if papers <= EXACT_PAPERS else 1 / (FLIPS + 1)


def sign_flip_p(d: np.ndarray, seed: int = 0) -> float:
    """The two-sided sign-flip p-value of the per-paper mean differences ``d`` alone (what
    :func:`paired_test_of_means` prints as ``p``, without its interval)."""
    return float(_sign_flip_pvalues(np.asarray(d, np.float64)[None, :], seed)[0])


def skewness(x: np.ndarray) -> float | None:
    """The sample skewness of ``x`` (the third central moment over the cube of the SD); None when
    ``x`` has fewer than 3 values or no spread."""
    x = np.asarray(x, np.float64)
    if len(x) < 3:
        return None
    s = float(x.std(ddof=1))
    if no_spread(x, s):
        return None
    return float(((x - x.mean()) ** 3).mean()) / s**3


def no_spread(values: np.ndarray, spread: float | None) -> bool:
    """Whether ``spread`` (an SD or SE of ``values``) is zero up to floating-point noise: equal paper
    means computed by different sums differ in their last bits (a spread of 1e-17, not 0.0), which
    would print a zero-width interval instead of saying there is no spread."""
    if spread is None:
        return False
    scale = max(1.0, float(np.abs(values).max())) if len(values) else 1.0
    return spread <= 1e-9 * scale


BOOTSTRAP_T_DRAWS = 2000  # resamples of papers for the bootstrap-t beside the sign flip, from SYMMETRY_PAPERS


def _bootstrap_t(rows: np.ndarray, seed: int, draws: int = BOOTSTRAP_T_DRAWS) -> tuple[np.ndarray, np.ndarray]:
    """The equal-tailed bootstrap-t over papers of each row's mean (rows x papers), with the same
    seeded resamples for every row: the two-sided p that the mean is 0, 2 min(#(t* >= t) + 1,
    #(t* <= t) + 1) / (draws + 1), and the two order statistics of t* between which a shift is not
    rejected at 5% (so the interval is exactly the shifts whose p exceeds 0.05)."""
    n = rows.shape[1]
    picks = np.random.default_rng([seed, 7]).integers(0, n, (draws, n))
    k = math.floor(ALPHA / 2 * (draws + 1) - 1) + 1  # #(t* >= t) >= k keeps a shift, and likewise below
    p = np.empty(len(rows))
    bounds = np.empty((len(rows), 2))
    step = max(1, 2**22 // (draws * n))
    for start in range(0, len(rows), step):
        d = rows[start : start + step]
        mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(n)
        x = d[:, picks]  # rows x draws x papers
        with np.errstate(invalid="ignore", divide="ignore"):
            t_star = (x.mean(axis=2) - mean[:, None]) / (x.std(axis=2, ddof=1) / math.sqrt(n))
            t_obs = mean / se
        t_star = np.sort(np.where(np.isfinite(t_star), t_star, 0.0), axis=1)
        above = (t_star >= t_obs[:, None] - 1e-12).sum(axis=1)
        below = (t_star <= t_obs[:, None] + 1e-12).sum(axis=1)
        p[start : start + step] = np.minimum(1.0, 2 * (np.minimum(above, below) + 1) / (draws + 1))
        bounds[start : start + step] = np.stack([t_star[:, k - 1], t_star[:, draws - k]], axis=1)
    return p, bounds


def paired_test_of_means(d: np.ndarray, pairs: int, seed: int = 0) -> PairedTest:
    """:func:`paired_test` (papers like these) from the per-paper mean differences themselves.

    From ``SYMMETRY_PAPERS`` papers the test is the sign flip and the bootstrap-t over papers
    (:func:`_bootstrap_t`) at once: p is the larger of their two, and the interval, the shifts
    neither rejects, their union. The sign flip is exact on symmetric differences however heavy
    their tails, the bootstrap-t holds under skew; on log-normal null effects the sign flip alone
    rejected 8.9-11.1% at 30-60 papers, on symmetric t(3) ones the bootstrap-t alone 7.2-9.3%, and
    the pair holds both (docs/statistics.md)."""
    n = len(d)
    if n == 0:
        return PairedTest(None, None, None, None, "no data", "no pairs", 0, 0)
    se = float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else None
    what = f"{LIKE}: sign-flip test of {n} paper mean differences"
    found = _sign_flip(d, np.full(n, 1 / n), n, pairs, seed, se, what, "papers")
    if n < SYMMETRY_PAPERS or found.low is None or found.high is None or found.p is None or not se:
        return found
    p_t, (q_low, q_high) = (x[0] for x in _bootstrap_t(np.asarray(d, np.float64)[None, :], seed))
    mean = float(d.mean())
    method = (
        f"{found.method}; with the bootstrap-t over papers ({BOOTSTRAP_T_DRAWS} resamples, seed {seed}), p the "
        "larger of the two and the interval the shifts neither rejects: it holds when the differences are skewed"
    )
    return replace(
        found,
        p=max(found.p, float(p_t)),
        low=min(found.low, mean - float(q_high) * se),
        high=max(found.high, mean - float(q_low) * se),
        method=method,
    )


def _sign_flip(d, w, papers: int, pairs: int, seed: int, se, what: str, units: str) -> PairedTest:
    """The test and its inverted interval for the weighted mean sum(w d) (weights summing to 1).

    At a shift delta, pattern s (signed sum S of w d, signed weights k) is at least as extreme
    as the observed one (sum D) when |S - k delta| >= |D - delta|: a difference of squares,
    (S - D + (1 - k) delta) (S + D - (1 + k) delta) >= 0, which holds on the closed interval
    between its two roots (always, for the observed pattern and its mirror). Counting the
    intervals that hold a shift gives the p-value at every shift: the printed p is the count at
    0 and the interval is every shift whose p exceeds 5%, so they cannot disagree."""
    m = len(d)
    estimate = float(d.mean()) if np.all(w == w[0]) else float((w * d).sum())  # equal weights: the plain mean
    sums, ks, weight, total = _patterns(d, w, seed)
    exact = weight == 2
    whole = np.abs(np.abs(ks) - 1) < 1e-9  # every sign alike: extreme at every shift
    s, k = sums[~whole], ks[~whole]
    first, second = (estimate - s) / (1 - k), (estimate + s) / (1 + k)
    starts, ends = np.sort(np.minimum(first, second)), np.sort(np.maximum(first, second))
    always = weight * int(whole.sum()) + (0 if exact else 1)  # Monte Carlo: the observed pattern, once more
    tol = 1e-12 * max(1.0, float(np.abs(d).mean()))

    def count(x: np.ndarray) -> np.ndarray:
        inside = np.searchsorted(starts, x + tol, "right") - np.searchsorted(ends, x - tol, "left")
        return always + weight * inside

    p = float(count(np.zeros(1))[0]) / total
    p_min = smallest_p(m)
    kind = f"exact over all {total} sign patterns" if exact else f"Monte Carlo, {FLIPS} sign patterns, seed {seed}"
    method = f"{what} ({kind}); interval: the shifts it does not reject at 5%"
    if units == "papers":
        method += "; exact when the papers' differences spread symmetrically about their mean"
    warnings = []
    low = high = None
    if p_min > ALPHA:
        warnings.append(
            f"{m} {units if m != 1 else units[:-1]}: the smallest p this test can give is {_fmt(p_min)}; "
            "it cannot show a difference at the 5% level"
        )
    elif no_spread(d, se):
        warnings.append(f"all {m} {units} have the same difference: no spread to build an interval from")
    else:
        need = ALPHA * total
        kept_starts = starts[count(starts) > need]
        kept_ends = ends[count(ends) > need]
        if len(kept_starts) and len(kept_ends):
            # An end within the test's tolerance of 0 is 0: the test counts the two as one shift, so
            # printing -0.00 (an end of -5e-18) beside p = 0.5 would disagree with it by a sign.
            low, high = (0.0 if abs(x) <= tol else float(x) for x in (kept_starts.min(), kept_ends.max()))
    if units == "papers" and p_min <= ALPHA and m < SYMMETRY_PAPERS:
        warnings.append(
            f"{m} papers: p and the interval hold if the papers' differences spread symmetrically, which {m} "
            "papers cannot show; when a few papers carry a large effect, p can be too small "
            "(docs/statistics.md measures how much)"
        )
    warning = "; ".join(warnings) or None
    return PairedTest(estimate, low, high, se, method, warning, papers, pairs, p=p, p_min=p_min)


# -- multiplicity ----------------------------------------------------------------------------------
def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment over the p-values given (None stays None and does not count):
    the family-wise error rate is at most 5% when each adjusted p is compared with 0.05."""
    ps = [(p, i) for i, p in enumerate(pvalues) if p is not None]
    m = len(ps)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(ps)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


# -- ranks -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rank:
    agent: str
    rank: int
    low: int | None
    high: int | None
    method: str = field(default="")
    warning: str | None = None


def rank_intervals(
    agents: Sequence,
    papers: Sequence,
    values: Sequence,
    higher_is_better: bool = True,
    resamples: int = 2000,
    seed: int = 0,
    simultaneous: bool = False,
    population: str = "papers",
) -> list[Rank]:
    """Each agent's rank (1 = best) by its mean over papers of per-paper means, and a 95% set of the
    ranks it plausibly holds, from the paired sign-flip test (:func:`sign_flip_p`) of pairs of
    agents on the papers both have.

    Each agent's set holds for that agent alone (the marginal rank sets of Mogstad, Romano,
    Shaikh and Zhu, "Inference for ranks with applications to mobility across neighbourhoods and
    academic achievement across countries", REStud 91(1), 2024): the agent is tested against each
    other one with Holm's adjustment over its own pairs, and ranks no better than 1 + the agents
    shown better than it and no worse than the agents not shown worse. An agent tied with others
    in truth is covered at least 95% of the time (the percentile intervals over resampled papers
    this replaced spanned a 15-way tie 5% of the time, studies/stats_sim.py). ``simultaneous``:
    sets that hold for every agent at once, Holm's adjustment over all pairs (Klein, Wright and
    Wieczorek, "A joint confidence region for an overall ranking of populations", JRSS C 69(3),
    2020). When the test's smallest p (:func:`smallest_p`) is above Holm's first threshold (0.05 over
    the pairs: two agents at 5 papers, 15 agents at 12 jointly), no pair can be shown apart, every
    set is every rank, and the rows say so. Each pair is tested as :func:`paired_test_of_means` tests
    one (papers independent): below ``SYMMETRY_PAPERS`` papers the sign flip alone, which holds when
    each pair's differences spread symmetrically over papers, and each row says so; from there with
    the bootstrap-t beside it, which holds under skew (with two agents equal in truth and one's gains
    over the other from a few papers, the sign flip alone held 90.6-91.8% at 30-60 papers, the pair
    93.3-95.2%: studies/stats_sim.py). ``resamples`` serves ``population`` ``these`` alone.

    ``population``: ``these`` speaks of exactly these papers (docs/DECISIONS.md #26): the papers are not
    resampled; each agent's paper means are drawn from their runs' spread (:func:`_fixed_ranks`),
    and the simultaneous intervals test each pair on those spreads. An agent with no value (every
    one None or NaN) has no rank: it is left out rather than ranked last."""
    names = sorted({str(a) for a, v in zip(agents, values, strict=True) if a is not None and v is not None and v == v})
    if not names:
        return []
    paper_ids = sorted({str(p) for p in papers if p is not None})
    index = {p: i for i, p in enumerate(paper_ids)}
    sums = np.zeros((len(names), len(paper_ids)))
    counts = np.zeros((len(names), len(paper_ids)))
    a_index = {a: i for i, a in enumerate(names)}
    for a, p, v in zip(agents, papers, values, strict=True):
        if a is None or p is None or v is None or math.isnan(float(v)):
            continue
        sums[a_index[str(a)], index[str(p)]] += float(v)
        counts[a_index[str(a)], index[str(p)]] += 1
    has = counts > 0
    means = np.where(has, sums / np.maximum(counts, 1), 0.0)
    sign = -1.0 if higher_is_better else 1.0

    def ranks_of(weights: np.ndarray) -> np.ndarray:  # weights: (b, papers) copies of each paper
        w = weights[:, None, :] * has[None, :, :]  # (b, agents, papers)
        denominator = w.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            score = (w * means[None]).sum(axis=2) / denominator
        score = np.where(denominator > 0, score, np.inf if not higher_is_better else -np.inf)
        order = np.argsort(sign * score, axis=1, kind="stable")
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, len(names) + 1)[None, :].repeat(len(weights), 0), axis=1)
        return ranks

    point = ranks_of(np.ones((1, len(paper_ids))))[0]
    warning = None
    if population == "these":
        cells: list[list[list[float]]] = [[[] for _ in paper_ids] for _ in names]
        for a, p, v in zip(agents, papers, values, strict=True):
            if a is not None and p is not None and v is not None and not math.isnan(float(v)):
                cells[a_index[str(a)]][index[str(p)]].append(float(v))
        fixed = _fixed_ranks(cells, sign, resamples, seed, simultaneous)
        return [
            Rank(names[i], int(point[i]), fixed.low[i], fixed.high[i], fixed.method, fixed.warning)
            for i in range(len(names))
        ]
    if len(paper_ids) < MIN_PAPERS and len(names) > 1:  # never claims what the means' intervals refuse
        warning = (
            f"{len(paper_ids)} paper{'s' if len(paper_ids) != 1 else ''}: no rank interval below {MIN_PAPERS} "
            "papers, as no interval of the means it ranks"
        )
        return [Rank(names[i], int(point[i]), None, None, "no interval", warning) for i in range(len(names))]
    tests = _pair_tests(means, has, sign, seed)
    k, n = len(names), len(paper_ids)
    condition = (
        f"each pair's test with the bootstrap-t over papers beside the sign flip (from {SYMMETRY_PAPERS} papers, p "
        "the larger of the two): they hold when the differences are skewed"
        if n >= SYMMETRY_PAPERS
        else "they hold when each pair's differences spread symmetrically over papers"
    )
    if simultaneous:
        low, high, shown = _bounds_from_tests(tests, k)
        pairs = k * (k - 1) // 2
        method = (
            f"rank intervals that hold for every agent at once: the paired sign-flip test of all {pairs} pairs of "
            f"agents over {n} papers, Holm's adjustment; {condition}"
        )
        warning = _rank_warning(names, tests, shown, has, n, "the agents")
        return [Rank(names[i], int(point[i]), int(low[i]), int(high[i]), method, warning) for i in range(k)]
    method = (
        f"each agent's rank set on its own: the paired sign-flip test of it against each other agent over {n} "
        f"papers, Holm's adjustment over its {k - 1} pair{'s' if k != 2 else ''} (the marginal rank sets of "
        f"Mogstad, Romano, Shaikh and Zhu); not all at once (--joint-ranks holds for every agent); {condition}"
    )
    out = []
    for i in range(k):
        own = [t for t in tests if i in t[:2]]
        low, high, shown = _bounds_from_tests(own, k)
        warning = _rank_warning(names, own, shown, has, n, names[i])
        out.append(Rank(names[i], int(point[i]), int(low[i]), int(high[i]), method, warning))
    return out


def _rank_warning(
    names: list[str],
    tests: list[tuple[int, int, float, float]],
    shown: set[tuple[int, int]],
    has: np.ndarray,
    n: int,
    whom: str,
) -> str | None:
    """What a set of rank bounds from the pairs' ``tests`` (Holm over them) cannot promise: that
    no pair can be shown apart at these papers (the test's smallest p above Holm's first
    threshold), or that ``n`` papers, below ``SYMMETRY_PAPERS``, cannot show the symmetry the sign
    flip rests on (from there each pair's test has the bootstrap-t beside it, which holds under
    skew: :func:`_pair_tests`)."""
    pairs = len(tests)
    if not pairs:
        return None
    shared = max(int((has[i] & has[j]).sum()) for i, j, *_ in tests)
    if not shown and smallest_p(shared) > ALPHA / pairs:
        who = f"the {len(names)} agents" if whom == "the agents" else f"{whom} and another agent"
        return (
            f"no pair of {who} can be told apart at {shared} papers: Holm's first threshold over {pairs} "
            f"pair{'s' if pairs != 1 else ''} is {_fmt(ALPHA)} / {pairs} = {_fmt(ALPHA / pairs)}, and the paired "
            f"test's smallest p at {shared} papers is {_fmt(smallest_p(shared))}; every interval spans every "
            "rank whatever the data (fewer agents or more papers can separate them)"
        )
    if shown and n < SYMMETRY_PAPERS:
        return (
            f"{n} papers: the rank intervals hold if each pair's differences spread symmetrically over papers, "
            f"which {n} papers cannot show; when one agent's gains over another come from a few papers they can "
            "miss (docs/statistics.md measures how often)"
        )
    return None


def _pair_tests(means: np.ndarray, has: np.ndarray, sign: float, seed: int) -> list[tuple[int, int, float, float]]:
    """The paired test of every pair of agents (agents x papers ``means`` where ``has``; ``sign`` -1
    when higher is better) on the papers both have, as :func:`paired_test_of_means` tests one pair:
    the sign flip, and from ``SYMMETRY_PAPERS`` papers the larger of its p and the bootstrap-t's.
    Returns (i, j, mean difference, p), a difference > 0 putting j below i."""
    k = len(means)
    differences = {}
    shared: dict[bytes, list[tuple[int, int]]] = {}  # pairs on the same papers are tested at once
    for i in range(k):
        for j in range(i + 1, k):
            both = has[i] & has[j]
            differences[i, j] = sign * (means[j, both] - means[i, both])
            shared.setdefault(both.tobytes(), []).append((i, j))
    p: dict[tuple[int, int], float] = {}
    for pairs in shared.values():
        rows = np.array([differences[pair] for pair in pairs])
        found = _sign_flip_pvalues(rows, seed) if rows.shape[1] else np.ones(len(pairs))
        if rows.shape[1] >= SYMMETRY_PAPERS:  # as the paired test: the larger p of the two holds under skew
            found = np.maximum(found, _bootstrap_t(rows, seed)[0])
        p.update(zip(pairs, (float(x) for x in found), strict=True))
    return [(i, j, float(differences[i, j].mean()) if len(differences[i, j]) else 0.0, p[i, j]) for i, j in differences]


def _bounds_from_tests(
    tests: list[tuple[int, int, float, float]], k: int
) -> tuple[np.ndarray, np.ndarray, set[tuple[int, int]]]:
    """Rank bounds of ``k`` agents from the tests of their pairs (i, j, mean difference, p; a
    difference > 0 puts j below i), Holm-adjusted over the pairs: an agent ranks no better than
    1 + the agents shown above it and no worse than k - the agents shown below it. Also the
    pairs shown apart: only their tests make a claim that a skewed pair can make false."""
    adjusted = holm([p for *_, p in tests])
    better = np.zeros(k, int)  # how many agents are shown to rank above each
    worse = np.zeros(k, int)
    shown = set()
    for (i, j, mean_d, _), p_holm in zip(tests, adjusted, strict=True):
        if p_holm is not None and p_holm <= ALPHA and mean_d != 0:
            above, below = (i, j) if mean_d > 0 else (j, i)
            better[below] += 1
            worse[above] += 1
            shown.add((i, j))
    return 1 + better, k - worse, shown


@dataclass(frozen=True)
class _FixedRanks:
    low: list[int | None]
    high: list[int | None]
    method: str
    warning: str | None


def _fixed_ranks(cells: list[list[list[float]]], sign: float, draws: int, seed: int, simultaneous: bool) -> _FixedRanks:
    """Rank intervals about exactly these papers from each agent's runs on each paper (agents x
    papers lists): only the runs vary. Each agent's interval: the 2.5% and 97.5% points of its
    rank over ``draws`` draws of every paper mean from a normal with its runs' spread over its
    runs (each agent and paper its own spread, as :func:`fixed_paper_interval`). Simultaneous:
    every pair tested on those spreads (the t test of the difference of the two means over the
    papers both have, Satterthwaite's degrees of freedom), Holm's adjustment over the pairs. A
    cell with one run borrows its agent's pooled spread (all agents' when the agent never repeats
    a run), with a warning; no paper with two runs, or runs that never differ: no interval."""
    k, n = len(cells), len(cells[0]) if cells else 0
    overall = _pooled_within([c for row in cells for c in row if c])
    overall_df = sum(len(c) - 1 for row in cells for c in row if c)
    kind = "rank intervals that hold for every agent at once" if simultaneous else "each agent's rank interval"
    if overall is None:
        why = "one run per paper for every agent: the spread of runs within a paper is unknown"
        return _FixedRanks([None] * k, [None] * k, f"{FIXED}: {kind}: none", why)
    if no_spread(np.array([v for row in cells for c in row for v in c]), math.sqrt(overall)):
        why = "no run differs from its paper's other runs: no spread to build a rank interval from"
        return _FixedRanks([None] * k, [None] * k, f"{FIXED}: {kind}: none", why)
    own = [_pooled_within([c for c in row if c]) for row in cells]
    pooled: list[float] = [overall if o is None else o for o in own]
    pooled_df = [overall_df if o is None else sum(len(c) - 1 for c in row) for o, row in zip(own, cells, strict=True)]
    mean = np.full((k, n), np.nan)
    var = np.full((k, n), np.nan)  # the variance of each cell's mean
    df = np.ones((k, n), np.int64)  # the degrees of freedom of that variance
    for a, row in enumerate(cells):
        for q, c in enumerate(row):
            if c:
                repeated = len(c) > 1
                mean[a, q] = np.mean(c)
                var[a, q] = (float(np.var(c, ddof=1)) if repeated else pooled[a]) / len(c)
                df[a, q] = len(c) - 1 if repeated else max(1, pooled_df[a])
    single = sum(1 for row in cells for c in row if len(c) == 1)
    warning = None
    if single:
        warning = (
            f"{single} agent-paper cells have one run: their spread cannot be estimated and is taken as the pooled "
            f"spread of the runs that repeat (the agent's own where it has some; {FIXED})"
        )
    if simultaneous:
        tests = []
        for i in range(k):
            for j in range(i + 1, k):
                both = ~np.isnan(mean[i]) & ~np.isnan(mean[j])
                m = int(both.sum())
                if not m:
                    tests.append((i, j, 0.0, 1.0))
                    continue
                d = sign * float((mean[j, both] - mean[i, both]).mean())
                terms = np.concatenate([var[i, both], var[j, both]]) / m**2
                dfs = np.concatenate([df[i, both], df[j, both]])
                total = float(terms.sum())
                if total <= 0:
                    tests.append((i, j, d, 0.0 if d else 1.0))
                    continue
                kept = terms > 0
                t_df = max(1, int(total**2 / float((terms[kept] ** 2 / dfs[kept]).sum())))
                tests.append((i, j, d, 1.0 - t_cdf_two_sided(abs(d) / math.sqrt(total), t_df)))
        low, high, _ = _bounds_from_tests(tests, k)
        method = (
            f"{FIXED}: rank intervals that hold for every agent at once: the t test of all {len(tests)} pairs of "
            f"agents on each paper's spread of runs over {n} papers (Satterthwaite's df), Holm's adjustment"
        )
        return _FixedRanks([int(x) for x in low], [int(x) for x in high], method, warning)
    rng = np.random.default_rng(seed)
    draw = mean[None] + rng.standard_normal((draws, k, n)) * np.sqrt(np.nan_to_num(var))[None]
    score = np.nanmean(draw, axis=2)
    order = np.argsort(sign * score, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, k + 1)[None, :].repeat(draws, 0), axis=1)
    low = np.floor(np.percentile(ranks, 100 * ALPHA / 2, axis=0)).astype(int)
    high = np.ceil(np.percentile(ranks, 100 * (1 - ALPHA / 2), axis=0)).astype(int)
    method = (
        f"{FIXED}: each agent's rank interval on its own, over {draws} draws of its paper means from each "
        f"paper's spread of runs ({n} papers kept), seed {seed}"
    )
    return _FixedRanks([int(x) for x in low], [int(x) for x in high], method, warning)


# -- power -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Power:
    papers: int | None  # the fewest papers reaching the power (None: more than ``most``)
    power: float | None  # the simulated power at that many papers
    runs: int
    sd_paper: float  # the spread of a paper's mean difference at this many runs
    method: str


def papers_needed(
    difference: float,
    sd_between: float,
    sd_within: float,
    runs: int = 1,
    power: float = 0.8,
    most: int = 200,
    simulations: int = 2000,
    seed: int = 0,
    progress: Callable[[int, float], None] | None = None,
    comparisons: int = 1,
    missing: float = 0.0,
) -> Power:
    """How many papers the paired test of :func:`paired_test` needs to reject with ``power``, when
    the true mean difference is ``difference``, papers' true differences spread with SD
    ``sd_between`` and one pair of runs with SD ``sd_within`` around its paper's (``runs`` pairs
    per paper). Simulated with the test itself (its sign patterns: exact up to ``EXACT_PAPERS``
    papers, then Monte Carlo), normal differences. ``progress(papers, power)`` is called after
    each paper count simulated (a search takes seconds to minutes).

    ``comparisons``: the size of the Holm family the comparison belongs to (``compare``'s
    ``holm_family``); the plan is for p <= 0.05 / comparisons, the level Holm's adjustment asks of
    the smallest p of the family, so a comparison that reaches it is significant after the
    adjustment whatever the others show. ``missing``: the share of papers expected to lose one
    run (a failed or cut-short cell): such a paper keeps ``runs - 1`` pairs, or drops out of the
    comparison when ``runs`` is 1."""
    if difference == 0:
        raise ValueError("a difference of 0 cannot be detected: name the difference to detect")
    if sd_between < 0 or sd_within < 0 or sd_between + sd_within == 0:
        raise ValueError("the standard deviations must be >= 0 and not both 0")
    if comparisons < 1:
        raise ValueError(f"comparisons is {comparisons}: a family holds at least the one comparison")
    if not 0 <= missing < 1:
        raise ValueError(f"missing is {missing}: a share of papers, at least 0 and below 1")
    level = ALPHA / comparisons
    sd_paper = math.sqrt(sd_between**2 + sd_within**2 / runs)
    sd_short = math.sqrt(sd_between**2 + sd_within**2 / (runs - 1)) if runs > 1 else sd_paper
    rng = np.random.default_rng(seed)
    cache: dict[int, float] = {}

    def power_at(n: int, rng: np.random.Generator = rng, cache: dict[int, float] = cache) -> float:
        if n not in cache:
            d, kept = _planned_campaigns(rng, n, simulations, difference, sd_paper, sd_short, missing, runs)
            cache[n] = _rejected(d, kept, level, seed) / simulations
            if progress is not None:
                progress(n, cache[n])
        return cache[n]

    method = _power_method(simulations, seed, comparisons, missing, runs)
    if power_at(most) < power:
        return Power(None, power_at(most), runs, sd_paper, method)
    low, high = 5, 6  # power_at(low) < power <= power_at(high), searched by doubling then halving
    while power_at(high) < power:
        low, high = high, min(most, high * 2)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if power_at(mid) >= power else (mid, high)
    # The search keeps the first count whose simulated power reached the target, so that estimate
    # leans high (chosen because its draws were lucky): the plan's power is simulated again on
    # fresh campaigns, and a count they leave short gives way to the next.
    fresh = np.random.default_rng([seed, 1])
    checked: dict[int, float] = {}
    while power_at(high, fresh, checked) < power and high < most:
        high += 1
    found = power_at(high, fresh, checked)
    error = 100 * math.sqrt(found * (1 - found) / simulations)
    return Power(high, found, runs, sd_paper, f"{method} (Monte Carlo standard error {error:.1f} points)")


def _planned_campaigns(
    rng: np.random.Generator,
    n: int,
    simulations: int,
    difference: float,
    sd_paper: float,
    sd_short: float,
    missing: float,
    runs: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`papers_needed`'s campaigns of ``n`` papers: each paper's mean difference (normal, a
    paper that lost a run spreading as ``sd_short``) and whether it is kept (a paper whose only run
    was lost drops out)."""
    short = rng.random((simulations, n)) < missing
    d = difference + rng.standard_normal((simulations, n)) * np.where(short, sd_short, sd_paper)
    return d, (~short if runs == 1 else np.ones_like(short))


def _rejected(d: np.ndarray, kept: np.ndarray, level: float, seed: int) -> int:
    """How many of the campaigns (rows of ``d``, papers where ``kept``) the printed paired test
    rejects at ``level``: the sign flip, and from ``SYMMETRY_PAPERS`` papers the larger of its p and
    the bootstrap-t's (:func:`paired_test_of_means`)."""
    rejected = 0
    for m in map(int, np.unique(kept.sum(axis=1))):
        rows = kept.sum(axis=1) == m
        if m == 0 or smallest_p(m) > level:
            continue
        values = d[rows][kept[rows]].reshape(-1, m)
        p = _sign_flip_pvalues(values, seed)
        if m >= SYMMETRY_PAPERS:
            p = np.maximum(p, _bootstrap_t(values, seed)[0])
        rejected += int((p <= level).sum())
    return rejected


def conservative_spreads(
    sd_between: float, sd_within: float, papers: int, confidence: float = 0.8
) -> tuple[float, float, float]:
    """The spreads a plan should assume when they were estimated from a pilot of ``papers``
    papers: both scaled by sqrt((papers - 1) / chi2), chi2 the (1 - confidence) quantile of a
    chi-square with papers - 1 degrees of freedom (Wilson and Hilferty's approximation), the
    upper end of a one-sided ``confidence`` interval for the spread of the papers' differences.
    A pilot of 8 papers can understate the spread by a third or more, and a plan from it then
    asks for far too few papers. Returns the two spreads and the factor."""
    if papers < 2:
        raise ValueError(f"a pilot of {papers} paper(s) says nothing about the spread between papers")
    k = papers - 1
    z = -normal_quantile(confidence)
    chi2 = k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3
    factor = math.sqrt(k / chi2)
    return sd_between * factor, sd_within * factor, factor


def spreads(papers: Sequence, differences: Sequence) -> tuple[float, float, str]:
    """The spreads :func:`papers_needed` takes, estimated from a pilot's pairs: within a paper,
    the pooled SD of its pairs' differences (papers with 2 or more pairs); between papers, what
    is left of the variance of the papers' mean differences once the within part (divided by
    each paper's pairs) is taken out, never below 0. Returns them with a note on how."""
    groups = list(by_paper(papers, differences).values())
    if len(groups) < 2:
        raise ValueError(f"a pilot needs pairs on at least 2 papers; it has {len(groups)}")
    means = np.array([np.mean(g) for g in groups])
    within = _pooled_within(groups)
    if within is not None:
        repeated = sum(1 for g in groups if len(g) > 1)
        inverse_runs = float(np.mean([1 / len(g) for g in groups]))
        between = max(0.0, float(means.var(ddof=1)) - within * inverse_runs)
        note = f"within from {repeated} papers with 2 or more pairs"
        return math.sqrt(between), math.sqrt(within), note
    return float(means.std(ddof=1)), 0.0, "one pair per paper: its spread counted as between papers"


def _sign_flip_pvalues(d: np.ndarray, seed: int) -> np.ndarray:
    """:func:`sign_flip_p` of every row of ``d`` at once (rows: campaigns, columns: papers), the
    same patterns for every row: exact up to ``EXACT_PAPERS`` papers, else ``FLIPS`` seeded."""
    n = d.shape[1]
    w = np.full(n, 1 / n)
    observed = np.abs(d.mean(axis=1))
    tol = 1e-12 * np.maximum(1.0, np.abs(d).mean(axis=1))
    out = np.empty(len(d))
    patterns = 2 ** (n - 1) if n <= EXACT_PAPERS else FLIPS
    step = max(1, 2**22 // patterns)  # rows at a time: patterns x rows near 4M numbers
    for start in range(0, len(d), step):
        sums, _, weight, total = _patterns(d[start : start + step], w, seed)  # patterns x rows
        hits = (np.abs(sums) >= (observed - tol)[None, start : start + step]).sum(axis=0)
        out[start : start + step] = (weight * hits + (weight == 1)) / total
    return out


def _power_method(simulations: int, seed: int, comparisons: int = 1, missing: float = 0.0, runs: int = 1) -> str:
    test = (
        "the sign-flip test at 5%"
        if comparisons == 1
        else f"the sign-flip test at 0.05 / {comparisons} (Holm's family of {comparisons})"
    )
    test += f" (from {SYMMETRY_PAPERS} papers with the bootstrap-t beside it, as printed)"
    lost = ""
    if missing:
        lost = f", {100 * missing:.3g}% of papers losing a run" + (" (so dropping out)" if runs == 1 else "")
    return (
        f"{simulations} simulated campaigns per paper count, normal differences{lost}, {test}, seed {seed}; "
        f"the plan's power from {simulations} fresh campaigns, not the ones that chose it"
    )


# -- a judge's figures corrected by a labelled sample (prediction-powered inference) ----------------
PPI_DRAWS = 2000  # resamples of papers for the corrected interval
PPI_FEW_LABELS = 10  # fewer labelled items: the corrected estimate carries a warning
# fewer: a score's interval is warned (studies/corrected.py: below 20 it held as little as 62%, and
# 3 of the 10 cells from 20 to 39 items held 91.8-92.2%; every cell from 40 on held at least 93%)
PPI_FEW_LABELS_INTERVAL = 40
PPI_FEW_LABELS_DIFFERENCE = 20  # fewer on one side: a difference's interval is warned (every cell from 20 held)
Values = Sequence | np.ndarray  # a list of numbers or paper ids, as a notebook or the warehouse hands them


def _ppi_sums(
    papers: Values, predicted: Values, labelled_papers: Values, labelled_predicted: Values, labels: Values
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per paper (sorted): the sums the corrected estimate is made of. ``whole`` (papers x 3): the
    number of items, the mean prediction and the mean squared prediction; ``part`` (papers x 6): of
    the labelled items, each weighted 1 / the paper's items, the weights and the weighted sums of
    y, f, y f, f f, and the count. A labelled item's paper must be among ``papers``."""
    f_all = np.asarray(predicted, dtype=float)
    if len(papers) != len(f_all) or not (len(labelled_papers) == len(labelled_predicted) == len(labels)):
        raise ValueError("papers and predicted, and the labelled papers, predictions and labels, must be of one length")
    names = sorted({str(p) for p in papers})
    index = {p: k for k, p in enumerate(names)}
    at = np.array([index[str(p)] for p in papers], dtype=int)
    n_items = np.bincount(at, minlength=len(names)).astype(float)
    whole = np.stack(
        [n_items, np.bincount(at, f_all, len(names)) / n_items, np.bincount(at, f_all**2, len(names)) / n_items],
        axis=1,
    )
    missing = sorted({str(p) for p in labelled_papers} - set(index))
    if missing:
        raise ValueError(f"labelled items of papers with no predicted items: {', '.join(missing[:3])}")
    lab = np.array([index[str(p)] for p in labelled_papers], dtype=int)
    y, f = np.asarray(labels, dtype=float), np.asarray(labelled_predicted, dtype=float)
    w = 1.0 / n_items[lab] if len(lab) else np.zeros(0)
    part = np.stack(
        [np.bincount(lab, x, len(names)) for x in (w, w * y, w * f, w * y * f, w * f * f, np.ones(len(lab)))], axis=1
    )
    return names, whole, part


def _widened(estimate: float, boot: np.ndarray, held: int) -> tuple[float, float]:
    """The interval of a corrected estimate from its resamples ``boot``: as far from the estimate as
    the draws' 2.5th and 97.5th percentiles reach on each side, widened by t over the normal on
    ``held`` - 1 degrees of freedom and by sqrt(held / (held - 1)) (``held``: the papers holding labels)."""
    widen = t_quantile(1 - ALPHA / 2, held - 1) / normal_quantile(1 - ALPHA / 2) * math.sqrt(held / (held - 1))
    below, above = np.percentile(boot, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    return estimate - widen * max(0.0, estimate - float(below)), estimate + widen * max(0.0, float(above) - estimate)


def _ppi_estimates(
    counts: np.ndarray, whole: np.ndarray, part: np.ndarray, fixed: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The corrected estimate and its tuned lambda for each row of ``counts`` (draws x papers: how
    often each paper is drawn). The estimate is lambda times the mean over papers of the paper's
    mean prediction, plus the labelled items' mean of (label - lambda prediction), each item
    weighted 1 / its paper's items, so that it estimates the mean over papers of each paper's mean
    label. lambda (PPI++) is the weighted covariance of labels and predictions over (1 + n / N)
    times the variance of the predictions over every item, clipped to [0, 1] (``fixed``: this
    lambda instead)."""
    weight = counts.sum(axis=1)
    mean_f = counts @ whole[:, 1] / weight
    var_f = counts @ whole[:, 2] / weight - mean_f**2
    s = counts @ part  # (draws, 6)
    sw = s[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        my, mf = s[:, 1] / sw, s[:, 2] / sw
        cov = s[:, 3] / sw - my * mf
        share = s[:, 5] / (counts @ whole[:, 0])
        lam = np.where(var_f > 1e-15, cov / ((1 + share) * var_f), 0.0)
    lam = np.clip(np.nan_to_num(lam), 0.0, 1.0) if fixed is None else np.full(len(counts), float(fixed))
    return lam * mean_f + my - lam * mf, lam


def prediction_powered(
    papers: Values,
    predicted: Values,
    labelled_papers: Values,
    labelled_predicted: Values,
    labels: Values,
    bounds: tuple[float, float] = (0, 1),
    seed: int = 0,
    draws: int = PPI_DRAWS,
    lam: float | None = None,
) -> Interval:
    """The mean over papers of each paper's mean true value, from a judge's predictions on every
    item (``papers``, ``predicted``: the labelled items among them) and true values on a labelled
    sample of those items (``labelled_papers``, ``labelled_predicted``: the same judge's
    predictions on them, ``labels``): prediction-powered inference with PPI++'s tuned lambda
    (Angelopoulos, Duchi and Zrnic 2023, arXiv:2311.01453), so that the estimate is as good as the
    labels alone when the judge says nothing and better the more the judge agrees with them.
    With every item labelled it is the labels' own mean over papers, whatever the judge said.
    ``lam`` fixes lambda: 1 is plain PPI, 0 the labels alone (the judge ignored).

    The interval resamples papers (the campaign's clusters) for both parts at once: each drawn paper
    brings all its items and its labelled ones, and lambda is tuned again in every draw. The
    interval reaches from the estimate as far as the draws' 2.5th and 97.5th percentiles do on
    each side (a score of few labels is skewed), widened by the ratio of the t quantile to the
    normal's on k - 1 degrees of freedom and by sqrt(k / (k - 1)), k the papers holding labels (the
    correction rests on them), and is kept inside ``bounds``. The labelled items are taken to be a
    random sample of the items (``inquitree label conclusions`` draws one). How often it holds,
    with judges from kappa 0.2 to 0.9, is measured by ``studies/corrected.py``."""
    names, whole, part = _ppi_sums(papers, predicted, labelled_papers, labelled_predicted, labels)
    n_labels, n_papers = int(part[:, 5].sum()), len(names)
    if n_labels == 0 or n_papers == 0:
        warning = "no labelled item: no corrected estimate (inquitree label conclusions draws a sample)"
        return Interval(None, None, None, None, "prediction-powered", warning, n_papers, len(papers))
    estimate, tuned = (float(x[0]) for x in _ppi_estimates(np.ones((1, n_papers)), whole, part, lam))
    low_b, high_b = bounds
    estimate = min(max(estimate, low_b), high_b)
    kind = "PPI++" if lam is None else "PPI"
    method = (
        f"prediction-powered ({kind}, lambda {tuned:.2f}): the judge on {len(papers)} items corrected by "
        f"{n_labels} labelled, over {n_papers} papers"
    )
    warnings = []
    if n_labels < PPI_FEW_LABELS:
        warnings.append(f"only {n_labels} labelled items: the correction rests on very few readings")
    if n_papers < MIN_PAPERS:
        warnings.append(f"{n_papers} papers: no interval below {MIN_PAPERS}")
        return Interval(estimate, None, None, None, method, "; ".join(warnings), n_papers, len(papers))
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n_papers, np.full(n_papers, 1 / n_papers), size=draws).astype(float)
    with_labels = counts @ part[:, 5] > 0
    boot, _ = _ppi_estimates(counts[with_labels], whole, part, lam)
    if with_labels.mean() < 0.95:
        warnings.append(
            f"{100 * (1 - with_labels.mean()):.0f}% of resampled campaigns drew no labelled item: the labels sit on "
            "too few papers for the interval to hold"
        )
    se = float(np.std(boot, ddof=1))
    # the correction rests on the papers that hold labels: its degrees of freedom are theirs, and
    # the resamples' spread is scaled by k / (k - 1) in variance, as an unbiased spread of k papers is
    held = int((part[:, 5] > 0).sum())
    df = min(n_papers, held) - 1
    if df < 1:
        warnings.append("the labels sit on one paper: no interval")
        return Interval(estimate, None, None, se, method, "; ".join(warnings), n_papers, len(papers))
    if se <= 1e-12:  # every resample gives one value: nothing to make an interval of (never one of no width)
        warnings.append(
            "every resample of the papers gives the same corrected score (the labels and the judge agree on one "
            "value): no interval; more labelled items would show how far it may be off"
        )
        return Interval(estimate, None, None, se, method, "; ".join(warnings), n_papers, len(papers))
    low, high = _widened(estimate, boot, min(n_papers, held))
    if n_labels < PPI_FEW_LABELS_INTERVAL:
        warnings.append(
            f"{n_labels} labelled items: with fewer than {PPI_FEW_LABELS_INTERVAL}, such intervals covered the truth "
            "less often than 93% in simulated campaigns (studies/corrected.py, docs/statistics.md)"
        )
    method += (
        f", the resamples' 2.5th and 97.5th percentiles widened by t on {df} df over the normal "
        f"({int(with_labels.sum())} resamples of papers)"
    )
    return Interval(
        estimate,
        max(low_b, float(low)),
        min(high_b, float(high)),
        se,
        method,
        "; ".join(warnings) or None,
        n_papers,
        len(papers),
    )


def _aligned(names: list[str], whole: np.ndarray, part: np.ndarray, order: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``whole`` and ``part`` rows in the order of ``order`` (papers not in ``names``: rows of zeros)."""
    at = {p: k for k, p in enumerate(names)}
    w, q = np.zeros((len(order), whole.shape[1])), np.zeros((len(order), part.shape[1]))
    for k, p in enumerate(order):
        if p in at:
            w[k], q[k] = whole[at[p]], part[at[p]]
    return w, q


def prediction_powered_difference(
    a: tuple[Values, Values, Values, Values, Values],
    b: tuple[Values, Values, Values, Values, Values],
    seed: int = 0,
    draws: int = PPI_DRAWS,
) -> Interval:
    """B's corrected score minus A's, each as :func:`prediction_powered` makes it from its
    ``(papers, predicted, labelled_papers, labelled_predicted, labels)``, over the papers both
    have: the resamples draw papers once for both agents (their items and labels on a paper go
    together), and the interval is made from the draws of the difference as ``prediction_powered``
    makes its own. No p-value: the paired sign-flip test needs each paper's difference, and a
    paper without labels has no corrected value of its own."""
    na, wa, pa_ = _ppi_sums(*a)
    nb, wb, pb = _ppi_sums(*b)
    both = sorted(set(na) & set(nb))
    method = "prediction-powered difference (PPI++ on each agent, the papers resampled together)"
    if not both:
        return Interval(None, None, None, None, method, "no paper has both agents' items", 0, 0)
    wa, pa_ = _aligned(na, wa, pa_, both)
    wb, pb = _aligned(nb, wb, pb, both)
    la, lb = int(pa_[:, 5].sum()), int(pb[:, 5].sum())
    if not la or not lb:
        warning = "no labelled item of " + ("either agent" if not la and not lb else "A" if not la else "B")
        return Interval(None, None, None, None, method, warning, len(both), 0)
    ones = np.ones((1, len(both)))
    estimate = float(_ppi_estimates(ones, wb, pb)[0][0] - _ppi_estimates(ones, wa, pa_)[0][0])
    warnings = []
    if min(la, lb) < PPI_FEW_LABELS_DIFFERENCE:
        warnings.append(
            f"{min(la, lb)} labelled items on one side: with fewer than {PPI_FEW_LABELS_DIFFERENCE}, a corrected "
            "interval covered the truth less often than 93% in simulated campaigns (studies/corrected.py)"
        )
    held = int(((pa_[:, 5] > 0) & (pb[:, 5] > 0)).sum())
    if len(both) < MIN_PAPERS or held < 2:
        warnings.append(f"labels of both agents on {held} of {len(both)} papers: no interval")
        return Interval(estimate, None, None, None, method, "; ".join(warnings), len(both), la + lb)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(both), np.full(len(both), 1 / len(both)), size=draws).astype(float)
    ok = (counts @ pa_[:, 5] > 0) & (counts @ pb[:, 5] > 0)
    boot = _ppi_estimates(counts[ok], wb, pb)[0] - _ppi_estimates(counts[ok], wa, pa_)[0]
    if float(np.std(boot, ddof=1)) <= 1e-12:
        warnings.append("every resample of the papers gives the same difference: no interval")
        return Interval(estimate, None, None, 0.0, method, "; ".join(warnings), len(both), la + lb)
    low, high = _widened(estimate, boot, held)
    method += f", over {len(both)} papers ({held} with both agents' labels; {int(ok.sum())} resamples)"
    return Interval(
        estimate, max(-1.0, float(low)), min(1.0, float(high)), float(np.std(boot, ddof=1)), method,
        "; ".join(warnings) or None, len(both), la + lb,
    )  # fmt: skip


__all__ = [
    "Interval",
    "PairedTest",
    "Power",
    "Rank",
    "holm",
    "mean_interval",
    "paired_test",
    "papers_needed",
    "prediction_powered",
    "prediction_powered_difference",
    "conservative_spreads",
    "rank_intervals",
    "sign_flip_p",
    "spreads",
    "t_quantile",
    "normal_quantile",
]
