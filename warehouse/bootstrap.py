"""Intervals for the warehouse's aggregates: a seeded cluster bootstrap over papers.

The paper's unit is the paper (tree): its designs run each paper a few times per setting, and
a mean over 10-18 papers is what it reports. So an interval resamples **trees with
replacement**, each drawn tree bringing its episodes, and recomputes the query's own estimator
on every resample (``docs/DECISIONS.md`` #25): 2,000 resamples by default, the standard error
as the standard deviation of the resampled estimates, and an *expanded* percentile interval
(``expanded_tail``) because 10-18 trees are few. With one tree there is nothing to resample at
the first level: episodes alone are resampled, and ``method`` says so.

Why not also resample episodes within each drawn tree, as #25 was first written? Measured on
1,000 simulated campaigns in each of five designs (``bench/intervals.py coverage``,
``bench/results/intervals_coverage.json``): the spread of per-paper means already contains the
within-paper noise, so resampling episodes again counts it twice; with plain percentiles that
scheme covered the true mean 92.0-98.2% of the time (over 97% in two designs, under 93% in two).
Trees only with plain percentiles covered 91.0-93.2%: too narrow for 10-18 papers. Trees only
with the expanded percentile covered 94.2-95.3% in all five. ``$INQUITREE_BOOTSTRAP_SCHEME=
two-level`` restores the first scheme (trees, then episodes, plain percentiles).

In the two-level scheme each copy of a drawn tree gets its own resample of episodes. The
estimators here are sums over copies, so only the total count of each episode over the copies
matters, and that total is one multinomial draw: ``c`` copies of a tree with ``m`` episodes put
``Multinomial(c*m, 1/m)`` counts on its episodes. Nothing of size resamples x episodes is kept.

Three estimators, each a DuckDB function that the SQL in ``queries/`` calls on lists gathered
per group (``warehouse/sync.py`` registers them on every connection):

- ``boot_mean(trees, values)``: the mean over trees of the per-tree mean (Table 2, Fig. 3a,
  Fig. 3b's frequency, Fig. 4, steps, control accuracy);
- ``boot_ratio(trees, numerators, denominators)``: a pooled rate, sum over sum (Fig. 3c);
- ``boot_change(trees, values, is_baseline)``: 100 (f - f0) / f0 between two per-tree means of
  the same trees (Fig. 3b's relative change), resampling the trees once for both.

Each returns a struct: ``estimate`` (the query's number, computed here so that the estimate and
its interval cannot disagree), ``se``, ``ci_low``, ``ci_high``, ``papers``, ``episodes``,
``method``. The same data, seed and resample count always give the same interval.
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

RESAMPLES_ENV = "INQUITREE_BOOTSTRAP_RESAMPLES"
SEED_ENV = "INQUITREE_BOOTSTRAP_SEED"
SCHEME_ENV = "INQUITREE_BOOTSTRAP_SCHEME"  # trees (the default) | two-level (#25 as first written)
LEVEL = 0.95
FEW_PAPERS = 8  # below this many papers: a t interval over the papers, not a bootstrap (#25)
TOO_FEW_PAPERS = 3  # below this many, a row says "too few papers"
EXACT_PATTERNS = 100_000  # the paired test enumerates every sign pattern up to this many (#26)

# What boot_mean, boot_ratio and boot_change return (in SQL: _sql_type spells it out)
_RESULT_ARROW = pa.struct(
    [
        ("estimate", pa.float64()),
        ("se", pa.float64()),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("papers", pa.int32()),
        ("episodes", pa.int32()),
        ("method", pa.string()),
    ]
)
_SQL_TYPES = {pa.float64(): "DOUBLE", pa.int32(): "INTEGER", pa.string(): "VARCHAR"}


def _sql_type(arrow_type) -> str:
    """The SQL spelling of the functions' Arrow return types."""
    if isinstance(arrow_type, pa.StructType):
        return "STRUCT(" + ", ".join(f"{f.name} {_sql_type(f.type)}" for f in arrow_type) + ")"
    return _SQL_TYPES[arrow_type]


@dataclass(frozen=True)
class Bootstrap:
    resamples: int = 2000
    seed: int = 0
    permutations: int = 10_000  # sign flips of the paired test (#26)
    within: bool = False  # also resample episodes within each drawn tree (#25 as written); see the docstring
    expanded: bool = True  # widen the percentiles for few units (Hesterberg's expanded percentile)
    t_below: int = FEW_PAPERS  # fewer papers than this: the t interval over papers (0: always the bootstrap)

    @classmethod
    def from_env(cls) -> "Bootstrap":
        def read(name: str, default: int, least: int) -> int:
            text = os.environ.get(name)
            if not text:
                return default
            try:
                value = int(text)
            except ValueError:
                value = least - 1
            if value < least:
                raise ValueError(f"${name}={text!r}: expected a whole number >= {least}")
            return value

        scheme = os.environ.get(SCHEME_ENV) or "trees"
        if scheme not in ("trees", "two-level"):
            raise ValueError(f"${SCHEME_ENV}={scheme!r}: expected trees or two-level")
        two_level = scheme == "two-level"
        return cls(
            read(RESAMPLES_ENV, cls.resamples, 100),
            read(SEED_ENV, cls.seed, 0),
            within=two_level,
            expanded=not two_level,
        )

    def sign_flip_p(self, trees: Sequence, differences: Sequence) -> float | None:
        """Two-sided p-value of a paired difference (#26), with the paper as the unit: under the
        null each paper's mean paired difference is as likely to have either sign, so flip the
        sign of each paper's mean (every pattern once when there are at most ``EXACT_PATTERNS``,
        else ``permutations`` seeded draws) and count how often the statistic, the mean over
        papers of those means, is at least as far from 0 as observed. Flipping single pairs
        instead treats the run as the unit: with papers whose true differences differ and a
        true mean difference of 0 that rejected in 18-26% of campaigns at the 5% level. The
        count includes the observed pattern, so p >= 2 / 2^papers: with 2 papers p is at least 0.5."""
        units = _units(trees, differences)
        if units is None:
            return None
        codes, n_trees, (d,) = units
        sizes = np.bincount(codes, minlength=n_trees)
        w = np.bincount(codes, weights=d, minlength=n_trees) / (sizes * n_trees)  # paper means / papers
        observed = abs(w.sum())
        tolerance = 1e-12 * max(1.0, float(np.abs(w).sum()))
        n = len(w)
        if 2**n <= EXACT_PATTERNS:  # exact: every sign pattern
            patterns = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
            stats = np.abs(patterns @ w)
            return float((stats >= observed - tolerance).mean())
        rng = np.random.default_rng(self.seed)
        hits, done = 0, 0
        while done < self.permutations:  # in chunks: flips x pairs stays small
            k = min(1000, self.permutations - done)
            signs = rng.integers(0, 2, size=(k, n), dtype=np.int8) * 2 - 1
            hits += int((np.abs(signs @ w) >= observed - tolerance).sum())
            done += k
        return (hits + 1) / (self.permutations + 1)

    # -- the three estimators ------------------------------------------------------------------
    def mean(self, trees: Sequence, values: Sequence) -> dict | None:
        units = _units(trees, values)
        if units is None:
            return None
        codes, n_trees, (v,) = units
        return self._run(codes, n_trees, np.zeros(len(v), np.int8), [v], _cluster_means, len(v))

    def ratio(self, trees: Sequence, numerators: Sequence, denominators: Sequence) -> dict | None:
        units = _units(trees, numerators, denominators)
        if units is None:
            return None
        codes, n_trees, (num, den) = units
        return self._run(codes, n_trees, np.zeros(len(num), np.int8), [num, den], _pooled_ratio, len(num))

    def change(self, trees: Sequence, values: Sequence, is_baseline: Sequence) -> dict | None:
        units = _units(trees, values, is_baseline)
        if units is None:
            return None
        codes, n_trees, (v, base) = units
        subsets = np.where(base > 0, 0, 1).astype(np.int8)  # subset 0: the baseline
        if not (subsets == 0).any() or not (subsets == 1).any():
            return None
        return self._run(codes, n_trees, subsets, [v], _relative_change, len(v))

    # -- the resampling ------------------------------------------------------------------------
    def _run(self, codes, n_trees, subsets, columns, estimator, episodes) -> dict:
        point = estimator(_Sums.exact(codes, n_trees, subsets, columns))
        flag = f"too few papers ({n_trees}): " if n_trees < TOO_FEW_PAPERS else ""
        if episodes < 2:
            return _result(point, None, n_trees, episodes, flag + "one episode: no interval")
        if self.resamples == 0:  # the estimate alone (the benchmark's baseline)
            return _result(point, None, n_trees, episodes, "no resampling")
        if 2 <= n_trees < self.t_below:
            return _t_interval(codes, n_trees, subsets, columns, estimator, point, episodes, flag)
        rng = np.random.default_rng(self.seed)
        sums = _Sums.resampled(codes, n_trees, subsets, columns, self.resamples, rng, self.within or n_trees == 1)
        stats = estimator(sums)
        finite = stats[np.isfinite(stats)]
        if n_trees == 1:
            method = f"{flag}one paper: its units only, {self.resamples} resamples, seed {self.seed}"
        elif self.within:
            method = f"cluster bootstrap, trees then their units, {self.resamples} resamples, seed {self.seed}"
        else:
            method = f"cluster bootstrap, trees only, {self.resamples} resamples, seed {self.seed}"
        if len(finite) < len(stats):
            method += f"; {len(stats) - len(finite)} resamples undefined (a zero denominator) left out"
        units = n_trees if n_trees > 1 else episodes
        if self.expanded and units >= 3:  # below 3 units expanded_tail keeps the plain tails
            method += f"; expanded percentile for {units} units"
        tail = expanded_tail(units) if self.expanded else (1 - LEVEL) / 2
        return _result(point, finite if len(finite) > 1 else None, n_trees, episodes, method, tail)


def _units(trees: Sequence, *columns: Sequence) -> tuple[np.ndarray, int, list[np.ndarray]] | None:
    """Tree codes (0..T-1 in the order of the sorted ids) and float columns, with the units
    where any value is NULL left out; None when nothing is left (a NULL list, as
    ``list(...) FILTER (...)`` gives for a group with no matching row, counts as empty).
    The lists come as Arrow arrays from the SQL functions, or as Python sequences (made Arrow
    arrays here), without a Python object per value: converting a list of 54,640 episodes into
    Python objects was half of a Figure 3c query at 4M events."""
    if trees is None or any(c is None for c in columns):
        return None
    ids = trees if isinstance(trees, pa.Array) else pa.array([None if t is None else str(t) for t in trees])
    arrays = [c if isinstance(c, pa.Array) else pa.array(c) for c in columns]
    valid = ids.is_valid()
    for c in arrays:
        valid = pc.and_(valid, c.is_valid())
    keep = valid.to_numpy(zero_copy_only=False)
    if not keep.any():
        return None
    encoded = pc.dictionary_encode(ids)
    found = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)[keep].astype(np.int64)
    dictionary = encoded.dictionary.to_pylist()
    used = np.unique(found)
    names = sorted(str(dictionary[k]) for k in used)
    rank = {name: k for k, name in enumerate(names)}
    remap = np.zeros(len(dictionary), np.int64)
    for k in used:
        remap[k] = rank[str(dictionary[k])]
    values = [c.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)[keep] for c in arrays]
    return remap[found], len(names), [np.asarray(v, np.float64) for v in values]


@dataclass
class _Sums:
    """Per subset (0/1) and resample: the weighted sums of each column over episodes, the sum of
    each episode's value divided by its cell size (for per-tree means), and the number of tree
    copies that have a cell in the subset. Arrays of shape (resamples,) or (1,) for the data."""

    total: dict[int, list[np.ndarray]]  # subset -> [sum of w * column] per column
    per_tree_mean: dict[int, np.ndarray]  # subset -> sum of w * column0 / cell size
    copies: dict[int, np.ndarray]  # subset -> tree copies with a cell in the subset

    @classmethod
    def exact(cls, codes, n_trees, subsets, columns) -> "_Sums":
        return cls._accumulate(codes, n_trees, subsets, columns, np.ones((1, n_trees), np.int64))

    @classmethod
    def resampled(cls, codes, n_trees, subsets, columns, resamples, rng, within: bool = True) -> "_Sums":
        if n_trees > 1:
            copies = rng.multinomial(n_trees, np.full(n_trees, 1.0 / n_trees), size=resamples)
        else:
            copies = np.ones((resamples, 1), np.int64)
        if not within:  # each copy of a tree brings its episodes as they are
            return cls._accumulate(codes, n_trees, subsets, columns, copies)
        return cls._accumulate(codes, n_trees, subsets, columns, copies, lambda c, counts: _draw(rng, c, counts))

    @classmethod
    def _accumulate(cls, codes, n_trees, subsets, columns, copies, draw=None) -> "_Sums":
        """``draw``: how many times each distinct row of a cell is used per resample, given the
        tree's copies; None when each copy brings the cell whole (then only its sums matter)."""
        b = copies.shape[0]
        total = {s: [np.zeros(b) for _ in columns] for s in (0, 1)}
        per_tree_mean = {s: np.zeros(b) for s in (0, 1)}
        n_copies = {s: np.zeros(b) for s in (0, 1)}
        order = np.lexsort((subsets, codes))
        bounds = np.flatnonzero(np.diff(codes[order] * 2 + subsets[order])) + 1
        table = np.column_stack(columns)
        for cell in np.split(order, bounds):
            t, s, m = int(codes[cell[0]]), int(subsets[cell[0]]), len(cell)
            if draw is None:  # copies x the cell's sums: no per-episode work (2x faster at 4M events)
                sums = np.outer(copies[:, t].astype(np.float64), table[cell].sum(axis=0))
            else:
                # Episodes with the same values are interchangeable: draw counts per distinct row.
                distinct, counts = np.unique(table[cell], axis=0, return_counts=True)
                weights = draw(copies[:, t], counts).astype(np.float64)  # (b, k): uses of each distinct row
                sums = weights @ distinct
            for k in range(len(columns)):
                total[s][k] += sums[:, k]
            per_tree_mean[s] += sums[:, 0] / m
            n_copies[s] += copies[:, t]
        return cls(total, per_tree_mean, n_copies)


def _draw(rng: np.random.Generator, copies: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For each resample, ``copies`` x m draws with replacement from a cell of m episodes whose
    distinct rows occur ``counts`` times; returns how often each distinct row was drawn."""
    m, k, b = int(counts.sum()), len(counts), len(copies)
    if k <= 32 or 16 * k <= m:  # few distinct values (coverage, steps, scores): one multinomial
        return rng.multinomial(copies * m, counts / m)  # per resample, k draws instead of m
    row_of = np.repeat(np.arange(k), counts)  # episode -> its distinct row
    picks = row_of[rng.integers(0, m, size=int(copies.sum()) * m)]
    resample = np.repeat(np.arange(b), copies * m)
    return np.bincount(resample * k + picks, minlength=b * k).reshape(b, k)


def _cluster_means(s: _Sums) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return s.per_tree_mean[0] / s.copies[0]


def _pooled_ratio(s: _Sums) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return s.total[0][0] / s.total[0][1]


def _relative_change(s: _Sums) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        base = s.per_tree_mean[0] / s.copies[0]
        other = s.per_tree_mean[1] / s.copies[1]
        return np.where(base > 0, 100 * (other - base) / base, np.nan)


def _t_interval(codes, n_trees, subsets, columns, estimator, point, episodes, flag: str) -> dict:
    """Below ``FEW_PAPERS`` papers (#25 as revised): the estimate +- t_{papers-1} x its jackknife
    standard error over papers. For a mean of paper means the jackknife standard error is exactly
    sd(paper means) / sqrt(papers), so this is the t interval on the per-paper means; for a pooled
    ratio or a relative change it is the same interval on the estimator's linearization. A
    percentile bootstrap over 2, 3 or 5 papers covered 48%, 73% and 91% where it said 95%."""
    leave_one_out = estimator(_Sums._accumulate(codes, n_trees, subsets, columns, 1 - np.eye(n_trees, dtype=np.int64)))
    finite = leave_one_out[np.isfinite(leave_one_out)]
    k = len(finite)
    method = f"{flag}t interval over {n_trees} papers ({n_trees - 1} df, jackknife standard error)"
    estimate = float(point[0]) if np.isfinite(point[0]) else None
    if estimate is None or k < 2:
        return _result(point, None, n_trees, episodes, method + "; undefined without a paper")
    if k < n_trees:
        method += f"; {n_trees - k} papers' leave-one-out estimates undefined (a zero denominator) left out"
    se = float(((k - 1) / k * ((finite - finite.mean()) ** 2).sum()) ** 0.5)
    half = t_quantile(1 - (1 - LEVEL) / 2, k - 1) * se
    return {
        "estimate": estimate,
        "se": se,
        "ci_low": estimate - half,
        "ci_high": estimate + half,
        "papers": n_trees,
        "episodes": episodes,
        "method": method,
    }


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


def t_quantile(p: float, df: int) -> float:
    """The p quantile (p > 0.5) of Student's t with ``df`` degrees of freedom, by bisection on
    :func:`t_cdf_two_sided` (no SciPy): t_{1, 0.975} = 12.706, t_{4, 0.975} = 2.776."""
    target, low, high = 2 * p - 1, 0.0, 1e6
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf_two_sided(mid, df) < target else (low, mid)
    return (low + high) / 2


def expanded_tail(n: int) -> float:
    """The tail probability of Hesterberg's expanded percentile interval for n resampled units
    (The American Statistician 69(4), 2015): the percentile interval is about sqrt((n-1)/n) times
    too narrow and uses normal instead of t quantiles, so take the percentiles at
    Phi(-sqrt(n/(n-1)) t_{n-1}) instead of (1 - level) / 2. The t quantile comes from its
    Cornish-Fisher expansion (no SciPy); for n = 18 the tails are 1.5% instead of 2.5%."""
    if n < 3:
        return (1 - LEVEL) / 2
    z = NormalDist().inv_cdf(1 - (1 - LEVEL) / 2)
    v = n - 1
    t = (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )
    return NormalDist().cdf(-((n / (n - 1)) ** 0.5) * t)


def _result(
    point: np.ndarray, stats: np.ndarray | None, papers: int, episodes: int, method: str, tail: float = 0.025
) -> dict:
    estimate = float(point[0]) if np.isfinite(point[0]) else None
    if stats is None or estimate is None:
        return {
            "estimate": estimate,
            "se": None,
            "ci_low": None,
            "ci_high": None,
            "papers": papers,
            "episodes": episodes,
            "method": method,
        }
    low, high = np.percentile(stats, [100 * tail, 100 - 100 * tail])
    return {
        "estimate": estimate,
        "se": float(np.std(stats, ddof=1)),
        "ci_low": float(low),
        "ci_high": float(high),
        "papers": papers,
        "episodes": episodes,
        "method": method,
    }


def _per_group(function, returns, arity: int):
    """``function`` as a vectorized (Arrow) DuckDB function: one call per row, each list handed
    over as an Arrow array, a NULL list as None. DuckDB reads the arity from the signature."""

    def run(*columns):
        columns = tuple(c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns)
        out = []
        for i in range(len(columns[0])):
            row = [c[i].values if c[i].is_valid else None for c in columns]
            out.append(function(*row))
        return pa.array(out, type=returns)

    positional = inspect.Parameter.POSITIONAL_ONLY
    run.__signature__ = inspect.Signature([inspect.Parameter(f"list{k}", positional) for k in range(arity)])  # type: ignore[attr-defined]
    return run


def register(con, bootstrap: Bootstrap) -> None:
    """Make ``boot_mean``, ``boot_ratio``, ``boot_change`` and ``sign_flip_p`` callable on a
    DuckDB connection (NULL arguments reach them as None: see ``_units``)."""
    functions = [
        ("boot_mean", bootstrap.mean, ["VARCHAR[]", "DOUBLE[]"], _RESULT_ARROW),
        ("boot_ratio", bootstrap.ratio, ["VARCHAR[]", "DOUBLE[]", "DOUBLE[]"], _RESULT_ARROW),
        ("boot_change", bootstrap.change, ["VARCHAR[]", "DOUBLE[]", "BOOLEAN[]"], _RESULT_ARROW),
        ("sign_flip_p", bootstrap.sign_flip_p, ["VARCHAR[]", "DOUBLE[]"], pa.float64()),
    ]
    for name, function, parameters, returns in functions:
        con.create_function(
            name,
            _per_group(function, returns, len(parameters)),
            parameters,
            _sql_type(returns),
            type="arrow",
            null_handling="special",
            side_effects=False,
        )
