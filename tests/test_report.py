"""The HTML report, opened in headless Chromium (Debian's package; scripts/test.sh installs it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import pytest

from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore
from inquitree.warehouse.report import write_report
from inquitree.warehouse.warehouse import Warehouse

from enginekit import OracleAgent, RandomAgent, ScriptAgent, play
from tests_support import CHROMIUM_ARGS

MARKDOWN_MISS = (
    "THOUGHT: **Plan:** I will try `lunch` first.\n- one *idea*\n- <script>window.reportErrors += 100</script>\n"
    "ACTION: Let us order lunch from the new noodle place downtown."
)


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (scripts/test.sh installs Debian's package)")
        pytest.skip("chromium is not installed")
    return path


def dump_dom(url: str, width: int = 900) -> str:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run(
            [
                chromium(),
                "--headless",
                *CHROMIUM_ARGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=5000",
                f"--window-size={width},800",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.fixture
def report_dir(sqlite_url, tmp_path):
    store = EventStore(sqlite_url)
    tree = resolve_tree("synthetic-diamond-4")
    for seed in range(3):
        for a in (0, 4):
            play(tree, RandomAgent(tree, seed), store=store, seed=seed, randomness=a)
    play(tree, OracleAgent(tree), store=store, randomness=4, seed=5)
    play(tree, OracleAgent(tree), store=store, randomness=0, seed=5)
    # A model that answers in Markdown, with markup that must not run or render as HTML.
    rounds = []
    for i in range(tree.n):
        rounds += [MARKDOWN_MISS] * 10 + [
            "ACTION: " + ("explore_new_subtopic" if i < tree.n - 1 else "draw_conclusion")
        ]
    rounds.append("ACTION:\n(1) Sleep matters.")
    script = tmp_path / "markdown.txt"
    script.write_text("\n---\n".join(rounds))
    play(tree, ScriptAgent(script), store=store, seed=9)
    store.close()
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        write_report(wh, tmp_path / "report")
    return tmp_path / "report"


def _checks(dom: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(\d+)"', dom.split("<body", 1)[1].split(">", 1)[0])}


def test_report_figures_and_an_episode_page_render_in_chromium(report_dir):
    index = dump_dom(f"file://{report_dir / 'index.html'}")
    checks = _checks(index)
    # Every figure loads and has a caption; no script error; nothing wider than a 900-pixel window.
    assert checks["figures"] == 5 and checks["figures-loaded"] == 5, checks
    assert checks["figures-uncaptioned"] == 0 and checks["script-errors"] == 0, checks
    assert checks["page-overflow"] == 0, checks
    assert "Leaderboard (Table 2" in index and "Figure 3c" in index and "The paper's Figure 3b" in index
    # The oracle never redoes at level 0 here, so Fig. 3b says why its line is missing.
    assert "oracle is not drawn: its level-0 redo rate is 0" in index
    links = re.findall(r'href="(episodes/[^"]+\.html)"', index)
    assert len(links) == 9
    pages = [dump_dom(f"file://{report_dir / link}") for link in links]
    oracle = next(p for p in pages if "agent <b>oracle</b>, randomness 4" in p)
    assert oracle.count('class="turn env') >= 4 and oracle.count('class="turn agent') >= 4
    assert "FAKE #0" in oracle  # the oracle at a=4 meets fakes and redoes them; the viewer shows the draws
    assert "embedding:hash" in oracle  # its verdicts and scores
    md = next(p for p in pages if "agent <b>script</b>" in p)
    assert "<strong>Plan:</strong>" in md and "<code>lunch</code>" in md and "<em>idea</em>" in md
    assert "**" not in md.split('id="dialogue"')[1] and "&lt;script&gt;" in md  # shown as text, never run
    for page in pages:
        c = _checks(page)
        assert c["script-errors"] == 0 and c["page-overflow"] == 0, c


def test_registry_and_tree_pages(report_dir):
    registry = dump_dom(f"file://{report_dir / 'registry.html'}")
    assert _checks(registry)["page-overflow"] == 0 and "gpt-5" in registry and "2024-09-30" in registry
    # The agents of the episodes have no registry entry: listed as of unknown cutoff, not dropped.
    assert re.search(r"<td>oracle</td>.*?<td>unknown</td>", registry, flags=re.S)
    trees = dump_dom(f"file://{report_dir / 'trees.html'}", width=800)
    assert _checks(trees)["page-overflow"] == 0
    assert trees.count("<tr><td>") == 18 and "NC Biology" in trees and "Communications Biology" in trees
    assert "between 2023-01-01 and ?" in trees  # a date known only by its lower bound


def test_markdown_is_escaped_before_it_is_rendered():
    from inquitree.warehouse.report import markdown_html

    assert markdown_html("**a** and *b* and `c`") == "<strong>a</strong> and <em>b</em> and <code>c</code>"
    assert markdown_html("1. x\n2. **y**") == "<ol><li value='1'>x</li><li value='2'><strong>y</strong></li></ol>"
    assert markdown_html("<img src=x onerror=alert(1)> **<b>**") == (
        "&lt;img src=x onerror=alert(1)&gt; <strong>&lt;b&gt;</strong>"
    )
    assert markdown_html("2 * 3 * 4") == "2 * 3 * 4"  # arithmetic is not emphasis


def test_report_without_sync_ignores_the_registry_environment(report_dir, monkeypatch):
    """$INQUITREE_REGISTRY is read by a sync; a report that does not sync must not refuse it as
    if --registry had been given."""
    from click.testing import CliRunner

    from inquitree.cli import main

    registry = report_dir.parent / "models.json"
    registry.write_text('{"models": [{"model": "m", "cutoff": null}]}')
    monkeypatch.setenv("INQUITREE_REGISTRY", str(registry))
    w = str(report_dir.parent / "w.duckdb")
    ok = CliRunner().invoke(main, ["report", "--out", str(report_dir.parent / "r2"), "--warehouse", w, "--no-sync"])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(
        main,
        ["report", "--out", str(report_dir.parent / "r3"), "--warehouse", w, "--no-sync", "--registry", str(registry)],
    )
    assert bad.exit_code == 2 and "--registry is read by the sync: it needs --sync" in bad.output


def test_fig4s_notes_count_the_papers_when_no_verdict_was_usable():
    """Figure 4's note printed "None paper(s) not split" where the judge failed on every episode
    (the row's score, and the papers it rests on, are NULL): the papers are counted from its trees."""
    import polars as pl

    from inquitree.warehouse.report import fig4_notes

    df = pl.DataFrame(
        {
            "agent": ["m", "m"],
            "split": ["cutoff unknown", "date undetermined"],
            "papers": [None, 2],
            "trees": ["t1, t2, t3", "t4, t5"],
            "cutoff": [None, "2024-06"],
        }
    )
    notes = fig4_notes(df)
    assert notes[0].startswith("m: its model's training cutoff is unknown") and "3 paper(s) not split" in notes[0]
    assert "None" not in " ".join(notes) and notes[1].startswith("m: 2 paper(s) whose publication date")


def test_the_reports_leaderboard_is_one_table_per_judge():
    """Two judges shared one table, the judge in a column cut off at 1280 px: each judge now has
    its own table under its id, as in the terminal."""
    import polars as pl

    from inquitree.warehouse.report import tables_per_judge

    df = pl.DataFrame({"agent": ["a", "b", "a"], "judge_id": ["j1", "j1", "j2<x>"], "coverage": [0.5, 0.25, 0.5]})
    page = tables_per_judge(df)
    assert page.count("<table>") == 2 and "<h3>judge j1</h3>" in page and "<h3>judge j2&lt;x&gt;</h3>" in page
    assert "<th>judge_id</th>" not in page
    one = tables_per_judge(df.filter(pl.col("judge_id") == "j1"))
    assert one.count("<table>") == 1 and "<h3>" not in one
