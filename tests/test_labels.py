"""A lab's own labels (core/instrument/labels.py, `inquitree label`, `instrument measure --labels`):
a seeded, stratified sample of a campaign's moves and conclusions, read blind from standard input,
kept as LabelRecorded events, continued after a stop, a second labeller beside the first, and the
matcher and judges measured on them."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.events import EventStore
from inquitree.stats import PPI_FEW_LABELS_INTERVAL

from openai_server import OpenAICompatibleServer

TREES = [
    "it18-01-grid-cells-reference-frames",
    "it18-04-reward-relative-code",
    "it18-10-dopamine-hidden-state-inference",
]


def _agent(messages: list[dict]) -> str:
    """A scripted model: at the Topic it restates the topic's first words (a move that means no
    subtopic) every other turn and else asks for a new subtopic; elsewhere it proposes, runs, and
    concludes with one sentence."""
    last = messages[-1]["content"]
    if "conclusion" in last.lower() and "list" in last.lower():
        return 'THOUGHT: done\nACTION: ["The cells encode position relative to reward."]'
    if len(messages) % 4 == 2:  # markup in the reply: the viewer's labelling page must show it as text
        return 'THOUGHT: look\nACTION: <img src=x onerror="window.__hit=1"> how the brain encodes things in general'

    return "THOUGHT: next\nACTION: explore_new_subtopic"


def _campaign(d) -> str:
    db = f"sqlite:///{d / 's.sqlite'}"
    with OpenAICompatibleServer(_agent) as server:
        suite = d / "lab.toml"
        suite.write_text(
            'name = "lab"\n'
            f"trees = {json.dumps(TREES)}\n"
            'agents = ["oracle", "openai:m"]\njudges = ["embedding"]\nrandomness = [0]\nruns = 1\nseed = 0\n'
            f'embedder = "local"\nbase_url = "{server.base_url}"\nconcurrency = 2\n'
        )
        out = CliRunner(env={"OPENAI_API_KEY": None}).invoke(main, ["suite", "run", str(suite), "--db", db])
        assert out.exit_code == 0, out.output
    return db


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """A suite of the oracle and a scripted model (on a loopback server) on three trees."""
    d = tmp_path_factory.mktemp("labels")
    return _campaign(d), d


def _said(result) -> str:
    return " ".join(result.output.split())


def _label(db: str, kind: str, answers: list[str], *extra: str):
    args = ["label", kind, "--suite", "lab", "--db", db, *extra]
    return CliRunner().invoke(main, args, input="".join(a + "\n" for a in answers))


def test_a_sample_is_seeded_stratified_and_blind(campaign):
    from inquitree.core import instrument as labels

    db, _ = campaign
    with EventStore(db, create=False) as store:
        found = labels.campaign_moves(store, "lab")
        again = labels.draw_sample(found, 8, seed=4)
        assert [m.key for m in again] == [m.key for m in labels.draw_sample(found, 8, seed=4)]
        assert [m.key for m in again] != [m.key for m in labels.draw_sample(found, 8, seed=5)]
        strata = {m.stratum for m in found}
        assert {"topic", "subtopic"} <= {s[1] for s in strata} and {"oracle", "m"} <= {s[0] for s in strata}
        shares = {s: sum(m.stratum == s for m in again) for s in strata}
        small = {s: sum(m.stratum == s for m in found) for s in strata}
        # each stratum an equal share, or all it has
        assert all(shares[s] in (small[s], 8 // len(strata), 8 // len(strata) + 1) for s in strata), shares
        assert len(labels.draw_sample(found, 10_000, seed=0)) == len(found)  # larger than what exists: all of it
    out = _label(db, "moves", [], "--sample", "6", "--seed", "1", "--labeller", "ann")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    said = out.output.lower()
    for never in ("cosine", "accepted", "tau", "score", "verdict", "oracle"):
        assert never not in said, never


def test_moves_are_labelled_from_standard_input_kept_as_events_and_continued(campaign):
    db, _ = campaign
    first = _label(db, "moves", ["?", "bogus", "none", "s", "q"], "--sample", "6", "--seed", "2", "--labeller", "ann")
    assert first.exit_code == 0, first.output
    assert "not an answer here: 'bogus'" in _said(first) and "s skips this item" in _said(first)
    assert "2 answers kept now; ann has answered 2 of 6" in _said(first)
    with EventStore(db, create=False) as store:
        recorded = store.read_stream("labels/moves.lab.all.n6.seed2")
    assert [r.event_type for r in recorded] == ["LabelRecorded"] * 2
    got = [r.payload for r in recorded]
    assert [g["answer"] for g in got] == ["none", "skip"]
    assert {(g["labeller"], g["kind"], g["suite"], g["seed"], g["size"]) for g in got} == {("ann", "move", "lab", 2, 6)}
    assert all(g["stream_id"].startswith("episode/lab.") and g["position"] >= 1 for g in got)
    # the same command continues after the two answered: 4 to go
    rest = _label(db, "moves", ["none"] * 4, "--sample", "6", "--seed", "2", "--labeller", "ann")
    assert "ann has answered 2, 4 to go" in _said(rest) and "ann has answered 6 of 6" in _said(rest)
    done = _label(db, "moves", [], "--sample", "6", "--seed", "2", "--labeller", "ann")
    assert "0 to go" in _said(done)
    # a second labeller labels the same sample beside the first, and their agreement is said
    bob = _label(db, "moves", ["none"] * 6, "--sample", "6", "--seed", "2", "--labeller", "bob")
    assert re.search(r"agreement of ann and bob on the 5 items both answered: 100%", _said(bob)), bob.output


def test_instrument_measure_on_the_campaigns_labels(campaign):
    """Label every conclusion item by reading, and every sampled move as the engine should have read
    it; the measurement counts what it says it counts, per agent."""
    from inquitree.core import instrument as labels

    db, _ = campaign
    with EventStore(db, create=False) as store:
        items = labels.campaign_conclusions(store, "lab")
        picked = labels.draw_sample(items, 10, seed=0)
        moves = labels.draw_sample(labels.campaign_moves(store, "lab"), 12, seed=7)
    # conclusions: stated where the embedding judge gave full credit, else absent (so the judge agrees
    # on every credited item and misses the partial ones)
    answers = ["stated" if c.verdicts[next(iter(c.verdicts))] == 1.0 else "absent" for c in picked]
    out = _label(db, "conclusions", answers, "--sample", "10", "--labeller", "cy")
    assert out.exit_code == 0, out.output
    # moves: the engine's decision when it accepted, else none; an oracle move is its candidate
    said = [(m.best if m.accepted else "none") for m in moves]
    out = _label(db, "moves", said, "--sample", "12", "--seed", "7", "--labeller", "cy")
    assert out.exit_code == 0, out.output
    found = json.loads(
        CliRunner()
        .invoke(main, ["instrument", "measure", "--labels", "--db", db, "--format", "json", "--draws", "200"])
        .output
    )
    matcher = found["matcher"]
    assert matcher["labeller"] == "cy" and matcher["labelled"] == 12
    for block in matcher["overall"].values():  # labelled as decided: nothing misread
        assert block["counts"]["misread"] == 0 and block["counts"]["false_match"] == 0
    (judge,) = found["judges"]["judge"].values()
    overall = judge["overall"]
    partial = sum(1 for c in picked if 0 < (c.verdicts[next(iter(c.verdicts))] or 0) < 1)
    assert overall["items"] == 10 and overall["confusion"]["absent"]["partial"] == partial
    assert overall["agreement"] == round((10 - partial) / 10, 4)
    table = CliRunner().invoke(main, ["instrument", "measure", "--labels", "--db", db, "--draws", "200"])
    assert table.exit_code == 0 and max(len(line) for line in table.output.splitlines()) <= 80
    assert "matcher, on 12 labelled moves (cy)" in _said(table)


def test_labels_sync_into_the_warehouse(campaign, tmp_path):
    db, _ = campaign
    assert _label(db, "moves", ["none"], "--sample", "3", "--seed", "9", "--labeller", "dee").exit_code == 0
    wh = str(tmp_path / "w.duckdb")
    assert CliRunner().invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    out = CliRunner().invoke(
        main,
        [
            "sql",
            "--warehouse",
            wh,
            "--format",
            "json",
            "SELECT labeller, kind, answer, labelled_stream FROM ev_label_recorded WHERE labeller = 'dee'",
        ],  # fmt: skip
    )
    rows = json.loads(out.output)
    assert len(rows) == 1 and rows[0]["answer"] == "none" and rows[0]["labelled_stream"].startswith("episode/lab.")


def test_no_labels_and_a_bad_labeller_name_are_said_in_one_line(campaign, tmp_path):
    db, _ = campaign
    empty = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert CliRunner().invoke(main, ["db", "upgrade", "--db", empty]).exit_code == 0
    out = CliRunner().invoke(main, ["instrument", "measure", "--labels", "--db", empty])
    assert out.exit_code != 0 and "no labels in this store" in _said(out)
    bad = _label(db, "moves", [], "--sample", "2", "--labeller", "../x")
    assert bad.exit_code == 2 and "labeller name" in _said(bad)
    none = CliRunner().invoke(main, ["label", "moves", "--suite", "nothing", "--sample", "2", "--db", db])
    assert none.exit_code != 0 and "has no matched moves" in _said(none)


def test_the_corrected_scores_simulation_is_what_the_statistics_page_shows():
    """docs/statistics.md shows studies/corrected.py's table as the study writes it, and its summary
    of the table is the table's."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "studies"))
    import corrected

    result = json.loads((root / "studies" / "results" / "corrected.json").read_text())
    page = (root / "docs" / "statistics.md").read_text()
    assert "\n".join(corrected.table(result)) in page
    rows = result["rows"]
    few = [r["corrected_covers"] for r in rows if r["labelled_items"] < 20]
    some = [r["corrected_covers"] for r in rows if 20 <= r["labelled_items"] < PPI_FEW_LABELS_INTERVAL]
    enough = [r["corrected_covers"] for r in rows if r["labelled_items"] >= PPI_FEW_LABELS_INTERVAL]
    said = " ".join(page.split())
    assert f"in {100 * min(few):.1f}-{100 * max(few):.1f}% of campaigns" in said
    assert f"to {PPI_FEW_LABELS_INTERVAL - 1} it held {100 * min(some):.1f}-{100 * max(some):.1f}%" in said
    assert f"{sum(c < result['goal'] for c in some)} of the {len(some)} cells came out below 93%" in said
    assert f"from {PPI_FEW_LABELS_INTERVAL} on it held {100 * min(enough):.1f}-{100 * max(enough):.1f}%" in said
    # the guarantee: every cell below the goal is one whose rows the leaderboard warns
    assert min(enough) >= result["goal"] and "NOT warned" not in page
    assert {r["campaigns"] for r in rows} == {400} and len(rows) == 48
    assert "\n".join(corrected.difference_table(result)) in page
    held = [r["covers"] for r in result["differences"]]
    assert f"held the true difference in {100 * min(held):.1f}-{100 * max(held):.1f}% of campaigns" in said
    good = [
        r["corrected_width"] / r["labels_alone_width"]
        for r in rows
        if r["judge"] == "right 0.91" and r["labelled_items"] >= 10
    ]
    assert f"narrows the interval to {100 * min(good):.0f}-{100 * max(good):.0f}% of the labels' alone" in said


def test_the_warehouse_reads_labels_on_the_scale_the_labels_module_does():
    from pathlib import Path

    from inquitree.core.instrument import LABEL_VALUE

    views = (Path(__file__).resolve().parent.parent / "warehouse" / "views.sql").read_text()
    for answer, value in LABEL_VALUE.items():
        assert f"WHEN '{answer}' THEN {value}" in views


def _leaderboard(db: str, wh: str) -> dict[str, dict]:
    assert CliRunner().invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    out = CliRunner().invoke(
        main, ["query", "table2_leaderboard", "--warehouse", wh, "--suite", "lab", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    return {r["agent"]: r for r in json.loads(out.output)}


def test_the_leaderboard_corrects_the_judge_with_the_labels_and_says_when_there_are_none(tmp_path):
    """No labels: the corrected columns are empty and the table says the score is the judge's alone.
    Every item read as absent: the corrected score is the labels' mean over papers, 0, whatever the
    judge credited; the terminal table shows it beside the judge's at 80 columns."""
    from inquitree.core import instrument as labels

    db = _campaign(tmp_path)
    wh = str(tmp_path / "w.duckdb")
    before = _leaderboard(db, wh)
    assert all(r["conclusion_score_corrected"] is None and r["labelled_items"] is None for r in before.values())
    assert all("the judge's alone" in r["corrected_method"] for r in before.values())
    with EventStore(db, create=False) as store:
        everything = labels.campaign_conclusions(store, "lab")
    out = _label(db, "conclusions", ["absent"] * len(everything), "--sample", str(len(everything)), "--labeller", "ed")
    assert out.exit_code == 0, out.output
    after = _leaderboard(db, wh)
    oracle = after["oracle"]
    assert oracle["conclusion_score"] > 0.5 and oracle["conclusion_score_corrected"] == 0.0
    assert oracle["labelled_items"] == sum(c.agent == "oracle" for c in everything)
    assert "prediction-powered" in oracle["corrected_method"]
    # every reading 0 and the resamples all 0: no interval of no width, and the notes say why
    assert oracle["conclusion_score_corrected_ci_low"] is None and "no interval" in oracle["interval_warning"]
    # compare pairs the corrected scores the same way: both agents read as stating nothing, B - A is 0
    pairs = json.loads(
        CliRunner().invoke(main, ["compare", "oracle", "m", "--warehouse", wh, "--format", "json"]).output
    )
    (row,) = [r for r in pairs if r["metric"] == "conclusion_score_corrected" and r["randomness"] == 0]
    assert (row["difference"], row["mean_a"], row["mean_b"], row["role"], row["p_value"]) == (
        0.0,
        0.0,
        0.0,
        "corrected",
        None,
    )
    assert row["papers"] == 3 and "prediction-powered difference" in row["interval_method"]
    shown = CliRunner(env={"COLUMNS": "80"}).invoke(
        main, ["query", "table2_leaderboard", "--warehouse", wh, "--suite", "lab"]
    )
    header = next(line for line in shown.output.splitlines() if "agent" in line and "conclusion_score" in line)
    # a column or, when every row has the same value (here 0 for both agents), a line above the table
    assert "corrected" in header or "corrected (every row): 0.00" in shown.output, shown.output
    assert max(len(line) for line in shown.output.splitlines()) <= 80
    # moves labelled as the engine read them: nothing misread
    with EventStore(db, create=False) as store:
        sample = labels.draw_sample(labels.campaign_moves(store, "lab"), 6, seed=3)
    said = [(m.best if m.accepted else "none") for m in sample]
    assert _label(db, "moves", said, "--sample", "6", "--seed", "3", "--labeller", "ed").exit_code == 0
    rows = _leaderboard(db, wh)
    labelled = [r for r in rows.values() if r["labelled_moves"]]
    assert labelled and all(r["matcher_misread"] == 0.0 for r in labelled)
    assert sum(r["labelled_moves"] for r in labelled) == 6
    # the instrument as measured on the campaign's own labels, said ahead of the shipped measurement
    for r in labelled:
        n = r["labelled_moves"]
        assert f"on {n} of this campaign's moves (1 labeller): the matcher misread 0% 0/{n}" in r["labelled_validity"]
    oracle = rows["oracle"]
    assert (
        f"on {oracle['labelled_items']} of this campaign's conclusion items (1 labeller): the judge agrees"
        in (oracle["labelled_validity"])
    )
    assert all(r["labelled_validity"] is None for r in before.values())
    # the report and the viewer's figures page show the leaderboard whole: the corrected score beside the judge's
    out = CliRunner().invoke(main, ["report", "--out", str(tmp_path / "report"), "--warehouse", wh, "--db", db])
    assert out.exit_code == 0, out.output
    page = (tmp_path / "report" / "index.html").read_text()
    assert "conclusion_score_corrected" in page and "matcher_misread" in page


def test_the_same_sample_is_labelled_in_the_browser_with_a_write_token(campaign, tmp_path):
    """inquitree view --label: /label shows one item as the terminal does (the reply's markup as
    text), each button appends the same LabelRecorded events, a request without the write token is
    refused, and the command refuses to serve it beyond loopback."""
    import os
    import urllib.error
    import urllib.request

    from tests_support import chromium_browser, chromium_path, served

    pytest.importorskip("starlette")
    pytest.importorskip("playwright")
    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (scripts/test.sh installs Debian's package)")
        pytest.skip("chromium is not installed")
    from inquitree.viewer.app import create_app
    from inquitree.viewer.pages.label import Labelling

    db, _ = campaign
    wh = str(tmp_path / "w.duckdb")
    assert CliRunner().invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    labelling = Labelling(db, "move", "lab", "m", 4, 11, "fay")
    with pytest.raises(ValueError, match="loopback"):
        create_app(wh, db, host="0.0.0.0", labelling=labelling)
    refused = CliRunner().invoke(
        main,
        [
            "view",
            "--db",
            db,
            "--warehouse",
            wh,
            "--host",
            "0.0.0.0",
            "--label",
            "moves",
            "--suite",
            "lab",
            "--sample",
            "2",
        ],
    )
    assert refused.exit_code == 2 and "loopback" in refused.output
    app = create_app(wh, db, labelling=labelling)
    with served(app) as base:
        for url, data in (
            (f"{base}/label", None),
            (f"{base}/label?token=wrong", None),
            (f"{base}/label", b"token=&key=x&answer=none"),
        ):
            with pytest.raises(urllib.error.HTTPError) as no:
                urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10)
            assert no.value.code == 403
        with chromium_browser() as browser:
            page = browser.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{base}/label?token={labelling.token}")
            assert "fay has answered 0 of 4" in page.inner_text("#progress")
            shown = []
            for k in range(4):
                assert f"Item {k + 1} of 4" in page.inner_text("#item h2")
                text = page.inner_text("#item")
                shown.append(text)
                for never in ("cosine", "accepted", "oracle", "verdict"):
                    assert never not in text.lower()
                page.click("button[value=none]")
            assert "Every item of this sample is answered" in page.inner_text("#finished")
            assert any('<img src=x onerror="window.__hit=1">' in t for t in shown)  # shown as text, not run
            assert page.evaluate("window.__hit") is None and not errors
    labelling.close()
    with EventStore(db, create=False) as store:
        kept = [r.payload for r in store.read_stream("labels/moves.lab.m.n4.seed11")]
    assert [(k["labeller"], k["answer"], k["kind"]) for k in kept] == [("fay", "none", "move")] * 4
    # the terminal continues the same sample: nothing left for fay
    assert "fay has answered 4, 0 to go" in _said(
        _label(db, "moves", [], "--sample", "4", "--seed", "11", "--agent", "m", "--labeller", "fay")
    )
