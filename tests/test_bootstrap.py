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
    # Two papers, each with episodes {0, 1}: trees then episodes. Each tree copy's mean is 0,
    # 0.5 or 1 with 1/4, 1/2, 1/4 (variance 1/8); the mean of two independent copies has
    # variance 1/16 whichever trees were drawn (they are alike): SE 0.25.
    r = Bootstrap(resamples=40_000, seed=3).mean(["a", "a", "b", "b"], [0.0, 1.0, 0.0, 1.0])
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


def test_balanced_two_level_design_matches_its_variance():
    # T papers, m episodes each, values with paper effects: the two-stage bootstrap variance of
    # the mean of paper means is ((T-1)/T) s_b^2 / T + ((m-1)/m) mean(s_w^2) / (m T) (Davison &
    # Hinkley 1997, Sec. 3.8), where s_b^2 is the sample variance of the paper means and s_w^2
    # each paper's within variance.
    rng = np.random.default_rng(11)
    t, m = 12, 5
    effects = rng.normal(0, 1, t)
    values = np.concatenate([e + rng.normal(0, 0.5, m) for e in effects])
    trees = [f"p{i}" for i in range(t) for _ in range(m)]
    r = Bootstrap(resamples=40_000, seed=2).mean(trees, list(values))
    means = values.reshape(t, m).mean(axis=1)
    s_b = means.var(ddof=1)
    s_w = values.reshape(t, m).var(axis=1, ddof=1).mean()
    expected = ((t - 1) / t * s_b / t + (m - 1) / m * s_w / (m * t)) ** 0.5
    assert abs(r["se"] - expected) / expected < 0.03


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
    monkeypatch.setenv("INQUITREE_BOOTSTRAP_RESAMPLES", "ten")
    with pytest.raises(ValueError, match="INQUITREE_BOOTSTRAP_RESAMPLES='ten'"):
        Bootstrap.from_env()
