"""The interval method of warehouse/bootstrap.py against cases worked out by hand and against
known analytic intervals (docs/DECISIONS.md #25)."""

from __future__ import annotations

import numpy as np
import pytest

from inquitree.warehouse.bootstrap import Bootstrap


def test_two_papers_one_episode_each_by_hand():
    # The bootstrap itself (t_below=0 keeps it at any size): a resample draws the two papers'
    # values with replacement: mean 0 (1/4), 0.5 (1/2), 1 (1/4). SD of that distribution:
    # sqrt(1/8) = 0.3536; its 2.5% and 97.5% points: 0 and 1.
    r = Bootstrap(resamples=40_000, seed=3, t_below=0).mean(["a", "b"], [0.0, 1.0])
    assert r["estimate"] == 0.5 and (r["papers"], r["episodes"]) == (2, 2)
    assert abs(r["se"] - 8**-0.5) < 0.005
    assert (r["ci_low"], r["ci_high"]) == (0.0, 1.0)
    # What a row says by default (#25 as revised): the t interval on the paper means, flagged.
    # sd(0, 1) / sqrt(2) = 0.5; t_{1, 0.975} = 12.7062: 0.5 +- 6.3531.
    r = Bootstrap().mean(["a", "b"], [0.0, 1.0])
    assert r["method"] == "too few papers (2): t interval over 2 papers (1 df, jackknife standard error)"
    assert r["se"] == pytest.approx(0.5) and r["ci_low"] == pytest.approx(0.5 - 12.7062 * 0.5, abs=1e-3)


def test_few_papers_get_the_t_interval_on_paper_means():
    # Three papers with means 0.2 (two episodes, 0.1 and 0.3), 0.5 and 0.9: the estimate is the
    # mean of paper means 0.5333, the SE sd(0.2, 0.5, 0.9) / sqrt(3) = 0.35119 / 1.73205 = 0.20276,
    # and the interval +- t_{2, 0.975} = 4.30265 times that.
    r = Bootstrap().mean(["a", "a", "b", "c"], [0.1, 0.3, 0.5, 0.9])
    assert r["estimate"] == pytest.approx(0.533333, abs=1e-6) and r["se"] == pytest.approx(0.20276, abs=1e-5)
    assert r["ci_high"] - r["estimate"] == pytest.approx(4.30265 * 0.20276, abs=1e-4)
    assert r["method"] == "t interval over 3 papers (2 df, jackknife standard error)"
    # From 8 papers on, the cluster bootstrap with the expanded percentile.
    eight = Bootstrap().mean([f"p{i}" for i in range(8)], [i / 10 for i in range(8)])
    assert (
        eight["method"].startswith("cluster bootstrap, trees only") and "expanded percentile for 8" in eight["method"]
    )
    # Student's t quantiles, from the closed-form CDF (tables: 12.706, 4.303, 2.776, 2.447, 2.110).
    from inquitree.warehouse.bootstrap import t_quantile

    for df, q in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (6, 2.4469), (17, 2.1098)):
        assert t_quantile(0.975, df) == pytest.approx(q, abs=1e-4)


def test_within_paper_resampling_by_hand():
    # One paper, two episodes 0 and 1: episodes alone are resampled, same distribution as above.
    r = Bootstrap(resamples=40_000, seed=3).mean(["a", "a"], [0.0, 1.0])
    assert r["method"].startswith("too few papers (1): one paper: its units only")
    assert abs(r["se"] - 8**-0.5) < 0.005
    # Two papers, each with episodes {0, 1}. Trees only (the default): both papers' means are
    # 0.5, so every resample's mean is 0.5 and the SE is 0.
    two = (["a", "a", "b", "b"], [0.0, 1.0, 0.0, 1.0])
    r = Bootstrap(resamples=40_000, seed=3, t_below=0).mean(*two)
    assert r["method"].startswith("cluster bootstrap, trees only") and r["se"] == 0.0
    # Two-level (trees, then episodes): each tree copy's mean is 0, 0.5 or 1 with 1/4, 1/2, 1/4
    # (variance 1/8); the mean of two independent copies has variance 1/16: SE 0.25.
    r = Bootstrap(resamples=40_000, seed=3, within=True, t_below=0).mean(*two)
    assert abs(r["se"] - 0.25) < 0.004


def test_mean_of_paper_means_not_of_episodes():
    # Paper a has three episodes at 1, paper b one at 0: the estimate weighs papers, not episodes.
    r = Bootstrap().mean(["a", "a", "a", "b"], [1.0, 1.0, 1.0, 0.0])
    assert r["estimate"] == 0.5 and (r["papers"], r["episodes"]) == (2, 4)


def test_one_paper_matches_the_normal_interval():
    rng = np.random.default_rng(7)
    x = rng.normal(10.0, 2.0, 900)
    r = Bootstrap(resamples=20_000, seed=1).mean(["t"] * len(x), list(x))
    se = x.std() / len(x) ** 0.5  # the bootstrap's SE is the plug-in SD / sqrt(n)
    assert abs(r["se"] - se) / se < 0.03
    assert abs(r["ci_low"] - (x.mean() - 1.96 * se)) < 0.1 * se
    assert abs(r["ci_high"] - (x.mean() + 1.96 * se)) < 0.1 * se


def test_balanced_design_matches_the_bootstrap_variances():
    # T papers, m episodes each, values with paper effects. Resampling papers only, the variance
    # of the mean of paper means is ((T-1)/T) s_b^2 / T; the two-stage bootstrap adds
    # ((m-1)/m) mean(s_w^2) / (m T) (Davison & Hinkley 1997, Sec. 3.8), where s_b^2 is the
    # sample variance of the paper means and s_w^2 each paper's within variance.
    rng = np.random.default_rng(11)
    t, m = 12, 5
    effects = rng.normal(0, 1, t)
    values = np.concatenate([e + rng.normal(0, 0.5, m) for e in effects])
    trees = [f"p{i}" for i in range(t) for _ in range(m)]
    means = values.reshape(t, m).mean(axis=1)
    s_b = means.var(ddof=1)
    s_w = values.reshape(t, m).var(axis=1, ddof=1).mean()
    trees_only = Bootstrap(resamples=40_000, seed=2).mean(trees, list(values))
    expected = ((t - 1) / t * s_b / t) ** 0.5
    assert abs(trees_only["se"] - expected) / expected < 0.03
    two_level = Bootstrap(resamples=40_000, seed=2, within=True).mean(trees, list(values))
    expected = ((t - 1) / t * s_b / t + (m - 1) / m * s_w / (m * t)) ** 0.5
    assert abs(two_level["se"] - expected) / expected < 0.03


def test_expanded_percentile_tails():
    # Hesterberg's expanded percentile: tails at Phi(-sqrt(n/(n-1)) t_{n-1, 0.975}). For n = 18,
    # t_17 = 2.1098 (tables), times sqrt(18/17) = 2.1710, Phi(-2.1710) = 0.01497.
    from inquitree.warehouse.bootstrap import expanded_tail

    assert abs(expanded_tail(18) - 0.01497) < 0.0002
    # n = 10: t_9 = 2.2622, times sqrt(10/9) = 2.3846, Phi(-2.3846) = 0.00855.
    assert abs(expanded_tail(10) - 0.00855) < 0.0003
    assert abs(expanded_tail(10_000) - 0.025) < 0.0002  # many units: the plain percentile


def test_pooled_ratio_and_relative_change_by_hand():
    # Pooled: (1 + 0 + 1) / (2 + 1 + 1) = 0.5.
    assert Bootstrap().ratio(["a", "a", "b"], [1, 0, 1], [2, 1, 1])["estimate"] == 0.5
    # Baseline per-paper means: a 0.2, b 0.1 -> 0.15; other level: a 0.4, b 0.3 -> 0.35;
    # change 100 (0.35 - 0.15) / 0.15 = 133.33. Resampled: both papers a -> +100%, both b ->
    # +200%, one of each -> +133%: the interval's ends are exactly 100 and 200.
    two = (["a", "a", "b", "b"], [0.2, 0.4, 0.1, 0.3], [True, False, True, False])
    r = Bootstrap(resamples=20_000, t_below=0).change(*two)
    assert r["estimate"] == pytest.approx(133.333333) and (r["ci_low"], r["ci_high"]) == (100.0, 200.0)
    # By default, two papers: leave-one-out changes +100 (b alone) and +200 (a alone), jackknife SE
    # sqrt(1/2 x (50^2 + 50^2)) = 50, and +- t_{1, 0.975} x 50.
    r = Bootstrap().change(*two)
    assert r["se"] == pytest.approx(50.0) and r["ci_high"] == pytest.approx(133.333333 + 12.7062 * 50, abs=0.01)
    # No baseline above zero: undefined, not infinite.
    assert Bootstrap().change(["a", "a"], [0.0, 0.4], [True, False])["estimate"] is None


def test_same_seed_same_interval_and_nulls_left_out():
    args = (["a", "b", "c", "a", None], [0.1, 0.5, 0.9, 0.3, 7.0])
    one, two = Bootstrap(seed=5).mean(*args), Bootstrap(seed=5).mean(*args)
    assert one == two and one["episodes"] == 4
    single = Bootstrap().mean(["a"], [0.4])
    assert single["estimate"] == 0.4 and single["se"] is None and "one episode" in single["method"]
    assert Bootstrap().mean([None], [None]) is None


def test_settings_from_the_environment(monkeypatch):
    monkeypatch.setenv("INQUITREE_BOOTSTRAP_RESAMPLES", "500")
    monkeypatch.setenv("INQUITREE_BOOTSTRAP_SEED", "9")
    assert Bootstrap.from_env() == Bootstrap(500, 9)
    monkeypatch.setenv("INQUITREE_BOOTSTRAP_SCHEME", "two-level")
    assert Bootstrap.from_env() == Bootstrap(500, 9, within=True, expanded=False)
    monkeypatch.setenv("INQUITREE_BOOTSTRAP_SCHEME", "three-level")
    with pytest.raises(ValueError, match="expected trees or two-level"):
        Bootstrap.from_env()
    monkeypatch.delenv("INQUITREE_BOOTSTRAP_SCHEME")
    monkeypatch.setenv("INQUITREE_BOOTSTRAP_RESAMPLES", "ten")
    with pytest.raises(ValueError, match="INQUITREE_BOOTSTRAP_RESAMPLES='ten'"):
        Bootstrap.from_env()


def test_null_lists_are_empty_groups():
    # list(...) FILTER (WHERE ...) over no matching row is NULL, not an empty list.
    assert Bootstrap().mean(None, None) is None
    assert Bootstrap().ratio(["a"], None, [1.0]) is None
    assert Bootstrap().sign_flip_p(None, None) is None


# -- coverage and size on simulated campaigns whose truth is known (tests/campaignsim.py) -------------
@pytest.mark.parametrize(
    "name,campaigns",
    [
        ("2 papers, 3 runs", 2000),
        ("3 papers, 3 runs", 2000),
        ("5 papers, 3 runs", 2000),
        ("3 papers, 1-6 runs (unbalanced)", 2000),
        ("10 papers, 1-6 runs (unbalanced)", 1000),
        ("IT-18-like, within-paper spread dominates", 1000),
    ],
)
def test_a_95_percent_interval_covers_95_percent(name, campaigns):
    """#25 as revised: few papers get the t interval on paper means (a percentile bootstrap over 2,
    3 and 5 papers covered 48%, 73% and 91%); balanced, unbalanced, few or many papers, the
    interval that says 95% covers the true mean 93-97% of the time."""
    from campaignsim import DESIGNS, coverage

    (design,) = [d for d in DESIGNS if d.name == name]
    share, _ = coverage(Bootstrap(), design, campaigns)
    assert 0.93 <= share <= 0.97, f"{name}: {share:.3f}"


def test_skewed_paper_means_are_covered_less_often_as_documented():
    """Strongly skewed paper means (log-normal, sigma 1) are the known weak spot of every interval
    tried here (README, bench/results/intervals_coverage.json): 10 papers covered 87%. The test
    pins that it stays where the README says, so a change for the worse shows up."""
    from campaignsim import DESIGNS, coverage

    (design,) = [d for d in DESIGNS if d.name == "10 papers, skewed paper means (log-normal)"]
    share, _ = coverage(Bootstrap(), design, 1000)
    assert 0.84 <= share <= 0.92, share


@pytest.mark.parametrize("name", ["10 papers, 3 pairs each", "18 papers, 1-6 pairs each (unbalanced)"])
def test_the_paired_test_rejects_a_true_null_5_percent_of_the_time(name):
    """#26 as revised: papers differ in their true difference, the mean difference is 0. Flipping
    the signs of papers' mean differences rejects at 5% +- 2%; flipping single pairs (the run as
    the unit, as before) rejected in 18-26% of such campaigns, and does here too."""
    from campaignsim import PAIRED_DESIGNS, pair_level_flips, paired_rejections

    (design,) = [d for d in PAIRED_DESIGNS if d.name == name]
    size = paired_rejections(Bootstrap().sign_flip_p, design, 2000)
    assert 0.03 <= size <= 0.07, f"{name}: {size:.3f}"
    assert paired_rejections(pair_level_flips(), design, 300) > 0.15
    # With 3 papers no outcome reaches 5%: the smallest p is 2 / 2^3 = 0.25.
    assert Bootstrap().sign_flip_p(["a", "b", "c"], [1.0, 2.0, 3.0]) == 0.25
