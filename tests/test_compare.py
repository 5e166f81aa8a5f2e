"""`inquitree compare`: paired differences, their interval and p-value, on a log whose every
number is worked out by hand (docs/DECISIONS.md #26); and the terminal table that fits."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse

from enginekit import OracleAgent, ScriptAgent, always_miss_script, play

TREES = ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7")


def _log(sqlite_url, tmp_path) -> str:
    """The oracle (3n steps) and the always-miss script (n(2H+3) steps) once on each of three
    trees, and the oracle a second time on the chain, which has no partner."""
    store = EventStore(sqlite_url)
    for tid in TREES:
        tree = resolve_tree(tid)
        play(tree, OracleAgent(tree), store=store)
        play(tree, ScriptAgent(always_miss_script(tree, 4, tmp_path / f"{tid}.txt")), store=store)
    chain = resolve_tree(TREES[0])
    play(chain, OracleAgent(chain), store=store)
    store.close()
    w = str(tmp_path / "w.duckdb")
    with Warehouse(w) as wh:
        wh.sync(sqlite_url)
    return w


def test_paired_differences_by_hand(sqlite_url, tmp_path):
    w = _log(sqlite_url, tmp_path)
    with Warehouse(w, read_only=True) as wh:
        rows = {r["metric"]: r for r in wh.query("compare", {"agent_a": "oracle", "agent_b": "script"}).to_dicts()}
    steps = rows["steps"]
    # Per tree, script - oracle = n(2H+3) - 3n = 8n: 56, 32, 56 -> mean over trees 48.
    assert (steps["mean_a"], steps["mean_b"], steps["difference"]) == (18.0, 66.0, 48.0)
    # Three papers (#25 as revised: under 8, the t interval on the paper means): the differences
    # 56, 32, 56 have SD sqrt((8^2 + 16^2 + 8^2) / 2) = 13.8564, SE 13.8564 / sqrt(3) = 8, and the
    # interval is 48 +- t_{2, 0.975} x 8 = 48 +- 34.4212.
    assert steps["difference_se"] == 8.0
    assert (steps["difference_ci_low"], steps["difference_ci_high"]) == (
        pytest.approx(13.5788, abs=1e-3),
        pytest.approx(82.4212, abs=1e-3),
    )
    assert steps["interval_method"] == "t interval over 3 papers (2 df, jackknife standard error)"
    # Three papers: 8 sign patterns of the paper means, of which only all-plus and all-minus reach |48|: p = 2/8.
    assert steps["p_value"] == 0.25
    assert (steps["paired_cells"], steps["only_a"], steps["only_b"], steps["papers"]) == (3, 1, 0, 3)
    # Both cover every subtopic: no difference, and every sign pattern is as extreme (p = 1).
    assert (rows["coverage"]["difference"], rows["coverage"]["p_value"]) == (0.0, 1.0)


def test_compare_command_names_unknown_agents_and_fits_the_terminal(sqlite_url, tmp_path):
    w = _log(sqlite_url, tmp_path)
    runner = CliRunner()
    bad = runner.invoke(main, ["compare", "oracle", "gpt-9", "--warehouse", w])
    assert bad.exit_code == 2 and "no episodes of agent 'gpt-9'; agents: oracle, script" in bad.output
    needs = runner.invoke(main, ["query", "compare", "--warehouse", w])
    assert needs.exit_code == 2 and "compare.sql needs agent_a, agent_b" in needs.output
    ok = runner.invoke(main, ["compare", "oracle", "script", "--warehouse", w], env={"COLUMNS": "100"})
    assert ok.exit_code == 0, ok.output
    table = [ln for ln in ok.stdout.splitlines() if ln.startswith(("┌", "│", "╞", "└"))]
    assert table and max(len(ln) for ln in table) <= 100
    assert "more column(s) do not fit: " in ok.stderr and "--format csv or json shows them all" in ok.stderr
    picked = runner.invoke(
        main, ["compare", "oracle", "script", "--warehouse", w, "--columns", "metric,p_value", "--format", "csv"]
    )
    lines = picked.stdout.splitlines()
    assert lines[0] == "metric,p_value" and [ln.split(",")[0] for ln in lines[1:]] == [
        "conclusion_score",
        "coverage",
        "steps",
        "redo_frequency",
    ]
    wrong = runner.invoke(main, ["query", "steps_bounds", "--warehouse", w, "--columns", "nope"])
    assert wrong.exit_code == 2 and "--columns: no column nope" in wrong.output


def test_compare_with_no_paired_cell_says_so_and_fails(sqlite_url, tmp_path):
    """It used to print rows of nulls and exit 0."""
    store = EventStore(sqlite_url)
    diamond, chain = resolve_tree("synthetic-diamond-4"), resolve_tree("synthetic-chain-7")
    play(diamond, OracleAgent(diamond), store=store)
    play(chain, ScriptAgent(always_miss_script(chain, 4, tmp_path / "m.txt")), store=store)
    store.close()
    w = str(tmp_path / "w.duckdb")
    with Warehouse(w) as wh:
        wh.sync(sqlite_url)
    out = CliRunner().invoke(main, ["compare", "oracle", "script", "--warehouse", w])
    assert out.exit_code == 2 and "no cell was run by both 'oracle' (1 cells) and 'script' (1 cells)" in out.output


def test_report_captions_name_the_interval_rules(sqlite_url, tmp_path):
    """The Fig. 3a and 3b captions described the two-level bootstrap after the default had changed."""
    from inquitree.warehouse.report import BARS, CAPTIONS

    for fig in ("fig3a", "fig3b", "fig3c", "fig4"):
        assert BARS in CAPTIONS[fig] and "then runs within them" not in CAPTIONS[fig]
        assert "then episodes within them" not in CAPTIONS[fig]
    assert "below 8 papers a t interval" in BARS
