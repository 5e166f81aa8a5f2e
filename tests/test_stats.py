"""``inquitree.stats``: the intervals and the paired test that every table prints, against cases
worked out by hand, against brute force, and on simulated campaigns whose truth is known (a few
cells of ``studies/stats_sim.py``, which writes the full tables)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from inquitree import stats
from inquitree.stats import holm, mean_interval, paired_test, papers_needed, rank_intervals

from campaignsim import DESIGNS, campaign, paired_campaign, run_spread_campaign

ROOT = Path(__file__).resolve().parent.parent


def test_three_papers_get_the_t_interval_on_paper_means_by_hand():
    # Papers 0.2 (episodes 0.1 and 0.3), 0.5 and 0.9: estimate 0.5333, SE sd(0.2, 0.5, 0.9) / sqrt(3)
    # = 0.35119 / 1.73205 = 0.20276, interval +- t_{2, 0.975} = 4.30265 x SE.
    r = mean_interval(["a", "a", "b", "c"], [0.1, 0.3, 0.5, 0.9])
    assert r.estimate == pytest.approx(0.533333, abs=1e-6) and r.se == pytest.approx(0.20276, abs=1e-5)
    assert r.high - r.estimate == pytest.approx(4.30265 * 0.20276, abs=1e-4)
    assert r.method == "about papers like these: t interval over 3 paper means (2 df)" and r.warning is None
    assert (r.papers, r.episodes) == (3, 4)
    # The same metric in [0, 1]: the interval never leaves the range.
    bounded = mean_interval(["a", "a", "b", "c"], [0.1, 0.3, 0.5, 0.9], bounds=(0, 1))
    assert 0.0 <= bounded.low < bounded.high <= 1.0 and "score interval for a mean in [0, 1]" in bounded.method
    for df, q in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (6, 2.4469), (17, 2.1098)):
        assert stats.t_quantile(0.975, df) == pytest.approx(q, abs=1e-4)


def test_t_quantiles_past_the_series_agree_with_it():
    """Above SERIES_MAX_DF degrees of freedom the quantile is the Cornish-Fisher expansion (the
    exact series grew with df and took seconds for intervals over thousands of episodes); it
    agrees with bisection on the exact distribution function, and in constant time."""
    assert stats.normal_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)
    for df in (stats.SERIES_MAX_DF + 1, 1000, 5000):
        for p in (0.6, 0.9, 0.975, 0.995):
            low, high = 0.0, 100.0
            for _ in range(100):
                mid = (low + high) / 2
                low, high = (mid, high) if stats.t_cdf_two_sided(mid, df) < 2 * p - 1 else (low, mid)
            assert stats.t_quantile(p, df) == pytest.approx((low + high) / 2, abs=1e-9), (df, p)
    assert stats.t_quantile(0.975, 10**9) == pytest.approx(1.959964, abs=1e-6)


def test_papers_weigh_the_same_however_many_runs_they_have():
    r = mean_interval(["a", "a", "a", "b", "c"], [1.0, 1.0, 1.0, 0.0, 0.5])
    assert r.estimate == 0.5 and (r.papers, r.episodes) == (3, 5)
    # Missing values are left out, not counted as 0.
    assert mean_interval(["a", "b", "c", None, "d"], [0.1, None, 0.5, 0.3, float("nan")]).papers == 2


def test_fewer_than_three_papers_print_no_interval_but_say_why():
    r = mean_interval(["a", "b"], [0.0, 1.0], bounds=(0, 1))
    assert r.estimate == 0.5 and r.low is None and r.high is None
    assert r.warning.startswith("2 papers: a 95% interval needs at least 3 papers")
    assert mean_interval([], []).warning == "no episodes"


def test_papers_at_a_bound_get_the_score_interval_by_hand():
    # 4 of 5 papers at 0 (a weak agent): never the zero-width or negative interval the t gave.
    r = mean_interval(list("abcde"), [0, 0, 0, 0, 0.4], bounds=(0, 1))
    assert r.method.startswith("about papers like these: score interval for a mean in [0, 1] (4 at 0 of 5)")
    x = np.array([0, 0, 0, 0, 0.4])
    share = x.var(ddof=1) / (x.mean() * (1 - x.mean()))
    k = stats.t_quantile(0.975, 4) ** 2 * share / 5
    centre, half = (x.mean() + k / 2) / (1 + k), math.sqrt(k * x.mean() * (1 - x.mean()) + k * k / 4) / (1 + k)
    assert (r.low, r.high) == pytest.approx((centre - half, centre + half))
    assert 0 < r.low < r.estimate < r.high < 1 and r.high - r.estimate > r.estimate - r.low  # reaches into the range
    # Every paper at 0: Wilson's interval (the largest spread a mean allows), [0, k / (1 + k)], not [0, 0].
    zero = mean_interval(list("abcdefgh"), [0.0] * 8, bounds=(0, 1))
    k = stats.t_quantile(0.975, 7) ** 2 / 8
    assert zero.low == 0.0 and zero.high == pytest.approx(k / (1 + k)) and 0.4 < zero.high < 0.42
    # Mirrored at the ceiling, on another scale.
    top = mean_interval(list("abcdefgh"), [10.0] * 8, bounds=(0, 10))
    assert top.high == 10.0 and 10 - top.low == pytest.approx(zero.high * 10)
    with pytest.raises(ValueError, match="a paper's mean 1.5 is above the metric's bound 1"):
        mean_interval(list("abc"), [0.5, 1.5, 0.2], bounds=(0, 1))


def test_papers_closer_than_one_paper_can_pull_are_warned_away_from_the_bounds():
    """A rare bad paper away from the bounds (``rarebad``: 1 paper in 20 at 0.1, the rest near
    0.7): when none is drawn the papers agree closely and the interval, narrower than one paper's
    pull, misses the true mean; such rows are warned, and papers that spread as widely as
    ``normal``'s are not. The warning is what one more paper at the far end would do."""
    close = [0.68, 0.71, 0.7, 0.66, 0.73, 0.69, 0.72, 0.7]
    r = mean_interval(list("abcdefgh"), close, bounds=(0, 1))
    pull = np.mean(close) / 9  # one more paper at 0 among 9
    assert r.estimate - r.low < pull
    assert r.warning.startswith(f"one more paper at 0 would move the mean by {pull:.3g}, past the interval's")
    spread = [0.3, 0.55, 0.7, 0.45, 0.6, 0.35, 0.5, 0.65]
    assert mean_interval(list("abcdefgh"), spread, bounds=(0, 1)).warning is None
    # On a scale of its own the pull is in the metric's units.
    scaled = mean_interval(list("abcdefgh"), [10 * v for v in close], bounds=(0, 10))
    assert f"by {10 * pull:.3g}," in scaled.warning


def test_skew_correction_stops_where_halls_transformation_turns_flat():
    """One paper far above seven alike (skewness 1.8): Hall's inverse past its flat point put the
    upper end at 1, admitting every paper at 1 when seven sit at 0.5. The end stops at mean + 3s/g."""
    x = np.array([0.5, 0.52, 0.48, 0.5, 0.51, 0.49, 0.5, 0.95])
    low, high = stats.skew_corrected(x)
    g = stats.skewness(x)
    assert high == pytest.approx(x.mean() + 3 * x.std(ddof=1) / g)
    assert 0.69 < high < 0.85
    symmetric = np.array([0.3, 0.5, 0.45, 0.55, 0.42, 0.48, 0.6, 0.7])
    t_half = stats.t_quantile(0.975, 7) * symmetric.std(ddof=1) / math.sqrt(8)
    assert stats.skew_corrected(symmetric) == pytest.approx(
        (symmetric.mean() - t_half, symmetric.mean() + t_half), abs=0.01
    )


def test_skewed_means_near_a_bound_get_the_skew_corrected_hull():
    """A strong agent that fails badly on one paper, none exactly at 1: the t interval is
    symmetric around 0.93; the printed one reaches further down, towards the tail, than up."""
    values = [0.99, 0.98, 0.97, 0.99, 0.6, 0.95, 0.99, 0.97]
    r = mean_interval(list("abcdefgh"), values, bounds=(0, 1))
    x = np.array(values)
    t_half = stats.t_quantile(0.975, 7) * x.std(ddof=1) / math.sqrt(8)
    assert "widened by the skew-corrected t interval" in r.method
    # 0.93 is within 1/8 of 1: a rarer failure than 8 papers can show would move it further.
    assert r.warning.startswith("the mean is within 1/8 of the range's end 1, which no paper reaches")
    away = mean_interval(list("abcdefgh"), [0.8, 0.7, 0.75, 0.85, 0.6, 0.8, 0.7, 0.75], bounds=(0, 1))
    assert "within 1/8" not in away.warning  # 0.74 is not near 1; what it gets is the next test's warning
    assert r.low < x.mean() - t_half and r.high == 1.0
    assert (r.low, r.high) == pytest.approx((min(stats.score_interval(x)[0], stats.skew_corrected(x)[0]), 1.0))


def test_skew_correction_is_the_t_interval_on_symmetric_papers_and_inverts_halls_transformation():
    x = np.array([0.3, 0.4, 0.5, 0.6, 0.7])
    half = stats.t_quantile(0.975, 4) * x.std(ddof=1) / math.sqrt(5)
    assert stats.skew_corrected(x) == pytest.approx((0.5 - half, 0.5 + half))
    # Skewed: each end solves g((mean - end) / s) = -+ q / sqrt(n) with Hall's g.
    y = np.array([0.1, 0.12, 0.15, 0.2, 0.9, 0.11])
    n, mean, s = len(y), y.mean(), y.std(ddof=1)
    gamma = ((y - mean) ** 3).mean() / s**3
    q = stats.t_quantile(0.975, n - 1) / math.sqrt(n)

    def g(t):
        return t + gamma * t**2 / 3 + gamma**2 * t**3 / 27 + gamma / (6 * n)

    low, high = stats.skew_corrected(y)
    assert g((mean - low) / s) == pytest.approx(q)
    # Above, -q is below the value g takes where it is flat (t = -3 / gamma, g = -1 / gamma +
    # gamma / 6n): the end stops there instead of running off.
    assert g(-3 / gamma) > -q and high == pytest.approx(mean + 3 * s / gamma)
    assert high - mean > mean - low  # the long tail is above
    z = np.array([0.3, 0.32, 0.35, 0.4, 0.5, 0.31, 0.36, 0.45, 0.33, 0.38])  # milder: no cap
    zm, zs = z.mean(), z.std(ddof=1)
    zg, zq = ((z - zm) ** 3).mean() / zs**3, stats.t_quantile(0.975, 9) / math.sqrt(10)
    assert 1 + zg * (-zq - zg / 60) > 0
    z_high = stats.skew_corrected(z)[1]
    zt = (zm - z_high) / zs
    assert zt + zg * zt**2 / 3 + zg**2 * zt**3 / 27 + zg / 60 == pytest.approx(-zq)


def test_bounded_intervals_hold_for_two_point_data_by_brute_force():
    # Values 0/1 with mean 0.3 at 8 papers: the interval must miss at most 5% of the time.
    rng = np.random.default_rng(1)
    misses = 0
    for _ in range(400):
        r = mean_interval(list("abcdefgh"), (rng.random(8) < 0.3).astype(float).tolist(), bounds=(0, 1))
        misses += not r.low <= 0.3 <= r.high
    assert misses / 400 <= 0.05


def test_positive_metrics_get_the_log_scale_interval_by_hand():
    values = [20.0, 31.0, 45.0, 80.0, 25.0]
    r = mean_interval(list("abcde"), values, bounds=(0, None))
    y = np.log(values)
    s2 = y.var(ddof=1)
    centre, half = y.mean() + s2 / 2, stats.t_quantile(0.975, 4) * math.sqrt(s2 / 5 + s2**2 / 8)
    assert r.low == pytest.approx(math.exp(centre - half)) and r.high == pytest.approx(math.exp(centre + half))
    assert r.estimate == pytest.approx(40.2) and "Cox" in r.method
    # No spread: no interval, and a warning instead of a zero-width one.
    flat = mean_interval(list("abc"), [7.0, 7.0, 7.0], bounds=(0, None))
    assert flat.low is None and "all 3 papers have the same value (7)" in flat.warning


def test_many_step_counts_get_the_t_interval_which_holds_their_mean(monkeypatch):
    """Cox's interval is centred on a log-normal's mean: over thousands of episodes of a skewed,
    lumpy step distribution it narrowed around a point beside the sample mean and left the mean
    out. From COX_MAX_UNITS units on the t interval is printed; below it, over episodes, a warning."""
    steps = np.array([5.0] * 5000 + [9.0] * 2000 + [30.0] * 1000)  # a random agent's lumps
    monkeypatch.setattr(stats, "COX_MAX_UNITS", 10**9)
    cox = stats.interval_of_means(steps, len(steps), (0.0, None), unit="episode")
    assert "Cox" in cox.method and not cox.low <= steps.mean() <= cox.high  # the failure
    monkeypatch.undo()
    r = stats.interval_of_means(steps, len(steps), (0.0, None), unit="episode")
    half = stats.t_quantile(0.975, len(steps) - 1) * steps.std(ddof=1) / math.sqrt(len(steps))
    assert (r.low, r.high) == pytest.approx((steps.mean() - half, steps.mean() + half))
    assert "t interval over 8000 episodes" in r.method and r.warning is None
    few = stats.interval_of_means(steps[::300], 27, (0.0, None), unit="episode")
    assert "Cox" in few.method and "fewer than 30 episodes" in few.warning
    papers = stats.interval_of_means(steps[::300], 27, (0.0, None))  # papers: measured in stats_sim
    assert "Cox" in papers.method and papers.warning is None


def _brute_p(d: np.ndarray, delta: float) -> float:
    n = len(d)
    patterns = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
    x = d - delta
    return float((np.abs(patterns @ x) >= abs(x.sum()) - 1e-12).mean())


@pytest.mark.parametrize("n", [6, 7, 9, 12])
def test_paired_interval_is_the_set_the_test_does_not_reject(n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        d = rng.normal(0.05, 0.1, n)
        r = paired_test([f"p{i}" for i in range(n)], list(d))
        assert r.p == pytest.approx(_brute_p(d, 0.0), abs=1e-12) and r.p_min == 2 / 2**n
        eps = 1e-7
        # Just inside each end the test does not reject; just outside it does.
        assert _brute_p(d, r.low + eps) > 0.05 and _brute_p(d, r.low - eps) <= 0.05
        assert _brute_p(d, r.high - eps) > 0.05 and _brute_p(d, r.high + eps) <= 0.05
        assert (r.low <= 0 <= r.high) == (r.p > 0.05)


def test_five_papers_cannot_show_a_difference_and_say_so():
    r = paired_test(list("abcde"), [0.1, 0.2, 0.3, 0.1, 0.2])
    assert r.p == 0.0625 and r.p_min == 0.0625 and r.low is None
    assert "5 papers: the smallest p this test can give is 0.0625" in r.warning
    three = paired_test(["a", "a", "b", "c"], [56.0, 56.0, 32.0, 56.0])
    assert (three.estimate, three.p, three.p_min) == (48.0, 0.25, 0.25)


def test_more_than_twenty_papers_use_seeded_patterns():
    rng = np.random.default_rng(3)
    d = list(rng.normal(0.02, 0.1, 24))
    r = paired_test([f"p{i}" for i in range(24)], d)
    assert "Monte Carlo, 20000 sign patterns, seed 0" in r.method and r.p_min == 1 / 20001
    assert r == paired_test([f"p{i}" for i in range(24)], d)  # seeded: the same every time
    assert (r.low <= 0 <= r.high) == (r.p > 0.05)


def test_papers_needed_plans_for_the_holm_family_and_lost_runs_as_brute_force_shows():
    """The plan's power, checked by playing campaigns of that many papers through the printed
    test: at 0.05 / 3 for a family of 3, and with a third of the papers dropping out."""
    from inquitree.stats import sign_flip_p

    alone = papers_needed(0.1, 0.1, 0.05, runs=1, simulations=600)
    family = papers_needed(0.1, 0.1, 0.05, runs=1, simulations=600, comparisons=3)
    lossy = papers_needed(0.1, 0.1, 0.05, runs=1, simulations=600, missing=1 / 3)
    assert family.papers > alone.papers and lossy.papers > alone.papers
    assert "at 0.05 / 3 (Holm's family of 3)" in family.method and "33.3% of papers losing a run" in lossy.method
    rng = np.random.default_rng(11)
    sd = math.sqrt(0.1**2 + 0.05**2)
    hits_family = sum(sign_flip_p(rng.normal(0.1, sd, family.papers)) <= 0.05 / 3 for _ in range(400))
    kept = [rng.normal(0.1, sd, lossy.papers)[rng.random(lossy.papers) >= 1 / 3] for _ in range(400)]
    hits_lossy = sum(len(k) > 5 and sign_flip_p(k) <= 0.05 for k in kept)
    assert hits_family / 400 >= 0.74 and hits_lossy / 400 >= 0.74  # 0.8 less 3 Monte Carlo SEs
    # The power printed is simulated again on campaigns that did not choose the count (the search's
    # own estimate at its first count past 80% leans high), and the method says so.
    assert "fresh campaigns, not the ones that chose it" in lossy.method
    rerun = papers_needed(0.1, 0.1, 0.05, runs=1, simulations=600, missing=1 / 3, seed=5)
    assert rerun.power >= 0.8
    # The plan without the losses, run with them: short of 80%.
    short = [rng.normal(0.1, sd, alone.papers)[rng.random(alone.papers) >= 1 / 3] for _ in range(400)]
    assert sum(len(k) > 5 and sign_flip_p(k) <= 0.05 for k in short) / 400 < 0.74


def test_conservative_spreads_use_the_chi_square_bound():
    # chi-square(7) 20% quantile 3.822 (tables): factor sqrt(7 / 3.822) = 1.353.
    between, within, factor = stats.conservative_spreads(0.1, 0.05, 8)
    assert factor == pytest.approx(1.353, abs=0.005) and (between, within) == pytest.approx(
        (0.1 * factor, 0.05 * factor)
    )
    assert stats.conservative_spreads(0.1, 0.05, 200)[2] < 1.07  # a large pilot hardly widens them
    with pytest.raises(ValueError, match="a pilot of 1 paper"):
        stats.conservative_spreads(0.1, 0.05, 1)


def test_holm_by_hand():
    # Sorted 0.01, 0.03, 0.04 of m = 3: 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04).
    assert holm([0.01, 0.04, 0.03, None]) == [pytest.approx(0.03), pytest.approx(0.06), pytest.approx(0.06), None]
    # 0.8 of 2 becomes 1.6, capped at 1; 0.9 can then be no smaller.
    assert holm([0.9, 0.8]) == [1.0, 1.0] and holm([0.2]) == [0.2] and holm([]) == []


def test_rank_intervals():
    # x beats y on every one of 8 papers: both ranks are certain (p 2/256). On 4 papers the paired
    # test can give no p below 2/16, so the ranks cannot be told apart and the rows say why.
    eight = [f"p{i}" for i in range(8)]
    x = list(np.linspace(0.5, 0.8, 8))
    clear = rank_intervals(["x"] * 8 + ["y"] * 8, eight * 2, x + [v - 0.1 for v in x])
    assert [(r.agent, r.rank, r.low, r.high) for r in clear] == [("x", 1, 1, 1), ("y", 2, 2, 2)]
    four = rank_intervals(["x"] * 4 + ["y"] * 4, list("abcd") * 2, [0.5, 0.6, 0.7, 0.8, 0.4, 0.5, 0.6, 0.7])
    assert [(r.agent, r.rank, r.low, r.high) for r in four] == [("x", 1, 1, 2), ("y", 2, 1, 2)]
    assert four[0].warning.startswith("no pair of x and another agent can be told apart at 4 papers")
    rng = np.random.default_rng(0)
    papers = [f"p{i}" for i in range(10)]
    values = list(rng.normal(0.5, 0.1, 10)) + list(rng.normal(0.5, 0.1, 10))
    tied = rank_intervals(["x"] * 10 + ["y"] * 10, papers * 2, values)
    assert all((r.low, r.high) == (1, 2) for r in tied)
    # An agent with no value (a judge whose every verdict failed) has no rank, in either method.
    for joint in (False, True):
        found = rank_intervals(["x"] * 4 + ["z"] * 4, list("abcd") * 2, [0.5] * 4 + [None] * 4, simultaneous=joint)
        assert [r.agent for r in found] == ["x"]


def test_simultaneous_rank_intervals_come_from_holm_adjusted_pairs():
    # Three agents 0.1 apart on 8 papers, each ahead on every paper: every pair is shown apart
    # (p 2/256 each, Holm 3 x 0.0078 = 0.023), so the ranks are certain at once.
    papers = [f"p{i}" for i in range(8)]
    base = np.linspace(0.2, 0.6, 8)
    agents = ["a"] * 8 + ["b"] * 8 + ["c"] * 8
    values = list(base + 0.2) + list(base + 0.1) + list(base)
    joint = rank_intervals(agents, papers * 3, values, simultaneous=True)
    assert [(r.agent, r.rank, r.low, r.high) for r in joint] == [("a", 1, 1, 1), ("b", 2, 2, 2), ("c", 3, 3, 3)]
    assert joint[0].method.startswith("rank intervals that hold for every agent at once")
    assert rank_intervals(agents, papers * 3, values)[0].method.startswith("each agent's rank set on its own")
    # b and c apart on only half the papers: they cannot be told apart, a stays first.
    values = list(base + 0.2) + list(base + np.tile([0.05, -0.05], 4)) + list(base)
    joint = rank_intervals(agents, papers * 3, values, simultaneous=True)
    assert [(r.low, r.high) for r in joint] == [(1, 1), (2, 3), (2, 3)]
    # Five papers cannot show any pair apart: every interval is every rank.
    few = rank_intervals(agents[:5] + agents[8:13], papers[:5] * 2, values[:5] + values[8:13], simultaneous=True)
    assert [(r.low, r.high) for r in few] == [(1, 2), (1, 2)]


def test_papers_needed_matches_the_normal_approximation():
    # Difference 0.05, paper SD sqrt(0.1^2 + 0.1^2 / 3) = 0.1155: ((1.96 + 0.84) x 0.1155 / 0.05)^2 = 41.8.
    r = papers_needed(0.05, 0.1, 0.1, runs=3, simulations=1000)
    assert 36 <= r.papers <= 48 and r.power >= 0.8 and r.sd_paper == pytest.approx(0.11547, abs=1e-5)
    with pytest.raises(ValueError, match="a difference of 0 cannot be detected"):
        papers_needed(0.0, 0.1, 0.1)


# -- a few cells of studies/stats_sim.py, with fewer campaigns ---------------------------------------
@pytest.mark.parametrize(
    ("design", "papers"), [("floor70", 5), ("floor70", 8), ("ceiling70", 8), ("ushape", 8), ("skewed08", 8)]
)
def test_intervals_hold_where_the_t_interval_did_not_and_are_not_much_wider(design, papers):
    rng = np.random.default_rng(7)
    truth, bounds = DESIGNS[design].truth, DESIGNS[design].bounds
    held = printed = 0
    widths, t_widths = [], []
    for _ in range(1000):
        trees, values = campaign(rng, design, papers)
        r = mean_interval(trees, values, bounds=bounds)
        if r.low is not None:
            printed += 1
            held += r.low <= truth <= r.high
            widths.append(r.high - r.low)
        _, means, _ = stats.paper_means(trees, values)
        half = stats.t_quantile(0.975, papers - 1) * means.std(ddof=1) / math.sqrt(papers)
        low, high = bounds
        t_high = means.mean() + half if high is None else min(high, means.mean() + half)
        if half > 0:
            t_widths.append(t_high - max(low, means.mean() - half))
    # the target; 1,000 campaigns: SE 0.7%. A campaign whose papers all have the same mean (up to
    # rounding) gets no interval, with a warning, rather than one of zero width: rare, never silent.
    assert printed >= 990 and held / printed >= 0.93
    assert np.median(widths) <= 1.5 * np.median(t_widths)  # right and still useful


def test_fixed_papers_test_holds_its_size_when_effects_differ_by_paper():
    """Effects of +0.2 on four papers and -0.2 on four: their mean over these papers is 0, and
    the test about these papers must reject at most 5% of the time as the runs vary. Flipping
    single pairs tested that every paper's effect is 0 and rejected nearly always."""
    rng = np.random.default_rng(5)
    effects = np.repeat([0.2, -0.2], 4)
    trees = [f"p{i}" for i in range(8) for _ in range(3)]
    rejected = 0
    for _ in range(400):
        d = [float(e + x) for e in effects for x in rng.normal(0, 0.05, 3)]
        rejected += paired_test(trees, d, population="these").p <= 0.05
    assert rejected / 400 <= 0.085


def test_paired_test_size_on_a_symmetric_null():
    rng = np.random.default_rng(11)
    rejected = sum(paired_test(*paired_campaign(rng, "paired-normal", 8)).p <= 0.05 for _ in range(400))
    assert rejected / 400 <= 0.085  # 5% +- 2 SE at 400 campaigns


def test_fixed_papers_speak_of_the_runs_only_by_hand():
    # Papers a (0.1, 0.3), b (0.5, 0.6), c (0.9, 0.8): each paper's own run variance 0.02, 0.005,
    # 0.005, over its 2 runs and 3^2: 0.0011111 + 2 x 0.00027778 = 0.0016667, SE 0.040825;
    # Satterthwaite's df 0.0016667^2 / (0.0011111^2 + 2 x 0.00027778^2) = 2 (one df each), so
    # t_{2, 0.975} = 4.30265: a paper carrying most of the spread leaves few df.
    papers, values = ["a", "a", "b", "b", "c", "c"], [0.1, 0.3, 0.5, 0.6, 0.9, 0.8]
    r = mean_interval(papers, values, bounds=(0, 1), population="these")
    assert r.se == pytest.approx(0.040825, abs=1e-6)
    assert r.high - r.estimate == pytest.approx(4.30265 * 0.040825, abs=1e-5)
    assert r.method.startswith(
        "about these papers only: t interval on each paper's own spread of its runs (6 runs within 3 papers, "
        "2 df by Welch-Satterthwaite)"
    )
    # Papers like these (the default) spread far more: the paper means 0.2, 0.55, 0.85.
    assert mean_interval(papers, values, bounds=(0, 1)).method.startswith("about papers like these:")
    one_run = mean_interval(["a", "b", "c"], [0.1, 0.5, 0.9], population="these")
    assert one_run.low is None and "one run per paper" in one_run.warning
    # The paired test about these papers: the t statistic on the pairs' spread within papers.
    rng = np.random.default_rng(1)
    trees, d = [f"p{i}" for i in range(6) for _ in range(3)], list(rng.normal(0.05, 0.1, 18))
    fixed = paired_test(trees, d, population="these")
    groups = [d[3 * i : 3 * i + 3] for i in range(6)]
    terms = [np.var(g, ddof=1) / 3 / 36 for g in groups]
    se, df = math.sqrt(sum(terms)), int(sum(terms) ** 2 / sum(t * t / 2 for t in terms))
    assert fixed.se == pytest.approx(se) and fixed.estimate == pytest.approx(np.mean(d))
    assert fixed.p == pytest.approx(1 - stats.t_cdf_two_sided(np.mean(d) / se, df))
    assert fixed.method.startswith(
        "about these papers only: t test and interval on each paper's own spread of its pairs"
    )
    assert (fixed.low <= 0 <= fixed.high) == (fixed.p > 0.05)
    assert paired_test(trees, d).p_min == 2 / 2**6  # papers like these: six papers, 64 patterns


def test_paired_rows_below_30_papers_say_they_assume_symmetry():
    rng = np.random.default_rng(2)
    for n, warned in ((8, True), (13, True), (18, True), (29, True), (30, False), (40, False)):
        r = paired_test([f"p{i}" for i in range(n)], list(rng.normal(0, 0.1, n)))
        assert (r.warning is not None and "spread symmetrically" in r.warning) == warned, n
        assert r.low is not None  # the warning does not take the interval away


def test_the_symmetry_warning_stops_where_the_bench_measured_the_size_to_hold():
    """From SYMMETRY_PAPERS on, the paired test's size on the asymmetric null is within 1.5 points of
    5% at every paper count measured (studies/stats_sim.py --only asymmetry); at the count before, not."""
    import json

    rows = json.loads((ROOT / "studies" / "results" / "stats_sim.json").read_text())["asymmetry"]
    holds_from = min(r["papers"] for r in rows if all(q["size"] <= 0.065 for q in rows if q["papers"] >= r["papers"]))
    assert holds_from == stats.SYMMETRY_PAPERS


def test_equal_paper_means_up_to_rounding_give_no_zero_width_interval():
    """Paper means equal up to floating-point noise (a spread of about 1e-17, not exactly 0) printed
    a zero-width interval without a warning; the spread is now compared with the values' scale."""
    import numpy as np

    from inquitree import stats

    third = [0.1 + 0.2, 0.3, 0.30000000000000004, 0.3]  # equal, but for their last bits
    assert float(np.std(third, ddof=1)) != 0.0
    interval = stats.mean_interval(["a", "b", "c", "d"], third, bounds=(0, 1))
    assert interval.low is None and interval.high is None and "no spread" in (interval.warning or "")
    test = stats.paired_test(["a", "b", "c", "d", "e", "f"], [0.1 + 0.2] * 3 + [0.3] * 3)
    assert test.low is None and any("no spread" in w for w in (test.warning or "").split("; "))


def test_p_and_the_interval_agree_to_the_last_digit_when_differences_tie_at_zero():
    """With differences tied at 0 an interval end came out as -5e-18 and printed -0.00 beside
    p = 0.5: an end within the test's tolerance of 0 is 0, so 0 is inside the interval exactly
    when p is above 5%."""
    for n in range(6, 10):
        for k in range(1, n):
            for values in ([0.1], [0.1, -0.1], [0.2, 0.1]):
                d = [0.0] * (n - k) + [values[i % len(values)] for i in range(k)]
                r = paired_test([f"p{i}" for i in range(n)], d)
                for end in (r.low, r.high):
                    assert end is None or end == 0.0 or abs(end) > 1e-9, (d, r.low, r.high)
                if r.low is not None and r.high is not None:
                    assert (r.low <= 0.0 <= r.high) == (r.p > 0.05), (d, r.p, r.low, r.high)
                    assert f"{r.low:.2f}" != "-0.00" and f"{r.high:.2f}" != "-0.00"


def test_the_near_bound_warning_says_how_many_papers_reach_the_bound():
    """It said "which no paper reaches" when one did (fewer than a fifth at the bound)."""
    reached = mean_interval([f"p{i}" for i in range(10)], [1.0] + [0.97] * 9, bounds=(0, 1))
    assert reached.warning and "which 1 of the 10 papers reach" in reached.warning
    assert "no paper reaches" not in reached.warning
    none = mean_interval([f"p{i}" for i in range(10)], [0.96, 0.97, 0.98] * 3 + [0.99], bounds=(0, 1))
    assert none.warning and "which no paper reaches" in none.warning


def test_fixed_papers_give_each_paper_its_own_run_spread():
    """`--fixed-papers` with one erratic paper among eight: pooling the runs' spread gave it 7 df
    it did not have and held less often; each paper's own spread with Satterthwaite's df holds.
    Noisy papers that kept one run cannot show their spread: those rows are warned."""
    rng = np.random.default_rng(3)
    held = 0
    for _ in range(300):
        trees, d, truth = run_spread_campaign(rng, "one erratic paper", 8)
        r = paired_test(trees, d, population="these")
        held += r.low <= truth <= r.high
        assert r.warning is None
    assert held / 300 >= 0.92
    trees, d, _ = run_spread_campaign(rng, "noisy papers kept one run", 8)
    r = paired_test(trees, d, population="these")
    assert r.warning.startswith("2 of 8 papers have one pair: their spread cannot be estimated")
    assert mean_interval(trees, d, population="these").warning.startswith("2 of 8 papers have one run")
    # Two runs a paper: each paper's spread rests on one df, so a paper whose runs vary more than
    # the rest can look quiet (held 91.3-92.9% at 8-40 papers); every such row says so.
    trees, d, _ = run_spread_campaign(rng, "two runs, one erratic paper", 8)
    for r in (paired_test(trees, d, population="these"), mean_interval(trees, d, population="these")):
        assert "8 of 8 papers have two" in r.warning and "one degree of freedom" in r.warning


def test_from_30_papers_the_paired_test_holds_under_skew_and_reads_heavy_tails_as_symmetric():
    """From 30 papers the paired test is the sign-flip test and the bootstrap-t over papers at once
    (p the larger, the interval their union): log-normal null effects were rejected 8.9-11.1% by the
    sign flip alone, and the skew check that warned instead fired on 36-54% of symmetric t(3) nulls."""
    rng = np.random.default_rng(4)
    lognormal = [paired_test(*paired_campaign(rng, "paired-lognormal", 40)) for _ in range(150)]
    assert sum(r.p <= 0.05 for r in lognormal) / 150 <= 0.08
    assert all(r.warning is None and "bootstrap-t" in r.method for r in lognormal)
    d = np.array([-0.1] * 29 + [2.9])  # 30 papers, one carrying the whole effect
    r = paired_test([f"p{i}" for i in range(30)], list(d))
    alone = stats.sign_flip_p(d)
    assert r.p >= alone and r.p > 0.05 and r.low <= 0 <= r.high  # the test and its interval agree


def test_joint_ranks_say_their_condition_and_name_skewed_pairs():
    """Below 30 papers simultaneous rank intervals hold when each pair's differences are symmetric,
    and a table where some pair is shown apart says so; from 30 each pair's test has the bootstrap-t
    beside the sign flip, which holds under skew, and a pair whose gains come from a few papers is
    shown apart only when both tests find it; when no pair is shown apart every interval is every
    rank and nothing needs saying."""
    papers = [f"p{i}" for i in range(8)]
    base = np.linspace(0.2, 0.6, 8)
    agents = ["a"] * 8 + ["b"] * 8
    apart = rank_intervals(agents, papers * 2, list(base + 0.2) + list(base), simultaneous=True)
    assert apart[0].warning.startswith("8 papers: the rank intervals hold if each pair's differences spread")
    assert "spread symmetrically over papers" in apart[0].method
    together = rank_intervals(agents, papers * 2, list(base) + list(base[::-1]), simultaneous=True)
    assert [(r.low, r.high) for r in together] == [(1, 2), (1, 2)] and together[0].warning is None
    many = [f"p{i}" for i in range(40)]
    gains = np.array([0.05] * 36 + [1.0] * 4)  # b ahead on every paper, by far on four
    skewed = rank_intervals(["a"] * 40 + ["b"] * 40, many * 2, [0.5] * 40 + list(0.5 + gains), simultaneous=True)
    assert [(r.agent, r.low, r.high) for r in skewed] == [("a", 2, 2), ("b", 1, 1)] and skewed[0].warning is None
    assert "bootstrap-t over papers beside the sign flip" in skewed[0].method
    # A log-normal null draw (b's gains over a, mean 0 in truth): the sign flip alone calls a ahead
    # (p 0.019), the bootstrap-t beside it does not, and the ranks are not told apart.
    rng = np.random.default_rng(0)
    for _ in range(48):
        d = np.round(0.1 * (np.exp(rng.normal(0, 1, 40)) - np.exp(0.5)), 3)
    assert stats.sign_flip_p(d) <= 0.05
    null = rank_intervals(["a"] * 40 + ["b"] * 40, many * 2, [0.5] * 40 + list(0.5 + d), simultaneous=True)
    assert [(r.low, r.high) for r in null] == [(1, 2), (1, 2)]
    even = rank_intervals(["a"] * 40 + ["b"] * 40, many * 2, [0.5] * 40 + [0.6] * 20 + [0.7] * 20, simultaneous=True)
    assert even[0].warning is None


def test_fixed_paper_ranks_keep_the_papers():
    """About exactly these papers a rank interval does not resample papers: each agent's paper
    means are drawn from their runs' spread. Two agents apart by far more than their runs vary
    are certain; equal ones could be either; one run per paper gives no interval, with a warning."""
    rng = np.random.default_rng(6)
    papers = [f"p{i}" for i in range(6) for _ in range(3)]
    x = list(0.5 + rng.normal(0, 0.01, 18))
    y = list(0.3 + rng.normal(0, 0.01, 18))
    found = rank_intervals(["x"] * 18 + ["y"] * 18, papers * 2, x + y, population="these")
    assert [(r.agent, r.low, r.high) for r in found] == [("x", 1, 1), ("y", 2, 2)]
    assert found[0].method.startswith("about these papers only: each agent's rank interval on its own")
    z = list(0.5 + rng.normal(0, 0.01, 18))
    tied = rank_intervals(["x"] * 18 + ["z"] * 18, papers * 2, x + z, population="these")
    assert all((r.low, r.high) == (1, 2) for r in tied)
    for joint in (False, True):
        one = rank_intervals(
            ["x"] * 6 + ["y"] * 6, papers[::3] * 2, x[::3] + y[::3], population="these", simultaneous=joint
        )
        assert all(r.low is None and r.high is None for r in one)
        assert one[0].warning.startswith("one run per paper for every agent")
    joint = rank_intervals(
        ["x"] * 18 + ["y"] * 18 + ["z"] * 18, papers * 3, x + y + z, population="these", simultaneous=True
    )
    assert [(r.agent, r.low, r.high) for r in joint] == [("x", 1, 2), ("y", 3, 3), ("z", 1, 2)]


# -- prediction-powered inference ---------------------------------------------------------------
def test_prediction_powered_agrees_with_ppi_python():
    """studies/results/ppi_reference.json holds ppi_py's (the PPI++ authors' package) estimates on
    three seeded samples of independent items: with lambda fixed the two agree to rounding; tuned,
    they differ only in the variance of the predictions (ppi_py counts the labelled items' twice, in
    both of its sets), by under 0.001 here."""
    from inquitree.stats import prediction_powered

    ref = json.loads((ROOT / "studies" / "results" / "ppi_reference.json").read_text())
    assert len(ref["samples"]) == 3
    for sample in ref["samples"]:
        y, f, at = np.array(sample["y"]), np.array(sample["f"]), sample["labelled"]
        papers = [str(i) for i in range(len(y))]
        for lam in (0.0, 0.5, 1.0, None):
            mine = prediction_powered(papers, f, [papers[i] for i in at], f[at], y[at], lam=lam, draws=200)
            theirs = sample["ppi_py"]["tuned" if lam is None else str(lam)]
            assert mine.estimate == pytest.approx(theirs, abs=1e-3 if lam is None else 1e-12), (sample["right"], lam)


def test_prediction_powered_with_every_item_labelled_is_the_labels_mean_over_papers():
    """The estimand is the mean over papers of each paper's mean true value: papers of 3 and 30
    items weigh alike, and with every item labelled the judge's verdicts drop out."""
    from inquitree.stats import prediction_powered

    rng = np.random.default_rng(5)
    papers = ["a"] * 3 + ["b"] * 30 + ["c"] * 12 + ["d"] * 7
    y = rng.choice([0.0, 0.5, 1.0], size=len(papers))
    f = rng.choice([0.0, 0.5, 1.0], size=len(papers))  # a judge that says nothing
    found = prediction_powered(papers, f, papers, f, y)
    means = [y[np.array(papers) == p].mean() for p in "abcd"]
    assert found.estimate == pytest.approx(np.mean(means), abs=1e-12)
    assert found.low is not None and found.low <= found.estimate <= found.high
    assert found.papers == 4 and found.episodes == len(papers)


def test_prediction_powered_without_labels_says_so_and_with_a_useless_judge_is_the_labels_alone():
    from inquitree.stats import prediction_powered

    none = prediction_powered(["a", "b", "c"], [1, 0, 1], [], [], [])
    assert none.estimate is None and "no labelled item" in none.warning
    rng = np.random.default_rng(8)
    papers = [f"p{k}" for k in range(12) for _ in range(20)]
    y = (rng.random(len(papers)) < 0.3).astype(float)
    f = np.ones(len(papers))  # a constant judge carries no information: lambda is 0
    at = sorted(rng.choice(len(papers), 50, replace=False))
    found = prediction_powered(papers, f, [papers[i] for i in at], f[at], y[at])
    alone = prediction_powered(papers, f, [papers[i] for i in at], f[at], y[at], lam=0)
    assert "lambda 0.00" in found.method and found.estimate == pytest.approx(alone.estimate)
    few = prediction_powered(papers, f, [papers[i] for i in at[:5]], f[at[:5]], y[at[:5]])
    assert "only 5 labelled items" in few.warning


def test_the_failure_rules_simulation_is_what_the_statistics_page_shows():
    """docs/statistics.md shows studies/stats_sim.py's failures table as the study writes it, and its
    summary is the table's: left out, the failing agent ranks first; under the rule its interval holds."""
    import sys

    sys.path.insert(0, str(ROOT / "studies"))
    import stats_sim

    rows = json.loads((ROOT / "studies" / "results" / "stats_sim.json").read_text())["failures"]
    page = (ROOT / "docs" / "statistics.md").read_text()
    assert stats_sim.markdown({"failures": rows}).strip() in page
    said = " ".join(page.split())
    kept = [r for r in rows if r["rule"] == "complete case"]
    ruled = [r for r in rows if r["rule"] == "failure rule"]

    def span(rs, key):
        return f"{100 * min(r[key] for r in rs):.1f}-{100 * max(r[key] for r in rs):.1f}%"

    assert f"ranks first in {span(kept, 'b_first')} of campaigns" in said
    assert f"ability in {span(kept, 'b_holds')}" in said
    assert f"it ranks first in {span(ruled, 'b_first')}" in said
    assert f"holds its truth in {span(ruled, 'b_holds')}" in said
    assert min(r["b_holds"] for r in ruled) >= 0.93 and {r["campaigns"] for r in rows} == {500}


def test_a_steps_interval_never_passes_the_turn_limit():
    """Cox's interval on three papers' mean steps reached 619 on a metric that cannot pass 99 (the turn
    limit): with the ceiling given, over papers it is the bounded interval for a mean in [0, 99] (the
    one coverage takes in [0, 1]), says why, and keeps the papers' mean; over episodes it is cut at 99."""
    means = np.array([20.0, 95.0, 30.0])
    free = stats.interval_of_means(means, 3, (0.0, None))
    capped = stats.interval_of_means(means, 3, (0.0, None), ceiling=99)
    bounded = stats.interval_of_means(means, 3, (0.0, 99.0))
    assert free.high > 99 and capped.high <= 99 and capped.estimate == free.estimate == means.mean()
    assert (capped.low, capped.high) == (bounded.low, bounded.high)
    assert capped.method.startswith(bounded.method) and "99 the largest mean the turn limits allow" in capped.method
    assert stats.interval_of_means(means, 3, (0.0, None), ceiling=10_000) == free  # far below: unchanged
    episodes = stats.interval_of_means(means, 3, (0.0, None), unit="episode", ceiling=99)
    assert episodes.high == 99 and episodes.low == free.low and "cut at 99" in episodes.method
    # Papers at the limit (episodes the turn limit stopped): the interval stays inside [0, 99].
    at_limit = stats.interval_of_means(np.array([99.0, 99.0, 60.0, 80.0]), 4, (0.0, None), ceiling=99)
    assert at_limit.low is not None and at_limit.high is not None and 0 <= at_limit.low < at_limit.high <= 99


def test_the_warehouse_functions_cut_steps_intervals_at_the_turn_limit():
    """The SQL functions steps_bounds (unit_mean_ci, episodes of one tree) and compare (capped_mean_ci,
    papers) call, given the rows' turn limit."""
    import pyarrow as pa

    from inquitree.warehouse.intervals import Settings

    s = Settings()
    row = s.unit_mean(pa.array([20.0, 95.0, 30.0]), 0.0, None, 99.0)
    assert row["ci_high"] == 99.0
    row = s.capped_mean(pa.array(["a", "b", "c"]), pa.array([20.0, 95.0, 30.0]), 99.0)
    assert row["ci_high"] <= 99.0 and "turn limits" in row["method"]
    # About these papers only (--fixed-papers) the runs' spread gives the interval; it too stops there.
    fixed = s.about("these").capped_mean(pa.array(["a", "a", "b", "b"]), pa.array([90.0, 20.0, 95.0, 30.0]), 99.0)
    assert fixed["ci_high"] == 99.0 and "turn limits" in fixed["method"]
    assert s.about("these").capped_mean(pa.array(["a", "a"]), pa.array([20.0, 22.0]), 99.0)["ci_high"] < 99


def test_no_rank_interval_where_the_means_have_none():
    """Two papers: the means printed [no interval] beside `rank 1 [1, 1]`, a certainty they refused.
    A lone agent's rank is 1 whatever the papers."""
    found = stats.rank_intervals(["a", "a", "b", "b"], ["p1", "p2", "p1", "p2"], [0.9, 0.8, 0.1, 0.2])
    assert [(r.agent, r.rank, r.low, r.high) for r in found] == [("a", 1, None, None), ("b", 2, None, None)]
    assert "no rank interval below 3 papers" in found[0].warning
    (alone,) = stats.rank_intervals(["a", "a"], ["p1", "p2"], [0.9, 0.8])
    assert (alone.rank, alone.low, alone.high) == (1, 1, 1)


def test_joint_ranks_say_when_no_pair_can_be_separated_at_these_papers():
    # 15 agents, 105 pairs: Holm's first threshold is 0.05 / 105 = 0.000476, and 12 papers give at
    # best p = 2 / 2^12 = 0.000488, so no pair can be told apart whatever the data; 13 papers can.
    rng = np.random.default_rng(3)
    for papers, can in ((12, False), (13, True)):
        names = [f"p{i}" for i in range(papers)]
        agents = [f"a{k:02d}" for k in range(15) for _ in names]
        values = list(rng.uniform(0, 1, 15 * papers))
        joint = rank_intervals(agents, names * 15, values, simultaneous=True)
        said = [r.warning or "" for r in joint]
        assert all(("no pair of the 15 agents can be told apart" in w) != can for w in said), (papers, said[0])
    # Two agents at 5 papers: p can be no smaller than 2/32 = 0.0625, said the same way.
    few = rank_intervals(
        ["a"] * 5 + ["b"] * 5, [f"p{i}" for i in range(5)] * 2, [0.9] * 5 + [0.1] * 5, simultaneous=True
    )
    assert "no pair of the 2 agents can be told apart" in few[0].warning
    assert "0.0625" in few[0].warning and "0.05" in few[0].warning


def test_each_agents_rank_set_spans_a_tie_as_often_as_it_claims():
    # 15 agents equal in truth: each agent's interval holds only when it spans every rank. The
    # resampled percentile intervals did so for about 5% of agents; the marginal rank sets
    # (Mogstad, Romano, Shaikh and Zhu) test the agent against each other one with Holm's
    # adjustment over its 14 pairs, so each spans the tie at least 95% of the time.
    from campaignsim import equal_agents

    rng = np.random.default_rng(11)
    spans = []
    for _ in range(30):
        agents, trees, values = equal_agents(rng, 15, 18)
        spans += [(r.low, r.high) == (1, 15) for r in rank_intervals(agents, trees, values)]
    assert np.mean(spans) >= 0.9
    found = rank_intervals(agents, trees, values)
    assert found[0].method.startswith("each agent's rank set on its own: the paired sign-flip test of it against")
    # Agents clearly apart keep their single ranks: b is tested against a and c (Holm over 2).
    papers = [f"p{i}" for i in range(8)]
    base = np.linspace(0.2, 0.6, 8)
    apart = rank_intervals(
        ["a"] * 8 + ["b"] * 8 + ["c"] * 8, papers * 3, list(base + 0.2) + list(base + 0.1) + list(base)
    )
    assert [(r.low, r.high) for r in apart] == [(1, 1), (2, 2), (3, 3)]


def test_relative_change_is_fiellers_interval_and_says_when_it_is_unbounded():
    # Four papers, baseline means y = (0.2, 0.3, 0.1, 0.4), level a x = (0.3, 0.4, 0.2, 0.5):
    # ratio 1.4/1.0, change +40%. Fieller: (xbar - t ybar)^2 <= t^2 var(xbar - t ybar), solved
    # by hand below with the same moments.
    y, x = np.array([0.2, 0.3, 0.1, 0.4]), np.array([0.3, 0.4, 0.2, 0.5])
    trees = [f"p{i}" for i in range(4)] * 2
    r = stats.relative_change(trees, list(y) + list(x), [True] * 4 + [False] * 4)
    assert r.estimate == pytest.approx(40.0)
    q = stats.t_quantile(0.975, 3)
    vxx, vyy, vxy = x.var(ddof=1) / 4, y.var(ddof=1) / 4, np.cov(x, y)[0, 1] / 4
    a, b, c = y.mean() ** 2 - q * q * vyy, x.mean() * y.mean() - q * q * vxy, x.mean() ** 2 - q * q * vxx
    roots = sorted(((b - math.sqrt(b * b - a * c)) / a, (b + math.sqrt(b * b - a * c)) / a))
    assert (r.low, r.high) == (pytest.approx(100 * (roots[0] - 1)), pytest.approx(100 * (roots[1] - 1)))
    assert r.method.startswith("about papers like these: Fieller's interval for the ratio of the mean")
    # A baseline that its own interval cannot tell from 0: no bounded interval, and the row says so.
    y = np.array([0.0, 0.0, 0.3, 0.0, 0.0])
    r = stats.relative_change([f"p{i}" for i in range(5)] * 2, list(y) + [0.2] * 5, [True] * 5 + [False] * 5)
    assert r.low is None and r.high is None and r.estimate == pytest.approx(100 * (0.2 / 0.06 - 1))
    assert "unbounded" in r.warning and "level-0 frequency" in r.warning
    # Levels equal on every paper (a seeded agent the fakes did not move): no zero-width interval.
    same = stats.relative_change([f"p{i}" for i in range(4)] * 2, [0.2, 0.1, 0.3, 0.4] * 2, [True] * 4 + [False] * 4)
    assert same.estimate == 0 and same.low is None and "no spread" in same.warning


def test_relative_change_interval_holds_on_simulated_redo_campaigns():
    # A few cells of studies/stats_sim.py's "change" part: coverage near 95% where the interval is
    # bounded, and the unbounded ones are the warned ones.
    from campaignsim import redo_campaign

    rng = np.random.default_rng(5)
    held = bounded = 0
    for _ in range(200):
        trees, f, base, truth = redo_campaign(rng, "baseline 0.20, +50%", 12)
        r = stats.relative_change(trees, f, base)
        if r.low is not None:
            bounded += 1
            held += r.low <= truth <= r.high
        else:
            assert r.warning
    assert bounded >= 190 and held / bounded >= 0.9


def test_run_effect_is_a_permutation_test_of_runs_within_papers():
    # Every paper's run 1 is 0.2 above its run 0: the runs differ beyond what papers allow, and the
    # test (run labels permuted within each paper) says so; without the shift it does not.
    rng = np.random.default_rng(2)
    papers = [f"p{i}" for i in range(12) for _ in range(2)]
    runs = ["0", "1"] * 12
    base = np.repeat(rng.normal(0.5, 0.15, 12), 2) + rng.normal(0, 0.03, 24)
    shifted = stats.run_effect(papers, runs, list(base + np.tile([0.0, 0.2], 12)))
    assert shifted.p <= 0.001 and (shifted.runs, shifted.papers) == (2, 12)
    assert shifted.method.startswith("run effect: the spread of the 2 runs' means, their labels permuted within each")
    assert stats.run_effect(papers, runs, list(base)).p > 0.05
    # One run, or no paper with every run: nothing to test.
    assert stats.run_effect(papers[::2], runs[::2], list(base[::2])) is None
    # Size: with no run effect the test rejects about 5% of the time.
    rejected = sum(
        stats.run_effect(
            papers, runs, list(np.repeat(rng.normal(0.5, 0.15, 12), 2) + rng.normal(0, 0.05, 24)), seed=k
        ).p
        <= 0.05
        for k in range(200)
    )
    assert 2 <= rejected <= 20


def test_the_warehouse_tests_runs_and_warns_when_they_differ(tmp_path):
    """run_effect and run_effect_said, the SQL the leaderboard calls on each agent's cells."""
    from inquitree.warehouse.warehouse import Warehouse

    rng = np.random.default_rng(4)
    base = rng.normal(0.5, 0.15, 12)
    rows = ", ".join(
        f"('p{i}', 'r{r}', {min(1.0, max(0.0, base[i] + 0.2 * r + rng.normal(0, 0.02))):.6f})"
        for i in range(12)
        for r in range(2)
    )
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        found = wh.sql(
            f"SELECT run_effect(list(t), list(r), list(v)) AS re, run_effect_said(re) AS said, "
            f"run_effect(list(t), list('r0'), list(v)) AS one FROM (VALUES {rows}) cells(t, r, v)"
        ).to_dicts()[0]
    assert found["re"]["p"] <= 0.001 and (found["re"]["runs"], found["re"]["papers"]) == (2, 12)
    assert found["said"].startswith("the 2 runs differ beyond what the 12 papers allow (run effect p ")
    assert (
        f"over runs as well as papers like these it is [{found['re']['low']:.2f}, {found['re']['high']:.2f}]"
        in (found["said"])
    )
    assert found["one"] is None
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:  # runs alike: the interval over runs is still given
        said = wh.sql(
            "SELECT run_effect_said(run_effect(['a', 'a', 'b', 'b', 'c', 'c'], ['r0', 'r1', 'r0', 'r1', 'r0', 'r1'], "
            "[0.5, 0.52, 0.3, 0.29, 0.7, 0.71])) AS said"
        ).item()
    assert said.startswith("the interval is for papers like these played in these 2 runs; over runs like these")


def test_the_interval_over_runs_adds_each_parts_own_t_interval():
    # Papers x runs [[0.2, 0.4], [0.5, 0.5], [0.8, 0.9]]: paper means 0.3, 0.5, 0.85 (SD 0.2784),
    # run means 0.5, 0.6 (SD 0.0707); each part's t at 1 - 0.05 / 4 on 2 and 1 degrees of freedom.
    grid = np.array([[0.2, 0.4], [0.5, 0.5], [0.8, 0.9]])
    half = stats.t_quantile(0.9875, 2) * 0.2783882181415011 / 3**0.5 + stats.t_quantile(0.9875, 1) * 0.05
    low, high = stats.runs_interval(grid)
    assert (low, high) == pytest.approx((0.55 - half, 0.55 + half), abs=1e-9)
    assert stats.runs_interval(grid, (0.0, 1.0)) == (0.0, 1.0)  # two runs 0.1 apart: 12.7 x 0.05 each side
    found = stats.run_effect(["p0", "p0", "p1", "p1", "p2", "p2"], ["0", "1"] * 3, list(grid.ravel()), bounds=None)
    assert (found.low, found.high) == pytest.approx((low, high))


def test_episodes_of_a_paper_that_share_a_seed_are_said_to(tmp_path):
    """shared_seeds_said: pooled suites that reuse seeds draw the same fakes on a paper and make a
    seeded agent's same choices, at every level."""
    from inquitree.warehouse.warehouse import Warehouse

    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        said = wh.sql(
            "SELECT shared_seeds_said(['a', 'a', 'b', 'b'], [1, 1, 1, 2]) AS twice, "
            "shared_seeds_said(['a', 'a', 'b'], [1, 2, 1]) AS apart"
        ).to_dicts()[0]
    assert said["twice"].startswith("1 of 4 episodes repeat the seed of another episode of the same paper")
    assert said["apart"] is None


def test_a_pooled_rate_gets_fiellers_interval_on_the_papers_totals():
    # Papers' (spotted, shown): (1, 2), (3, 4), (0, 1), (2, 2), (1, 3): rate 7 / 12. Fieller on the
    # totals' means with their variances and covariance over the 5 papers, solved by hand.
    x, y = np.array([1.0, 3, 0, 2, 1]), np.array([2.0, 4, 1, 2, 3])
    r = stats.pooled_rate([f"p{i}" for i in range(5)], list(x), list(y))
    assert r.estimate == pytest.approx(7 / 12)
    q = stats.t_quantile(0.975, 4)
    vxx, vyy, vxy = x.var(ddof=1) / 5, y.var(ddof=1) / 5, np.cov(x, y)[0, 1] / 5
    a, b, c = y.mean() ** 2 - q * q * vyy, x.mean() * y.mean() - q * q * vxy, x.mean() ** 2 - q * q * vxx
    root = math.sqrt(b * b - a * c)
    assert (r.low, r.high) == (pytest.approx(max(0.0, (b - root) / a)), pytest.approx(min(1.0, (b + root) / a)))
    assert r.method.startswith("about papers like these: Fieller's interval for the pooled rate (sum over sum")
    assert "12 counted in all" not in (r.warning or "")  # 5 papers, 12 counted: not warned
    # Few fakes shown in all: the interval held less than 95% there, and the row says so.
    few = stats.pooled_rate(["a", "b", "c", "d"], [1, 0, 1, 0], [1, 1, 2, 1])
    assert "4 of 4 papers have a denominator, 5 counted in all" in few.warning


def test_pooled_rates_hold_on_simulated_fig3c_campaigns_without_warning_most_of_them():
    """A few cells of studies/stats_sim.py's "pooled" part: at a = 1 the old 0/1 warning fired on
    nearly every row; the rows now unwarned hold."""
    from campaignsim import fake_spotting_campaign

    rng = np.random.default_rng(8)
    held = unwarned = 0
    for _ in range(200):
        trees, spotted, shown, truth = fake_spotting_campaign(rng, 12, 1)
        r = stats.pooled_rate(trees, spotted, shown)
        if r.warning is None and r.low is not None:
            unwarned += 1
            held += r.low <= truth <= r.high
    assert unwarned >= 150 and held / unwarned >= 0.9


def test_the_statistics_page_shows_the_new_designs_as_the_study_wrote_them():
    """docs/statistics.md carries studies/stats_sim.py's tables for tied agents, Fig. 3b and 3c,
    shared run shocks and the power plans as the study writes them, and its text their ranges."""
    import sys

    sys.path.insert(0, str(ROOT / "studies"))
    import stats_sim

    result = json.loads((ROOT / "studies" / "results" / "stats_sim.json").read_text())
    page = (ROOT / "docs" / "statistics.md").read_text()
    said = " ".join(page.split())
    for key in (
        "tied_agents",
        "steps_range",
        "change",
        "pooled",
        "run_shocks",
        "shared_seeds",
        "plans",
        "skewed_null",
        "fixed_spread",
    ):
        part = {k: v for k, v in result.items() if k in (key, f"prior_{key}")}
        assert stats_sim.markdown(part).strip() in page, key

    def span(rows, key):
        return f"{100 * min(r[key] for r in rows):.1f}-{100 * max(r[key] for r in rows):.1f}%"

    assert f"spanned the tie in {span(result['tied_agents'], 'each_holds_lowest')[:-1].split('-')[0]}-100%" in said
    bounded = [r for r in result["change"] if r["coverage"] is not None]
    assert f"Bounded, it held {span(bounded, 'coverage')}" in said
    assert f"It held {span(result['pooled'], 'coverage')} on simulated Fig. 3c" in said
    shocked = [r for r in result["run_shocks"] if r["shock"] > 0]
    assert f"leaves unwarned hold only {span(shocked, 'coverage_unwarned')}" in said
    assert f"every multi-run row gives holds {span(result['run_shocks'], 'runs_coverage')} in every cell" in said
    assert min(r["runs_coverage"] for r in result["run_shocks"]) >= 0.95
    # The interval over papers holds for what its row says it is for: papers like these in these runs.
    assert f"as its row says, in {span(shocked, 'these_runs_coverage')} of campaigns" in said
    assert min(r["these_runs_coverage"] for r in result["run_shocks"]) >= 0.93
    repeated = [r for r in result["shared_seeds"] if r["repeated_seed"]]
    assert f"`--fixed-papers` holds {span(repeated, 'fixed_holds')}" in said
    assert all(r["warned"] == 1.0 for r in repeated) and not any(r["warned"] for r in result["shared_seeds"][:3])
    assert min(r["coverage_unwarned"] for r in result["pooled"]) >= 0.93
    nulls = [r for r in result["skewed_null"] if r["design"] == "paired-lognormal"]
    assert f"Together they rejected {span(nulls, 'size')} of the log-normal nulls" in said
    assert max(r["size"] for r in result["skewed_null"]) <= 0.065


def test_the_steps_study_holds_in_every_cell():
    """studies/stats_sim.py's steps designs (turn limit 99, 3-12 papers): the printed interval holds
    in every cell, where the log-scale interval's upper end passed the limit in most small ones."""
    rows = json.loads((ROOT / "studies" / "results" / "stats_sim.json").read_text())["steps_range"]
    assert {r["papers"] for r in rows} == {3, 5, 8, 12} and {r["campaigns"] for r in rows} == {2000}
    assert min(r["coverage"] for r in rows) >= 0.93
    assert max(r["unbounded_past_limit"] for r in rows if r["papers"] == 3) > 0.9
