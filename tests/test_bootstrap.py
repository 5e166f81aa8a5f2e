"""The interval method of warehouse/bootstrap.py against cases worked out by hand and against
known analytic intervals (docs/DECISIONS.md #25)."""

from __future__ import annotations

import numpy as np
import pytest

from inquitree.warehouse.bootstrap import Bootstrap


def test_two_papers_one_episode_each_by_hand():
    # A resample draws the two papers' values with replacement: mean 0 (1/4), 0.5 (1/2), 1 (1/4).
    # SD of that distribution: sqrt(1/8) = 0.3536; its 2.5% and 97.5% points: 0 and 1.
    r = Bootstrap(resamples=40_000, seed=3).mean(["a", "b"], [0.0, 1.0])
    assert r["estimate"] == 0.5 and (r["papers"], r["episodes"]) == (2, 2)
    assert abs(r["se"] - 8**-0.5) < 0.005
    assert (r["ci_low"], r["ci_high"]) == (0.0, 1.0)


def test_within_paper_resampling_by_hand():
    # One paper, two episodes 0 and 1: episodes alone are resampled, same distribution as above.
    r = Bootstrap(resamples=40_000, seed=3).mean(["a", "a"], [0.0, 1.0])
    assert r["method"].startswith("one paper: its units only")
    assert abs(r["se"] - 8**-0.5) < 0.005
    # Two papers, each with episodes {0, 1}. Trees only (the default): both papers' means are
    # 0.5, so every resample's mean is 0.5 and the SE is 0.
    two = (["a", "a", "b", "b"], [0.0, 1.0, 0.0, 1.0])
    r = Bootstrap(resamples=40_000, seed=3).mean(*two)
    assert r["method"].startswith("cluster bootstrap, trees only") and r["se"] == 0.0
    # Two-level (trees, then episodes): each tree copy's mean is 0, 0.5 or 1 with 1/4, 1/2, 1/4
    # (variance 1/8); the mean of two independent copies has variance 1/16: SE 0.25.
    r = Bootstrap(resamples=40_000, seed=3, within=True).mean(*two)
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
    r = Bootstrap(resamples=20_000).change(["a", "a", "b", "b"], [0.2, 0.4, 0.1, 0.3], [True, False, True, False])
    assert r["estimate"] == pytest.approx(133.333333) and (r["ci_low"], r["ci_high"]) == (100.0, 200.0)
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
