"""The interval functions the warehouse's SQL calls: thin adapters from DuckDB's lists to
``inquitree.stats``, so a query's interval is the one a notebook gets from the same numbers.

Registered on every connection (``register``), each taking lists gathered per group:

- ``mean_ci(trees, values, low, high)``: the mean over papers of per-paper means, with the
  interval of ``stats.mean_interval`` for a metric in [low, high] (NULL for an open end);
- ``unit_mean_ci(values, low, high)``: the same with each value its own unit (one tree's
  episodes: ``steps_bounds``);
- ``ratio_ci(trees, numerators, denominators)``: a pooled rate, sum over sum (Fig. 3c, the
  control's accuracy), ``stats.pooled_rate`` (Fieller's interval over papers);
- ``change_ci(trees, values, is_baseline)``: 100 (f - f0) / f0 between two per-paper means of the
  same papers (Fig. 3b's relative change), ``stats.relative_change`` (Fieller's interval);
- ``run_effect(trees, runs, values)``: ``stats.run_effect``, the permutation test of a shock shared
  by one run's papers: ``p``, ``runs``, ``papers``, ``method`` (NULL with one run);
- ``paired_ci(trees, differences)``: ``stats.paired_test``: the sign-flip p-value, the smallest p
  the papers allow and the interval that inverts the test;
- ``rank_ci(agents, trees, values)``: ``stats.rank_intervals``, a list of (agent, rank, low, high,
  method, warning), about the settings' population;
- ``ppi_ci(trees, predicted, labelled_trees, labelled_predicted, labels)``: a judge's figure
  corrected by labelled items, ``stats.prediction_powered`` (NULL where no item is labelled);
  ``ppi_diff_ci`` the same five lists for agent A, then for B: ``stats.prediction_powered_difference``,
  with each side's corrected score (``mean_a``, ``mean_b``).

Each interval is a struct: ``estimate``, ``se``, ``ci_low``, ``ci_high``, ``papers``,
``episodes``, ``method`` and ``warning`` (NULL when none; then ``ci_low``/``ci_high`` may be NULL
too: no interval is better than one that does not hold); ``paired_ci`` adds ``p`` and ``p_min``.
The methods, and the measurements behind them, are in ``stats.py`` and docs/statistics.md.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from inquitree import stats

RESAMPLES_ENV = "INQUITREE_RANK_RESAMPLES"
SEED_ENV = "INQUITREE_STATS_SEED"

_INTERVAL_FIELDS = [
    ("estimate", pa.float64()),
    ("se", pa.float64()),
    ("ci_low", pa.float64()),
    ("ci_high", pa.float64()),
    ("papers", pa.int32()),
    ("episodes", pa.int32()),
    ("method", pa.string()),
    ("warning", pa.string()),
]
_INTERVAL = pa.struct(_INTERVAL_FIELDS)
_PAIRED = pa.struct(_INTERVAL_FIELDS + [("p", pa.float64()), ("p_min", pa.float64())])
_CORRECTED_DIFFERENCE = pa.struct(_INTERVAL_FIELDS + [("mean_a", pa.float64()), ("mean_b", pa.float64())])
_RANKS = pa.list_(
    pa.struct(
        [
            ("agent", pa.string()),
            ("rank", pa.int32()),
            ("rank_low", pa.int32()),
            ("rank_high", pa.int32()),
            ("method", pa.string()),
            ("warning", pa.string()),
        ]
    )
)
_RUN_EFFECT = pa.struct(
    [
        ("p", pa.float64()),
        ("runs", pa.int32()),
        ("papers", pa.int32()),
        ("method", pa.string()),
        ("low", pa.float64()),
        ("high", pa.float64()),
    ]
)
_SQL_TYPES = {pa.float64(): "DOUBLE", pa.int32(): "INTEGER", pa.string(): "VARCHAR"}


def _sql_type(arrow_type) -> str:
    """The SQL spelling of the functions' Arrow return types."""
    if isinstance(arrow_type, pa.StructType):
        return "STRUCT(" + ", ".join(f"{f.name} {_sql_type(f.type)}" for f in arrow_type) + ")"
    if isinstance(arrow_type, pa.ListType):
        return _sql_type(arrow_type.value_type) + "[]"
    return _SQL_TYPES[arrow_type]


@dataclass(frozen=True)
class Settings:
    """What a warehouse's statistics may be told: the resamples of the rank intervals and the
    seed of every seeded draw (rank resamples; the paired test's patterns beyond 20 papers)."""

    resamples: int = 2000
    seed: int = 0
    point_only: bool = False  # estimates without intervals: the baseline of bench/intervals.py
    population: str = "papers"  # papers like these | these: exactly these papers (docs/DECISIONS.md #26)
    joint_ranks: bool = False  # rank intervals that hold for every agent at once
    complete_case: bool = False  # the finished episodes alone, not every cell under the failure rule (#33)

    @classmethod
    def from_env(cls) -> "Settings":
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

        return cls(read(RESAMPLES_ENV, cls.resamples, 100), read(SEED_ENV, cls.seed, 0))

    def about(self, population: str) -> "Settings":
        """The same settings, speaking of ``population`` (``papers`` or ``these``)."""
        if population not in ("papers", "these"):
            raise ValueError(f"population {population!r}: expected papers or these")
        return dataclasses.replace(self, population=population)

    # -- the SQL functions ---------------------------------------------------------------------
    def mean(self, trees, values, low=None, high=None, ceiling=None) -> dict | None:
        """The mean over papers with its interval; ``ceiling``: the largest mean the metric allows
        where its range has no upper bound (steps: the turn limit), where the interval is cut."""
        units = _units(trees, values)
        if units is None:
            return None
        codes, n, (v,) = units
        counts = np.bincount(codes, minlength=n)
        means = np.bincount(codes, weights=v, minlength=n) / counts
        if self.point_only:
            return _point(float(means.mean()), n, len(v))
        if self.population == "these":
            groups = [v[codes == i].tolist() for i in range(n)]
            return _row(stats.interval_of_groups(groups, _bounds(low, high), ceiling=ceiling))
        return _row(stats.interval_of_means(means, len(v), _bounds(low, high), ceiling=ceiling))

    def corrected(self, trees, predicted, labelled_trees, labelled_predicted, labels) -> dict | None:
        if trees is None or labels is None or len(labels) == 0:
            return None
        names = [str(t) for t in trees.to_pylist()]
        at = [str(t) for t in labelled_trees.to_pylist()]
        found = stats.prediction_powered(
            names, _floats(predicted), at, _floats(labelled_predicted), _floats(labels), seed=self.seed
        )
        return _row(found)

    def corrected_difference(self, *lists) -> dict | None:
        """B - A of the corrected scores (``stats.prediction_powered_difference``), with each side's."""
        if any(x is None for x in lists[:2] + lists[5:7]):
            return None
        sides = []
        for part in (lists[:5], lists[5:]):
            trees, predicted, labelled_trees, labelled_predicted, labels = part
            sides.append(
                (
                    [str(t) for t in trees.to_pylist()],
                    _floats(predicted),
                    [str(t) for t in labelled_trees.to_pylist()] if labelled_trees is not None else [],
                    _floats(labelled_predicted) if labelled_predicted is not None else np.zeros(0),
                    _floats(labels) if labels is not None else np.zeros(0),
                )
            )
        found = stats.prediction_powered_difference(sides[0], sides[1], seed=self.seed)
        means = [
            stats.prediction_powered(*side, draws=100).estimate if len(side[4]) else None for side in sides
        ]  # each side's point estimate (its interval is the leaderboard's)
        return {**_row(found), "mean_a": means[0], "mean_b": means[1]}

    def capped_mean(self, trees, values, ceiling) -> dict | None:
        """A positive metric's mean over papers (steps), its interval cut at ``ceiling``."""
        return self.mean(trees, values, 0.0, None, ceiling)

    def unit_mean(self, values, low=None, high=None, ceiling=None) -> dict | None:
        if values is None:
            return None
        x = _floats(values)
        x = x[~np.isnan(x)]
        if len(x) == 0:
            return None
        if self.point_only:
            return _point(float(x.mean()), len(x), len(x))
        return _row(stats.interval_of_means(x, len(x), _bounds(low, high), unit="episode", ceiling=ceiling))

    def run_effect(self, trees, runs, values) -> dict | None:
        """``stats.run_effect``: do the runs differ beyond what the papers allow (NULL with one run)."""
        if trees is None or runs is None or values is None or self.point_only:
            return None
        t, r = ([None if x is None else str(x) for x in c.to_pylist()] for c in (trees, runs))
        found = stats.run_effect(t, r, _floats(values).tolist(), self.seed)
        return None if found is None else dataclasses.asdict(found)

    def ratio(self, trees, numerators, denominators) -> dict | None:
        units = _units(trees, numerators, denominators)
        if units is None:
            return None
        codes, n, (num, den) = units
        if self.point_only:
            total = den.sum()
            return _point(num.sum() / total if total else float("nan"), n, len(num))
        return _row(stats.pooled_rate(codes.tolist(), num.tolist(), den.tolist()))

    def change(self, trees, values, is_baseline) -> dict | None:
        units = _units(trees, values, is_baseline)
        if units is None:
            return None
        codes, n, (v, base) = units
        is_base = base > 0
        if not is_base.any() or is_base.all():
            return None
        if self.point_only:
            means = [
                np.bincount(codes[m], weights=v[m], minlength=n) / np.bincount(codes[m], minlength=n)
                for m in (is_base, ~is_base)
            ]
            f0, f1 = (float(np.nanmean(x)) for x in means)
            return _point(100 * (f1 - f0) / f0 if f0 > 0 else float("nan"), n, len(v))
        return _row(stats.relative_change(codes.tolist(), v.tolist(), is_base.tolist()))

    def paired(self, trees, differences) -> dict | None:
        units = _units(trees, differences)
        if units is None:
            return None
        codes, n, (d,) = units
        means = np.bincount(codes, weights=d, minlength=n) / np.bincount(codes, minlength=n)
        if self.point_only:
            return _point(float(means.mean()), n, len(d)) | {"p": None, "p_min": None}
        if self.population == "these":
            result = stats.paired_test(codes.tolist(), d.tolist(), self.seed, population="these")
        else:
            result = stats.paired_test_of_means(means, len(d), self.seed)
        return _row(result) | {"p": result.p, "p_min": result.p_min}

    def ranks(self, agents, trees, values) -> list | None:
        if agents is None or trees is None or values is None or self.point_only:
            return None
        a, t, v = (x.to_pylist() if isinstance(x, pa.Array) else list(x) for x in (agents, trees, values))
        found = stats.rank_intervals(
            a, t, v, resamples=self.resamples, seed=self.seed, simultaneous=self.joint_ranks, population=self.population
        )
        return [
            {
                "agent": r.agent,
                "rank": r.rank,
                "rank_low": r.low,
                "rank_high": r.high,
                "method": r.method,
                "warning": r.warning,
            }
            for r in found
        ]


def _bounds(low, high) -> tuple[float | None, float | None] | None:
    low = None if low is None else float(low)
    high = None if high is None else float(high)
    return None if low is None and high is None else (low, high)


def _point(estimate: float, papers: int, episodes: int) -> dict:
    value = float(estimate) if np.isfinite(estimate) else None
    return _row(stats.Interval(value, None, None, None, "estimate only", None, papers, episodes))


def _row(r: stats.Interval) -> dict:
    return {
        "estimate": r.estimate,
        "se": r.se,
        "ci_low": r.low,
        "ci_high": r.high,
        "papers": r.papers,
        "episodes": r.episodes,
        "method": r.method,
        "warning": r.warning,
    }


def _floats(column) -> np.ndarray:
    array = column if isinstance(column, pa.Array) else pa.array(column)
    return array.cast(pa.float64()).fill_null(float("nan")).to_numpy(zero_copy_only=False)


def _units(trees: Sequence, *columns: Sequence) -> tuple[np.ndarray, int, list[np.ndarray]] | None:
    """Tree codes (0..T-1 in the order of the sorted ids) and float columns, with the units
    where any value is NULL left out; None when nothing is left (a NULL list, as
    ``list(...) FILTER (...)`` gives for a group with no matching row, counts as empty).
    The lists come as Arrow arrays from the SQL functions, or as Python sequences (made Arrow
    arrays here), without a Python object per value."""
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


def _per_group(function, returns, arity: int):
    """``function`` as a vectorized (Arrow) DuckDB function: one call per row, each list handed
    over as an Arrow array (a scalar as a Python value), a NULL as None."""

    def run(*columns):
        columns = tuple(c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns)
        out = []
        for i in range(len(columns[0])):
            row = []
            for c in columns:
                cell = c[i]
                if not cell.is_valid:
                    row.append(None)
                elif isinstance(cell, pa.ListScalar):
                    row.append(cell.values)
                else:
                    row.append(cell.as_py())
            out.append(function(*row))
        return pa.array(out, type=returns)

    positional = inspect.Parameter.POSITIONAL_ONLY
    run.__signature__ = inspect.Signature([inspect.Parameter(f"arg{k}", positional) for k in range(arity)])  # type: ignore[attr-defined]
    return run


def register(con, settings: Settings) -> None:
    """Make the interval functions callable on a DuckDB connection."""
    functions = [
        ("mean_ci", settings.mean, ["VARCHAR[]", "DOUBLE[]", "DOUBLE", "DOUBLE"], _INTERVAL),
        ("unit_mean_ci", settings.unit_mean, ["DOUBLE[]", "DOUBLE", "DOUBLE", "DOUBLE"], _INTERVAL),
        ("capped_mean_ci", settings.capped_mean, ["VARCHAR[]", "DOUBLE[]", "DOUBLE"], _INTERVAL),
        ("ratio_ci", settings.ratio, ["VARCHAR[]", "DOUBLE[]", "DOUBLE[]"], _INTERVAL),
        ("change_ci", settings.change, ["VARCHAR[]", "DOUBLE[]", "BOOLEAN[]"], _INTERVAL),
        ("paired_ci", settings.paired, ["VARCHAR[]", "DOUBLE[]"], _PAIRED),
        ("run_effect", settings.run_effect, ["VARCHAR[]", "VARCHAR[]", "DOUBLE[]"], _RUN_EFFECT),
        ("rank_ci", settings.ranks, ["VARCHAR[]", "VARCHAR[]", "DOUBLE[]"], _RANKS),
        ("ppi_ci", settings.corrected, ["VARCHAR[]", "DOUBLE[]", "VARCHAR[]", "DOUBLE[]", "DOUBLE[]"], _INTERVAL),
        (
            "ppi_diff_ci",
            settings.corrected_difference,
            ["VARCHAR[]", "DOUBLE[]", "VARCHAR[]", "DOUBLE[]", "DOUBLE[]"] * 2,
            _CORRECTED_DIFFERENCE,
        ),
    ]
    # the failure rule the views apply (cell_scores, docs/DECISIONS.md #33): a constant of the connection
    con.create_function("complete_case", lambda: settings.complete_case, [], "BOOLEAN", side_effects=False)
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
