"""`inquitree compare`: paired differences, their interval and p-value, on a log whose every
number is worked out by hand (docs/DECISIONS.md #26); and the terminal table that fits."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore
from inquitree.warehouse.schema import refresh_facts
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
        variables = {"agents": ["oracle", "script"], "one_off": True}
        rows = {r["metric"]: r for r in wh.query("compare", variables).to_dicts()}
        # The episodes were played outside a suite: they pair only when one-off episodes are asked for.
        assert wh.query("compare", {"agents": ["oracle", "script"], "one_off": False}).is_empty()
    steps = rows["steps"]
    # Per tree, script - oracle = n(2H+3) - 3n = 8n: 56, 32, 56 -> mean over trees 48.
    assert (steps["mean_a"], steps["mean_b"], steps["difference"]) == (18.0, 66.0, 48.0)
    # The differences 56, 32, 56 have SD sqrt((8^2 + 16^2 + 8^2) / 2) = 13.8564, SE 13.8564 / sqrt(3) = 8.
    assert steps["difference_se"] == 8.0
    # Three papers: 8 sign patterns of the paper means, of which only all-plus and all-minus reach
    # |48|: p = 2/8, which is also the smallest p three papers allow. So no interval (it would
    # be every shift), and the warning says why.
    assert (steps["p_value"], steps["p_min"]) == (0.25, 0.25)
    assert steps["difference_ci_low"] is None and steps["difference_ci_high"] is None
    assert steps["interval_warning"].startswith("3 papers: the smallest p this test can give is 0.25")
    assert steps["interval_method"].startswith(
        "about papers like these: sign-flip test of 3 paper mean differences (exact over all 8"
    )
    # Holm within a family: one metric at one level over the pairs of agents (two agents: one pair)
    assert steps["holm_family"] == 1 and steps["p_holm"] == steps["p_value"]
    assert rows["conclusion_score"]["role"] == "headline" and steps["role"] == "exploratory"
    assert (steps["paired_cells"], steps["only_a"], steps["only_b"], steps["papers"]) == (3, 1, 0, 3)
    # Both cover every subtopic: no difference, and every sign pattern is as extreme (p = 1).
    assert (rows["coverage"]["difference"], rows["coverage"]["p_value"]) == (0.0, 1.0)


def test_compare_command_names_unknown_agents_and_fits_the_terminal(sqlite_url, tmp_path):
    w = _log(sqlite_url, tmp_path)
    runner = CliRunner()
    bad = runner.invoke(main, ["compare", "oracle", "gpt-9", "--warehouse", w])
    assert bad.exit_code == 2 and "no episodes of agent 'gpt-9'; agents: oracle, script" in bad.output
    needs = runner.invoke(main, ["query", "compare", "--warehouse", w])
    assert needs.exit_code == 2 and "compare.sql needs agents, one_off" in needs.output
    ok = runner.invoke(main, ["compare", "oracle", "script", "--one-off", "--warehouse", w], env={"COLUMNS": "80"})
    assert ok.exit_code == 0, ok.output
    table = [ln for ln in ok.stdout.splitlines() if ln.startswith(("┌", "│", "╞", "└"))]
    assert table and max(len(ln) for ln in table) <= 80
    # At 80 columns a reader sees the difference with its interval, p and Holm's p (they used to be
    # among the columns that did not fit), and what every row shares is said once above the table.
    header = table[0] and [ln for ln in table if ln.startswith("│ #")][0]
    for name in ("metric", "difference", "p_value", "p_holm"):
        assert name in header, header
    assert re.search(r"┆ -?\d+\.\d+ \[(-?\d+\.\d+, -?\d+\.\d+|no interval)\]", "\n".join(table)), table
    above = ok.stdout.split(table[0], 1)[0].splitlines()
    assert "agent_a (every row): oracle" in above and "agent_b (every row): script" in above
    # What the numbers rest on is printed under the table at 80 columns, tied to the rows it is about.
    notes = ok.stdout.split(table[-1], 1)[1].splitlines()
    assert notes and max(len(ln) for ln in notes) <= 80
    assert any(ln.startswith("interval method (") and "sign-flip test of 3" in ln for ln in notes), notes
    assert any(
        ln.startswith("WARNING (every row): 3 papers: the smallest p this test can give is 0.25") for ln in notes
    ), notes
    listed = runner.invoke(main, ["compare", "oracle", "script", "--one-off", "--pairs", "--warehouse", w])
    pairs = [ln for ln in listed.stdout.splitlines() if ln.startswith("  ep-") and " ~ ep-" in ln]
    assert len(pairs) == 3 and "pairs of oracle ~ script, judge " in listed.stdout
    picked = runner.invoke(
        main,
        [
            "compare",
            "oracle",
            "script",
            "--one-off",
            "--warehouse",
            w,
            "--columns",
            "metric,p_value",
            "--format",
            "csv",
        ],
    )
    lines = picked.stdout.splitlines()
    assert lines[0] == "metric,p_value" and [ln.split(",")[0] for ln in lines[1:]] == [
        "conclusion_score",
        "coverage",
        "own_coverage",
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
    out = CliRunner().invoke(main, ["compare", "oracle", "script", "--one-off", "--warehouse", w])
    assert out.exit_code == 2 and "no cell was run by two of 'oracle', 'script'" in out.output


def test_report_captions_name_the_interval_rules(sqlite_url, tmp_path):
    """The Fig. 3a and 3b captions described the two-level bootstrap after the default had changed."""
    from inquitree.warehouse.report import BARS, CAPTIONS

    for fig in ("fig3a", "fig3b", "fig3c", "fig4"):
        assert BARS in CAPTIONS[fig] and "then runs within them" not in CAPTIONS[fig]
        assert "then episodes within them" not in CAPTIONS[fig]
    assert "score interval" in BARS and "no bar below 3 papers" in BARS


def test_power_plans_papers_from_stated_spreads_and_from_a_pilot(sqlite_url, tmp_path):
    runner = CliRunner()
    stated = runner.invoke(
        main, ["power", "--difference", "0.05", "--sd-between", "0.1", "--sd-within", "0.1", "--simulations", "300"]
    )
    assert stated.exit_code == 0, stated.output
    # 1 pair per paper: SD sqrt(0.02) = 0.141; normal approximation ((1.96 + 0.84) 0.141 / 0.05)^2 = 63.
    one = next(ln for ln in stated.output.splitlines() if ln.strip().startswith("1 pair(s) per paper:"))
    power = float(one.split("simulated power ")[1].split()[0])  # with its simulation error, from 300 runs
    assert f"± {(power * (1 - power) / 300) ** 0.5:.3f}, 300 simulations)" in one
    assert 55 <= int(one.split(":")[1].split()[0]) <= 72
    assert "method: 300 simulated campaigns per paper count" in stated.output
    w = _log(sqlite_url, tmp_path)
    pilot = runner.invoke(
        main,
        ["power", "--difference", "5", "--agents", "oracle", "script", "--metric", "steps", "--one-off"]
        + ["--warehouse", w, "--simulations", "200", "--runs", "1"],
    )
    assert pilot.exit_code == 0, pilot.output
    assert "pilot: 3 papers, 3 pairs" in pilot.output and "one pair per paper" in pilot.output
    # A pilot of 3 papers is itself uncertain: the plan for spreads at their 80% upper bound asks for more.
    answers = [ln.split(":")[1].split()[0] for ln in pilot.output.splitlines() if "1 pair(s) per paper:" in ln]
    plain, cautious = [201 if a == "more" else int(a) for a in answers]  # "more than 200 papers"
    assert "80% upper bound from 3 papers" in pilot.output and cautious > plain
    family = runner.invoke(
        main,
        ["power", "--difference", "0.05", "--sd-between", "0.1", "--sd-within", "0.1", "--simulations", "300"]
        + ["--runs", "1", "--comparisons", "3", "--missing", "0.25"],
    )
    assert family.exit_code == 0, family.output
    assert "Holm's family of 3" in family.output and "25% of papers losing a run (so dropping out)" in family.output
    assert int(family.output.split("1 pair(s) per paper: ")[1].split()[0]) > int(one.split(":")[1].split()[0])
    refused = runner.invoke(main, ["power", "--difference", "5", "--agents", "oracle", "script", "--warehouse", w])
    assert refused.exit_code == 2 and "--one-off pairs episodes outside a suite" in refused.output


def test_power_on_a_pilot_without_spread_says_why_in_one_line(sqlite_url, tmp_path):
    """A pilot whose paired differences never vary (an oracle against an agent that always misses,
    coverage 1 against 0 on every paper) ended in a Python traceback from the simulation."""
    w = _log(sqlite_url, tmp_path)
    out = CliRunner().invoke(
        main,
        ["power", "--difference", "0.05", "--agents", "oracle", "script", "--metric", "coverage", "--one-off"]
        + ["--warehouse", w],
    )
    assert out.exit_code == 2, out.output
    assert (
        "Traceback" not in out.output and "do not vary" in out.output and "--sd-between S --sd-within W" in out.output
    )


def test_power_reports_its_progress_as_it_searches():
    from inquitree import stats

    seen: list[tuple[int, float]] = []
    found = stats.papers_needed(0.3, 0.2, 0.2, simulations=200, progress=lambda n, p: seen.append((n, p)))
    assert seen and found.papers in {n for n, _ in seen}
    assert dict(seen)[found.papers] == found.power


def test_report_and_viewer_tables_print_methods_and_warnings_under_the_table():
    """What the terminal prints under a table, the report and the viewer print under theirs (escaped)."""
    import polars as pl

    from inquitree.warehouse.report import table_html

    df = pl.DataFrame(
        {
            "agent": ["a<b>", "c"],
            "coverage": [0.5, 0.6],
            "interval_method": ["t interval", "t interval"],
            "interval_warning": [None, "2 papers: <no> interval"],
        }
    )
    html = table_html(df)
    assert "<ul class='notes'><li>interval_method: t interval</li>" in html
    assert "<li>WARNING [c]: 2 papers: &lt;no&gt; interval</li>" in html and "<no>" not in html


def test_the_cli_the_viewer_and_the_report_name_the_same_pairs(sqlite_url, tmp_path):
    """one pairing everywhere. A campaign of two agents on three trees, two runs each,
    and a one-off oracle episode outside the suite, which pairs nowhere unless asked."""
    import re

    from starlette.testclient import TestClient

    from inquitree.core.run.campaign import Suite, run_suite
    from inquitree.viewer.app import create_app
    from inquitree.warehouse.report import write_report

    suite = tmp_path / "pairs.toml"
    suite.write_text(
        'name = "pairs"\ntrees = ["synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7"]\n'
        'agents = ["oracle", "random"]\njudges = ["embedding"]\nrandomness = [0]\nruns = 2\nseed = 0\n'
        'embedder = "hash"\nconcurrency = 2\n'
    )
    store = EventStore(sqlite_url)
    run_suite(Suite.load(suite), store)
    chain = resolve_tree("synthetic-chain-7")
    one_off = play(chain, OracleAgent(chain), store=store).episode_id
    store.close()
    w = str(tmp_path / "w.duckdb")
    with Warehouse(w) as wh:
        wh.sync(sqlite_url)
        expected = {
            (a, b)
            for a, b in wh.con.execute(
                "SELECT x.episode_id, y.episode_id FROM pair_keys x JOIN pair_keys y "
                "USING (pair_suite, tree_id, randomness, pair_run) WHERE x.agent = 'oracle' AND y.agent = 'random' "
                "AND x.in_suite AND y.in_suite"
            ).fetchall()
        }
        write_report(wh, tmp_path / "report")
    assert len(expected) == 6 and not any(one_off in p for p in expected)

    cli = CliRunner().invoke(main, ["compare", "oracle", "random", "--pairs", "--warehouse", w])
    assert cli.exit_code == 0, cli.output
    listed = [line.strip() for line in cli.output.splitlines() if line.startswith("  ") and " ~ " in line]
    from_cli = {tuple(line.split(" ~ ")) for line in listed}

    page = TestClient(create_app(w), base_url="http://127.0.0.1").get("/compare", params={"a": "oracle", "b": "random"})
    links = re.findall(r'/compare/episodes\?a=([^&"]+)&amp;b=([^&"]+)"', page.text)
    from urllib.parse import unquote

    from_viewer = {(unquote(a), unquote(b)) for a, b in links}

    report = (tmp_path / "report" / "index.html").read_text()
    from_report = {tuple(p.split(" ~ ")) for p in re.findall(r"<li><code>([^<]+ ~ [^<]+)</code></li>", report)}
    assert from_cli == from_viewer == from_report == expected
    assert "Paired comparison of agents" in report and one_off not in report.split('id="comparison"')[1].split("<h2")[0]


def _tables_scanned(wh: Warehouse, text: str) -> Counter:
    """How many times the plan of ``text`` scans each table (DuckDB's JSON plan)."""
    scans: Counter = Counter()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            extra = node.get("extra_info")
            if isinstance(extra, dict) and "Table" in extra:
                scans[extra["Table"].rsplit(".", 1)[-1]] += 1
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(wh.con.execute("EXPLAIN (FORMAT json) " + text).fetchall()[0][1]))
    return scans


def test_compare_and_the_viewers_pairs_compute_the_episodes_view_once(tmp_path):
    """The episodes view folded a dozen event tables per episode; compare computed it once per view
    it read (episodes, pair_keys, episode_scores) and ran out of the default memory at 1M events.
    The view now reads the facts each sync keeps (episode_facts): the plan reads that table at most
    once and no event table an episode's facts come from."""
    from inquitree.viewer import sql
    from inquitree.warehouse.warehouse import QUERIES_DIR

    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.con.execute("SET VARIABLE agents = ['a', 'b']")
        wh.con.execute("SET VARIABLE one_off = false")
        cells = sql.CELLS.replace("$1", "'a'").replace("$2", "'b'").replace("$3", "false")
        for text in ((QUERIES_DIR / "compare.sql").read_text(), cells):
            scans = _tables_scanned(wh, text)
            # at most once: on this empty warehouse DuckDB may drop a scan it knows yields nothing
            assert scans["episode_facts"] <= 1 and scans["ev_conclusion_submitted"] == 0
            assert not {t for t in scans if t in {"ev_transitioned", "ev_agent_replied", "ev_result_drawn"}}


def test_query_and_report_keep_campaigns_and_one_off_episodes_apart(sqlite_url, tmp_path):
    """`query` mixed one-off `play` episodes into a campaign's numbers and had no --suite."""
    runner = CliRunner()
    for name, agents in (("first", '["oracle"]'), ("second", '["oracle", "random"]')):
        (tmp_path / f"{name}.toml").write_text(
            f'name = "{name}"\ntrees = ["synthetic-diamond-4"]\nagents = {agents}\nrandomness = [0]\nruns = 2\n'
            'embedder = "hash"\n'
        )
        assert runner.invoke(main, ["suite", "run", str(tmp_path / f"{name}.toml"), "--db", sqlite_url]).exit_code == 0
    store = EventStore(sqlite_url)
    diamond = resolve_tree("synthetic-diamond-4")
    play(diamond, OracleAgent(diamond), store=store)  # one episode outside a suite
    store.close()
    w = str(tmp_path / "w.duckdb")
    assert runner.invoke(main, ["warehouse", "sync", "--db", sqlite_url, "--warehouse", w]).exit_code == 0

    def episodes(*args: str) -> tuple[dict[str, int], str]:
        out = runner.invoke(
            main,
            ["query", "table2_leaderboard", "--warehouse", w, "--db", sqlite_url, "--format", "csv"]
            + ["--columns", "agent,episodes", *args],
        )
        assert out.exit_code == 0, out.output
        rows = [ln.split(",") for ln in out.stdout.splitlines()[1:]]
        return {a: int(n) for a, n in rows}, out.stderr

    every, said = episodes()
    assert every == {"oracle": 4, "random": 2}
    assert "left out: 1 one-off episode(s) (--one-off shows them)" in said
    assert episodes("--suite", "second")[0] == {"oracle": 2, "random": 2}
    assert episodes("--suite", "first")[0] == {"oracle": 2}
    assert episodes("--one-off")[0] == {"oracle": 1}
    unknown = runner.invoke(main, ["query", "table2_leaderboard", "--warehouse", w, "--suite", "third"])
    assert (
        unknown.exit_code == 2
        and "no campaign 'third' in the warehouse; campaigns: 'first', 'second'" in unknown.output
    )
    store = EventStore(sqlite_url)
    play(diamond, OracleAgent(diamond), store=store)
    store.close()
    _, said = episodes()
    assert "recorded after this warehouse's last sync: `inquitree warehouse sync` loads them" in said
    report = runner.invoke(
        main, ["report", "--out", str(tmp_path / "r"), "--warehouse", w, "--db", sqlite_url, "--suite", "first"]
    )
    assert report.exit_code == 0, report.output
    page = (tmp_path / "r" / "index.html").read_text()
    table2 = page.split("Table 2")[1].split("</table>")[0]
    assert "<td>oracle</td>" in table2 and "<td>random</td>" not in table2


def test_holms_family_is_one_metric_at_one_level_and_a_hopeless_family_says_so(tmp_path):
    """Holm's family was every pair x metric x level printed: at 8 papers, 3 agents made a family
    of 24 whose smallest adjusted p was 0.1875, so not even the oracle against a random agent could
    be shown, silently. A family is now one metric at one level over the pairs of agents; the
    conclusion score is the headline, the others exploratory; a family too large for its papers
    says so."""
    from inquitree.core.run.campaign import Suite, run_suite

    trees = [p.stem for p in sorted((Path(__file__).resolve().parent.parent / "trees").glob("it18-*.json"))][:8]
    suite_file = tmp_path / "three.toml"
    suite_file.write_text(
        f'name = "three"\ntrees = {json.dumps(trees)}\nagents = ["oracle", "random", "random-all"]\n'
        'randomness = [0]\nruns = 1\nembedder = "hash"\n'
    )
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with EventStore(db) as store:
        assert run_suite(Suite.load(suite_file), store).failed == 0
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(db)
        rows = wh.query("compare", {"agents": ["oracle", "random", "random-all"], "one_off": False}).to_dicts()
    headline = [r for r in rows if r["metric"] == "conclusion_score"]
    assert len(headline) == 3 and all(r["holm_family"] == 3 and r["role"] == "headline" for r in headline)
    beaten = next(r for r in headline if (r["agent_a"], r["agent_b"]) == ("oracle", "random"))
    assert len(trees) == 8 and beaten["p_value"] == 2 / 2**8 and beaten["p_holm"] == 3 * beaten["p_value"] < 0.05
    assert all(r["role"] == "exploratory" for r in rows if r["metric"] != "conclusion_score")
    with Warehouse(str(tmp_path / "few.duckdb")) as few:  # five papers: a family of 3 can never reach 5%
        few.sync(db)
        few.con.execute(f"DELETE FROM ev_episode_started WHERE tree_id NOT IN {tuple(trees[:5])}")
        refresh_facts(few.con, everything=True)  # the facts a sync keeps, from the events left
        small = few.query("compare", {"agents": ["oracle", "random", "random-all"], "one_off": False}).to_dicts()
    warned = [r for r in small if r["metric"] == "conclusion_score"]
    assert warned and all("can reach 5%" in (r["interval_warning"] or "") or r["p_min"] > 0.05 for r in warned)


def test_leaderboard_ranks_say_whom_they_hold_for_and_joint_ranks_hold_for_all(sqlite_url, tmp_path):
    """Each agent's rank interval holds for that agent alone, and the leaderboard says so;
    --joint-ranks prints intervals that hold for every agent at once (Holm over the pairs)."""
    import json

    w = _log(sqlite_url, tmp_path)
    runner = CliRunner()
    shown = {}
    for extra in ([], ["--joint-ranks"]):
        out = runner.invoke(
            main, ["query", "table2_leaderboard", "--one-off", "--warehouse", w, "--format", "json"] + extra
        )
        assert out.exit_code == 0, out.output
        shown[bool(extra)] = json.loads(out.output[out.output.index("[") :])
    assert all(r["rank_method"].startswith("each agent's rank set on its own") for r in shown[False])
    joint = shown[True]
    assert all(r["rank_method"].startswith("rank intervals that hold for every agent at once") for r in joint)
    # Three papers cannot show the oracle and the script apart (p_min 0.25): both could be first,
    # in either method, and each row says why.
    for rows in shown.values():
        assert sorted((r["rank_low"], r["rank_high"]) for r in rows) == [(1, 2), (1, 2)]
        assert all("can be told apart at 3 papers" in r["interval_warning"] for r in rows)


def test_three_agents_compare_in_one_table_per_pair_that_fits_80_columns(sqlite_url, tmp_path):
    """With three agents the two agent columns pushed the difference, p and Holm's p off an
    80-column screen: each pair now gets its own table, named above it, methods said once."""
    from enginekit import RandomAgent

    store = EventStore(sqlite_url)
    for tid in TREES:
        tree = resolve_tree(tid)
        play(tree, OracleAgent(tree), store=store)
        play(tree, ScriptAgent(always_miss_script(tree, 4, tmp_path / f"{tid}.txt")), store=store)
        play(tree, RandomAgent(tree, 0), store=store)
    store.close()
    w = str(tmp_path / "w.duckdb")
    with Warehouse(w) as wh:
        wh.sync(sqlite_url)
    out = CliRunner().invoke(
        main, ["compare", "oracle", "script", "random", "--one-off", "--warehouse", w], env={"COLUMNS": "80"}
    )
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert max(len(ln) for ln in lines if not ln.startswith("judge_id")) <= 80
    assert [ln for ln in lines if ln.endswith(":") and " - " in ln] == [
        "B - A = script - oracle:",
        "B - A = random - oracle:",
        "B - A = random - script:",
    ]
    headers = [ln for ln in lines if ln.startswith("│ #")]
    named = ("difference", "p_value", "p_holm", "means A → B")  # both agents' means fit, in one cell
    assert len(headers) == 3 and all(all(name in h for name in named) for h in headers)
    assert not any("do not fit" in ln for ln in lines)
    means = [ln for ln in lines if ln.startswith("│ 1 ┆ conclusion_score")]
    assert all("1.00 → " in ln for ln in means[:2])  # the oracle, A of its pairs, first
    assert sum(ln.startswith("interval method (every row)") for ln in lines) == 1  # said once
    # and every later table points to the notes it shares with the first
    assert sum(ln.startswith("(") and "as under the first table" in ln for ln in lines) == 2
    assert any(
        ln.startswith("Holm's families: the conclusion score is the headline, adjusted over the 3") for ln in lines
    )


def test_every_text_says_the_holm_family_the_code_uses():
    """The report said p-values were "adjusted by Holm over the whole table" while the code adjusts
    within one metric, level and judge over the pairs of agents: every place says the latter."""
    from pathlib import Path

    from click.testing import CliRunner

    from inquitree.cli import main

    root = Path(__file__).resolve().parent.parent
    report = (root / "warehouse" / "report_pages" / "index.html.j2").read_text()
    helped = " ".join(CliRunner().invoke(main, ["compare", "--help"]).output.split())
    for text in (report, helped):
        assert "whole table" not in text and "every p-value printed" not in text
        assert "one metric at one" in text and "over the pairs of agents" in text


def test_a_narrow_screen_shortens_words_never_a_number_with_its_interval(monkeypatch):
    """Below 100 columns text cells are shortened to 20 characters; a difference such as
    -36.4 [-46.8, -25.8] lost its bracket that way: only cells with words in them are shortened."""
    import polars as pl

    from inquitree.cli.tables import fitting

    monkeypatch.setenv("COLUMNS", "80")
    df = pl.DataFrame({"tree": ["it18-01-grid-cells-reference-frames"], "difference": ["-36.4 [-46.8, -25.8]"]})
    shown = fitting(df)
    assert shown["difference"][0] == "-36.4 [-46.8, -25.8]" and shown["tree"][0].endswith("…")
    # nor one whose interval is a word: cut there, coverage lost the agent's own part
    own = pl.DataFrame({"agent": ["constant"], "coverage (own)": ["1.00 [no interval] (0.00)"]})
    assert fitting(own)["coverage (own)"][0] == "1.00 [no interval] (0.00)"


def test_a_note_under_a_table_is_never_cut_where_it_shares_a_line_with_another(capsys):
    """Two warnings that wrap to the same continuation line: the second was printed without it
    (the lines were said once each, not the notes), so it stopped mid-sentence."""
    from inquitree.cli.tables import _say_once

    first = ["WARNING (rows 1-2): rank: 8 papers: the rank intervals hold if each pair's", "  differences spread"]
    second = [
        "WARNING (row 3): coverage: one more paper; rank: 8 papers: the rank intervals hold if",
        "  differences spread",
    ]
    said: set[str] = set()
    _say_once(first + second, said)
    assert capsys.readouterr().out.splitlines() == first + second
    _say_once(second, said)  # under a later table: the whole note is pointed to, not cut
    assert capsys.readouterr().out.splitlines() == ["(and 1 note(s) as under the first table)"]


def test_a_judge_that_scored_no_pair_is_a_line_that_says_so_not_a_table_of_empty_cells(capsys):
    """A judge whose verdicts failed on one agent's episodes printed a table of metrics with no
    number in it, and no word why."""
    import polars as pl

    from inquitree.cli.compare import _without_unpaired

    rows = pl.DataFrame(
        {
            "judge_id": ["embedding", "embedding", "openai:j", "openai:j"],
            "agent_a": ["random"] * 4,
            "agent_b": ["constant"] * 4,
            "metric": ["conclusion_score", "coverage"] * 2,
            "paired_cells": [16, 16, 0, 0],
            "only_a": [0, 0, 0, 0],
            "only_b": [0, 0, 2, 2],
        }
    )
    kept = _without_unpaired(rows)
    said = " ".join(capsys.readouterr().out.split())
    assert kept["judge_id"].unique().to_list() == ["embedding"]
    assert "judge openai:j: no cell of random and constant has its scores for both" in said
    assert "0 cell(s) of random alone and 2 of constant alone" in said
