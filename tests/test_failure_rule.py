"""The failure rule (docs/DECISIONS.md #33): an agent is scored on every paper it was given. A cell
whose episode failed, was interrupted or never ran scores the metric's floor, the row says how many
cells of each and on which papers, and `--complete-case` keeps the finished episodes alone and says so.

The agent here finishes the small tree and runs out of replies on the two larger ones, as an agent
that fails on hard papers does; the oracle finishes all three. Left out, as the warehouse once did
with every unfinished episode, the failing agent's coverage would be the oracle's (1.0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.run.campaign import Suite, run_suite
from inquitree.events.store import EventStore
from inquitree.warehouse import Settings
from inquitree.warehouse.warehouse import Warehouse

from enginekit import MISS

TREES = ["synthetic-diamond-4", "synthetic-chain-7", "synthetic-independent-7"]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[str, Path]:
    """A store with the campaign, and its warehouse path (synced)."""
    tmp = tmp_path_factory.mktemp("failures")
    # misses until forced at each of the small tree's 4 subtopics, asks for more, then concludes: on a
    # tree of 7 it runs out of replies half way
    rounds = [MISS] * 10 + ["ACTION: explore_new_subtopic"]
    miss = tmp / "miss.txt"
    miss.write_text("\n---\n".join(rounds * 4 + ["ACTION:\n(1) Sleep matters."]))
    suite = tmp / "fr.toml"
    suite.write_text(
        f"""
name = "fr"
trees = {TREES!r}
agents = ["oracle", {{agent = "script:{miss}", label = "fails-hard"}}]
runs = 1
embedder = "hash"
retries = 0
"""
    )
    url = f"sqlite:///{tmp / 'e.sqlite'}"
    report = run_suite(Suite.load(suite), EventStore(url))
    assert (report.done, report.failed) == (4, 2), report.errors
    with Warehouse(str(tmp / "w.duckdb")) as wh:
        wh.sync(url)
    return url, tmp / "w.duckdb"


def leaderboard(path: Path, complete_case: bool = False) -> dict[str, dict]:
    with Warehouse(str(path), read_only=True, settings=Settings(complete_case=complete_case)) as wh:
        wh.scope()
        return {r["agent"]: r for r in wh.query("table2_leaderboard").to_dicts()}


def test_a_failed_cell_scores_the_floor_and_the_row_says_which_papers(campaign):
    _, path = campaign
    rows = leaderboard(path)
    hard, oracle = rows["fails-hard"], rows["oracle"]
    assert hard["cells"] == "3 cells: 1 finished, 2 failed (synthetic-chain-7, synthetic-independent-7)"
    assert oracle["cells"] == "3 cells: 3 finished"
    # every paper it was given: the small tree reached whole (forced moves count in coverage), the rest 0
    assert hard["papers"] == 3 and hard["coverage"] == pytest.approx(1 / 3)
    assert hard["own_coverage"] == 0.0
    assert oracle["coverage"] == 1.0 and oracle["rank"] == 1
    assert "2 not finished, each scored 0" in hard["interval_warning"]
    assert "docs/DECISIONS.md #33" in hard["interval_warning"]
    assert "not finished" not in (oracle["interval_warning"] or "")


def test_complete_case_is_a_switch_and_says_it_is_one(campaign):
    _, path = campaign
    hard = leaderboard(path, complete_case=True)["fails-hard"]
    assert hard["papers"] == 1 and hard["coverage"] == 1.0  # what every table printed before the rule
    assert "complete cases only (--complete-case)" in hard["interval_warning"]


def test_the_figures_and_compare_apply_the_same_rule(campaign):
    url, path = campaign
    with Warehouse(str(path), read_only=True) as wh:
        wh.scope()
        fig = {r["agent"]: r for r in wh.query("fig3a_score_by_randomness").to_dicts()}
        pairs = wh.query("compare", {"agents": ["oracle", "fails-hard"], "one_off": False}).to_dicts()
    assert fig["fails-hard"]["papers"] == 3 and "2 not finished" in fig["fails-hard"]["interval_warning"]
    coverage = next(r for r in pairs if r["metric"] == "coverage")
    assert coverage["paired_cells"] == 3 and coverage["difference"] == pytest.approx(1 / 3 - 1)
    assert "2 of B's cells did not finish, each scored 0" in coverage["interval_warning"]


def test_a_cell_that_never_ran_is_a_floor_too(campaign, tmp_path):
    """The same campaign given a fourth paper that only the oracle played: the failing agent never ran it."""
    url, _ = campaign
    suite = tmp_path / "fr.toml"
    suite.write_text(
        'name = "fr"\ntrees = ["synthetic-diamond-4", "synthetic-chain-7", "synthetic-independent-7", '
        '"it18-01-grid-cells-reference-frames"]\nagents = ["oracle"]\nruns = 1\nembedder = "hash"\n'
    )
    assert run_suite(Suite.load(suite), EventStore(url)).done == 1
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(url)
    hard = leaderboard(tmp_path / "w.duckdb")["fails-hard"]
    assert hard["cells"] == (
        "4 cells: 1 finished, 2 failed (synthetic-chain-7, synthetic-independent-7), "
        "1 never ran (it18-01-grid-cells-reference-frames)"
    )
    assert hard["papers"] == 4 and hard["coverage"] == pytest.approx(1 / 4)


def test_the_terminal_leaderboard_names_the_rule(campaign):
    url, path = campaign
    out = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["query", "table2_leaderboard", "--warehouse", str(path), "--db", url]
    )
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "3 cells: 1 finished, 2 failed (synthetic-chain-7, synthetic-independent-7); 2 not finished" in said
    cc = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["query", "table2_leaderboard", "--complete-case", "--warehouse", str(path), "--db", url]
    )
    assert cc.exit_code == 0, cc.output
    assert "complete cases only" in " ".join(cc.output.split())


def test_fig3a_and_fig4_say_how_well_their_judge_reads(campaign):
    """The leaderboard carried the judge's measured validity; fig3a and fig4, which show the same
    conclusion scores, did not."""
    _, path = campaign
    with Warehouse(str(path), read_only=True) as wh:
        wh.scope()
        for name in ("fig3a_score_by_randomness", "fig4_cutoff"):
            rows = wh.query(name).to_dicts()
            assert rows and all(r["judge_validity"] for r in rows), name
            board = {r["judge_id"]: r["judge_validity"] for r in wh.query("table2_leaderboard").to_dicts()}
            assert all(r["judge_validity"] == board[r["judge_id"]] for r in rows), name


def test_the_leaderboard_speaks_of_runs_and_of_seeds_pooled_suites_share(tmp_path):
    """With two runs every row gives the interval over runs as well as papers (a shock one run's
    papers share, such as one day of an API, counted); two suites pooled with the same seed play
    the random agent's same choices on each paper, and the row says that its runs are not
    independent."""
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    store = EventStore(url)
    for name, runs in (("twice-a", 2), ("twice-b", 1)):
        path = tmp_path / f"{name}.toml"
        path.write_text(
            f'name = "{name}"\ntrees = {TREES!r}\nagents = ["random"]\nruns = {runs}\nseed = 0\nembedder = "hash"\n'
        )
        run_suite(Suite.load(path), store)
    store.close()
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(url)
        wh.scope(["twice-a"])
        alone = wh.query("table2_leaderboard").to_dicts()[0]
        wh.scope(["twice-a", "twice-b"])
        pooled = wh.query("table2_leaderboard").to_dicts()[0]
    assert "over runs like these as well" in alone["interval_warning"]
    assert "repeat the seed" not in alone["interval_warning"]
    assert "3 of 9 episodes repeat the seed of another episode of the same paper" in pooled["interval_warning"]
    assert "played in these 3 runs" in pooled["interval_warning"]
