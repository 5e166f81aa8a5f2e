"""A constant agent never looks like the oracle. An agent that answers `explore_new_subtopic` to
everything reaches every subtopic by the engine's forced moves after the last hint, so its coverage
is the oracle's; its own coverage (the subtopics it reached by its own moves) is 0. The leaderboard
at 80 columns shows both in one cell and warns that the coverage is mostly forced, and compare
carries own_coverage beside coverage. On the same warehouse, a table that has no row yet (no control,
one judge) says what would fill it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.run.campaign import Suite, run_suite
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("constant")
    script = tmp / "constant.txt"
    script.write_text("\n---\n".join(["ACTION: explore_new_subtopic"] * 400))
    suite = tmp / "const.toml"
    suite.write_text(
        f'name = "const"\ntrees = ["synthetic-diamond-4", "synthetic-chain-7", "synthetic-independent-7"]\n'
        f'agents = ["oracle", {{agent = "script:{script}", label = "constant"}}]\nruns = 1\nembedder = "hash"\n'
    )
    url = f"sqlite:///{tmp / 'e.sqlite'}"
    assert run_suite(Suite.load(suite), EventStore(url)).done == 6
    path = str(tmp / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
    return url, path


def test_the_constant_agents_coverage_is_forced_and_the_row_says_so(warehouse):
    url, path = warehouse
    with Warehouse(path, read_only=True) as wh:
        wh.scope()
        rows = {r["agent"]: r for r in wh.query("table2_leaderboard").to_dicts()}
        pairs = wh.query("compare", {"agents": ["oracle", "constant"], "one_off": False}).to_dicts()
    constant, oracle = rows["constant"], rows["oracle"]
    assert constant["coverage"] == oracle["coverage"] == 1.0  # the tie on coverage alone
    assert constant["own_coverage"] == 0.0 and oracle["own_coverage"] == 1.0
    assert "coverage: mostly forced" in constant["interval_warning"]
    assert "mostly forced" not in (oracle["interval_warning"] or "")
    own = next(r for r in pairs if r["metric"] == "own_coverage")
    assert own["difference"] == pytest.approx(-1.0) and (own["mean_a"], own["mean_b"]) == (1.0, 0.0)
    table = CliRunner(env={"COLUMNS": "80"}).invoke(main, ["query", "table2_leaderboard", "--warehouse", path])
    assert table.exit_code == 0, table.output
    line = next(ln for ln in table.output.splitlines() if " constant " in ln)
    assert "1.00 [" in line and "(0.00)" in line and len(line) <= 80


def test_a_table_with_no_row_yet_says_what_fills_it(warehouse):
    """The control and judge-agreement tables printed an empty box with no words before any row existed."""
    url, path = warehouse
    for name, says in (("control_accuracy", "inquitree control --agent"), ("judge_agreement", "a second judge")):
        out = CliRunner(env={"COLUMNS": "80"}).invoke(main, ["query", name, "--warehouse", path])
        assert out.exit_code == 0 and says in out.output and "┌" not in out.output, out.output


def test_the_inspect_export_puts_the_conclusion_score_first_and_own_coverage_beside_coverage(warehouse):
    """`inspect view` shows a sample's first score: it was coverage, on which the constant agent
    ties the oracle."""
    pytest.importorskip("inspect_ai")
    from inquitree.core.inspect.export import eval_logs

    url, _ = warehouse
    with EventStore(url) as store:
        ids = [s.stream_id.removeprefix("episode/") for s in store.streams("episode/")]
        logs = eval_logs(store, ids)
    first = {label: [s.scores["inquitree_scores"].value for s in log.samples] for label, log in logs.items()}
    assert set(first) == {"constant", "oracle"}
    for label, values in first.items():
        assert all(list(v)[:3] == ["q_norm", "coverage", "own_coverage"] for v in values)
        assert [v["coverage"] for v in values] == [1.0] * 3
        assert [v["own_coverage"] for v in values] == ([0.0] * 3 if label == "constant" else [1.0] * 3)


def test_the_viewers_compare_page_counts_what_each_agent_reached_itself(warehouse):
    """The viewer's pairs said "only B reached: s3, s4, s5, s6" of the constant agent, which reached
    them only by the engine's forced moves."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    _, path = warehouse
    page = TestClient(create_app(path), base_url="http://127.0.0.1").get(
        "/compare", params={"a": "constant", "b": "oracle"}
    )
    assert page.status_code == 200 and "own coverage A / B" in page.text
    rows = [r for r in page.text.split("<tr>") if r.startswith("<td>") and "side by side" in r]
    assert len(rows) == 3
    for row in rows:
        cells = row.split("<td>")
        assert "1.000 / 1.000" in row and "0.000 / 1.000" in row  # coverage alike, own coverage not
        assert cells[9].startswith("</td>")  # nothing the constant agent reached itself that the oracle did not
