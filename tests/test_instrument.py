"""The instrument measured (docs/instrument.md, DECISIONS #32): `inquitree instrument measure` on the
shipped sets, the shipped record of measurements that tables state, a lab's own record, and
own_coverage, which counts only the subtopics an agent reached by its own recognised moves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.instrument import measure_judge, measure_matcher
from inquitree.core.instrument.measured import SHIPPED, judge_reading, matcher_reading, record
from inquitree.core.players.embed import LocalEmbedder
from inquitree.core.players.kinds import make_embedder, make_judge

RECORD = json.loads(SHIPPED.read_text())
MINILM_DEFAULT = "embedding:local:all-MiniLM-L6-v2-int8:0.85/0.7"


def shipped(kind: str, key: str, value: str) -> dict:
    return next(m for m in RECORD[kind] if m[key] == value)


@pytest.fixture(scope="module")
def local_matcher() -> dict:
    return measure_matcher(make_embedder("local", cache=False))


def test_the_shipped_record_is_what_the_sets_measure(local_matcher):
    """The record every table states is recomputed here from the labelled sets: the local matcher
    at its defaults and both embedding judges, to the last digit and interval."""
    assert local_matcher == shipped("matchers", "embedder", LocalEmbedder.id)
    emb = make_embedder("local", cache=False)
    for spec in ("embedding", "embedding:0.78/0.74"):
        judge = make_judge(spec, emb)
        assert measure_judge(judge) == shipped("judges", "judge", judge.id)


def test_the_measured_figures_are_the_documented_ones(local_matcher):
    """docs/instrument.md quotes these: the default matcher's held-out Topic and Subtopic rates with
    intervals over trees, and the default judge's held-out kappa (0.17, as studies/judging.py found
    from the study's recorded verdicts)."""
    topic, subtopic = local_matcher["topic"]["held_out"], local_matcher["subtopic"]["held_out"]
    assert (topic["recognised"], topic["false_match"], topic["wrong_candidate"]) == (0.3333, 0.1489, 0.0635)
    assert (topic["n_intended"], topic["n_null"], topic["counts"]) == (
        63,
        94,
        {"recognised": 21, "false_match": 14, "wrong_candidate": 4},
    )
    assert topic["intervals"]["recognised"] == [0.1739, 0.4918]
    assert (subtopic["recognised"], subtopic["false_match"], subtopic["wrong_candidate"]) == (0.9623, 0.8, 0.0)
    assert (subtopic["n_intended"], subtopic["n_null"], subtopic["counts"]["false_match"]) == (53, 5, 4)
    # the study's criterion, false matches of all actions, kept beside them
    assert (topic["false_of_all"], subtopic["false_of_all"]) == (0.1146, 0.069)
    assert (local_matcher["tau"], local_matcher["tau_study"], local_matcher["thresholds"]) == (
        0.75,
        0.42,
        "the embedder's defaults",
    )
    judge = shipped("judges", "judge", MINILM_DEFAULT)["held_out"]
    assert (judge["items"], judge["kappa"], judge["failed"]) == (72, 0.1743, 0)


def test_the_nomic_measurement_is_the_benchs():
    """nomic needs its server, which CI does not start: its entry in the record was measured with
    one (studies/instrument_record.py), and it must say what studies/matching.py measured with the same
    server at the same thresholds (both keep their results when the server is absent)."""
    from inquitree.core.players.embed import NomicEmbedder

    bench = json.loads((SHIPPED.parents[3] / "studies" / "results" / "matching.json").read_text())
    measured = next(r for r in bench["results"] if r["embedder"] == NomicEmbedder.id)
    chosen = measured["study_threshold_with_default_tau"]
    entry = shipped("matchers", "embedder", NomicEmbedder.id)
    assert (entry["tau"], entry["tau_study"]) == (chosen["tau"], chosen["tau_study"]) == (0.82, 0.71)
    for state in ("topic", "subtopic"):
        b = chosen["held_out_by_state"][state]
        held = entry[state]["held_out"]
        # the study counts false matches of all actions: the record keeps that beside its own rates
        assert (held["recognised"], held["false_of_all"], held["wrong_candidate"]) == (
            b["recognised"],
            b["false_match"],
            b["wrong_candidate"],
        )
        assert held["intervals"]["recognised"] == b["over_trees"]["recognised"]


def test_instrument_measure_reports_both_splits_per_state_in_json_and_in_80_columns(local_matcher):
    runner = CliRunner()
    out = runner.invoke(main, ["instrument", "measure", "--embedder", "local", "--format", "json", "--draws", "200"])
    assert out.exit_code == 0, out.output
    found = json.loads(out.output)
    for state in ("topic", "subtopic"):
        for split in ("calibration", "held_out"):
            point = {k: found[state][split][k] for k in ("recognised", "false_match", "wrong_candidate")}
            assert point == {k: local_matcher[state][split][k] for k in point}  # points do not depend on draws
    assert found["chosen"] == {"tau": 0.76, "tau_study": 0.42}
    table = runner.invoke(main, ["instrument", "measure", "--judge", "embedding:0.78/0.74", "--draws", "200"])
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0] == "judge: embedding:local:all-MiniLM-L6-v2-int8:0.78/0.74"
    held_out = next(line for line in lines if line.startswith("held-out "))
    assert held_out.split()[1:4] == ["72", "70.8%", "0.35"]
    matcher = runner.invoke(main, ["instrument", "measure", "--embedder", "local", "--tau", "0.8", "--draws", "200"])
    assert matcher.exit_code == 0, matcher.output
    assert "tau 0.8, tau_study 0.8 (given)" not in matcher.output  # tau_study is chosen for the given tau
    assert "(given)" in matcher.output and max(len(line) for line in matcher.output.splitlines()) <= 80
    assert matcher.output.rstrip().endswith("topic missed, subtopic missed")


def test_instrument_measure_asks_for_what_to_measure():
    out = CliRunner().invoke(main, ["instrument", "measure"])
    assert out.exit_code == 2 and "--embedder SPEC (the matcher) or --judge SPEC" in out.output
    out = CliRunner().invoke(main, ["instrument", "measure", "--judge", "embedding", "--tau", "0.5"])
    assert out.exit_code == 2 and "--tau and --tau-study are the matcher's" in out.output


def test_readings_name_the_measurement_or_say_unmeasured(tmp_path, monkeypatch):
    """What a table prints under its figures: the shipped measurement of the default instruments,
    "unmeasured" for any other, and a lab's own measurement once it is recorded."""
    monkeypatch.setenv("INQUITREE_INSTRUMENT", str(tmp_path / "lab" / "instrument.json"))
    assert judge_reading(MINILM_DEFAULT).startswith("kappa 0.17 [0.01, 0.32] against a careful reading of 72 held-out")
    assert matcher_reading(LocalEmbedder.id, 0.75, 0.42).startswith(
        "local:all-MiniLM-L6-v2-int8 at tau 0.75/0.42, on held-out trees: Topic recognised 33% [17, 49] 21/63, "
        "false 15% 14/94, wrong 6% 4/63; Subtopic recognised 96% 51/53, "
        "false 80% 4/5 (n < 20), wrong 0% 0/53"
    )
    assert matcher_reading(LocalEmbedder.id, 0.75, None).startswith("unmeasured")  # tau at both states
    assert judge_reading("embedding:local:all-MiniLM-L6-v2-int8:0.9/0.8").startswith("unmeasured")
    lab = measure_judge(make_judge("embedding:0.9/0.8", make_embedder("local", cache=False)), draws=100)
    path = record(lab)
    assert path == tmp_path / "lab" / "instrument.json"
    assert judge_reading("embedding:local:all-MiniLM-L6-v2-int8:0.9/0.8").startswith(
        f"kappa {lab['held_out']['kappa']:.2f}"
    )
    record(lab)  # the same instrument again: replaced, not kept twice
    assert len(json.loads(path.read_text())["judges"]) == 1


def test_own_coverage_counts_only_the_agents_own_moves(tmp_path):
    """An agent that answers explore_new_subtopic to everything is walked through every subtopic by
    forced transitions: coverage 1.00, as the oracle's, but own_coverage 0."""
    script = tmp_path / "explore.txt"
    script.write_text("\n---\n".join(["ACTION: explore_new_subtopic"] * 100))
    db = f"sqlite:///{tmp_path / 's.sqlite'}"
    wh = str(tmp_path / "w.duckdb")
    runner = CliRunner()
    for agent in (f"script:{script}", "oracle"):
        out = runner.invoke(main, ["play", "--tree", "synthetic-chain-7", "--agent", agent, "--record", "--db", db])
        assert out.exit_code == 0, out.output
    assert runner.invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    out = runner.invoke(main, ["query", "episode_summary", "--warehouse", wh, "--one-off", "--format", "json"])
    rows = {r["agent"]: r for r in json.loads(out.output)}
    assert (rows["script"]["coverage"], rows["script"]["own_coverage"], rows["script"]["forced_transitions"]) == (
        1.0,
        0.0,
        14,
    )
    assert (rows["oracle"]["coverage"], rows["oracle"]["own_coverage"], rows["oracle"]["forced_transitions"]) == (
        1.0,
        1.0,
        0,
    )


def test_the_leaderboard_and_the_report_say_how_well_their_instrument_reads(tmp_path):
    """DECISIONS #32: beside the conclusion score, the judge's measured kappa; beside coverage, the
    matcher's measured rates, naming the embedder and thresholds that read the episodes."""
    db, wh = f"sqlite:///{tmp_path / 's.sqlite'}", str(tmp_path / "w.duckdb")
    runner = CliRunner()
    assert runner.invoke(main, ["suite", "run", "baselines", "--db", db]).exit_code == 0
    assert runner.invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    out = runner.invoke(main, ["query", "table2_leaderboard", "--warehouse", wh, "--suite", "baselines"])
    said = " ".join(out.output.split())
    assert "judge validity (every row): kappa 0.17 [0.01, 0.32] against a careful reading of 72 held-out items" in said
    assert (
        "matcher validity (every row): local:all-MiniLM-L6-v2-int8 at tau 0.75/0.42, on held-out trees: Topic "
        "recognised 33% [17, 49] 21/63, false 15% 14/94, wrong 6% 4/63" in said
    )
    steps = runner.invoke(main, ["query", "steps_bounds", "--warehouse", wh, "--suite", "baselines"])
    assert "matcher validity (every row): local:all-MiniLM-L6-v2-int8 at tau 0.75/0.42" in " ".join(
        steps.output.split()
    )
    report = runner.invoke(main, ["report", "--db", db, "--warehouse", wh, "--out", str(tmp_path / "r")])
    assert report.exit_code == 0, report.output
    page = " ".join(p.read_text() for p in (tmp_path / "r").rglob("*.html") if "judge validity" in p.read_text())
    assert "judge validity (every row): kappa 0.17" in page and "matcher validity" in page


def test_every_judge_measured_with_a_server_is_recorded_as_its_committed_measurement():
    """A model judge needs its server, which CI does not start: its entry in the record is the
    measurement `instrument measure --judge SPEC --format json` wrote, committed beside the studies'
    results (studies/results/judge-*.json), and added with `studies/instrument_record.py --add FILE`."""
    results = SHIPPED.parents[3] / "studies" / "results"
    committed = {m["judge"]: m for m in (json.loads(p.read_text()) for p in results.glob("judge-*.json"))}
    served = [m for m in RECORD["judges"] if not m["judge"].startswith("embedding:")]
    assert served and {m["judge"] for m in served} == set(committed)
    for m in served:
        assert m == committed[m["judge"]]
        assert (m["items"], m["episodes"]) == (150, 71)


def test_a_labs_record_is_checked_when_read_and_written_without_following_links(tmp_path, monkeypatch):
    """The lab's record ($INQUITREE_INSTRUMENT) is a file anyone may hand over: a table that would
    print it fails with exit 2 and one line naming the file, the field and the value (a control
    character shown escaped), and `--record` never writes through a link planted at its path."""
    db, wh = f"sqlite:///{tmp_path / 's.sqlite'}", str(tmp_path / "w.duckdb")
    runner = CliRunner()
    assert (
        runner.invoke(
            main, ["play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--db", db, "--record"]
        ).exit_code
        == 0
    )
    assert runner.invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    lab = tmp_path / "instrument.json"
    monkeypatch.setenv("INQUITREE_INSTRUMENT", str(lab))
    judge = {"judge": MINILM_DEFAULT, "held_out": {"items": 1, "kappa": "\x1b[31mred", "agreement": 0.5}}
    for text, said in (
        ("not json", f"{lab}: not a record of measurements"),
        (
            json.dumps({"judges": [judge]}),
            "judges[0].held_out.kappa is '\\x1b[31mred': expected a finite number or null",
        ),
    ):
        lab.write_text(text)
        out = runner.invoke(main, ["query", "table2_leaderboard", "--warehouse", wh, "--one-off"])
        assert out.exit_code == 2 and said in out.output and "\x1b" not in out.output, out.output
    victim = tmp_path / "victim.json"  # a record, so that record() reads it through the link and goes on
    victim.write_text('{"matchers": [], "judges": []}')
    lab.unlink()
    lab.symlink_to(victim)
    record(measure_judge(make_judge("embedding:0.9/0.8", make_embedder("local", cache=False)), draws=100))
    assert victim.read_text() == '{"matchers": [], "judges": []}' and not lab.is_symlink()
    assert json.loads(lab.read_text())["judges"][0]["judge"].endswith(":0.9/0.8")


def _sample_lines(readme: str, command: str, until: str) -> list[str]:
    """The lines the README shows under ``$ COMMAND`` up to ``until``, without the passages it
    elides (``[... cut here ...]``, which may run over lines)."""
    block = readme.split(f"$ {command}\n", 1)[1].split(until, 1)[0]
    lines, eliding = [], False
    for line in block.splitlines():
        if line.startswith("[..."):
            eliding = True
        if not eliding and line.strip():
            lines.append(line)
        if eliding and line.rstrip().endswith("...]"):
            eliding = False
    return lines


def test_the_readmes_sample_leaderboard_and_compare_are_what_the_commands_print(tmp_path, monkeypatch):
    """The README's sample of `query table2_leaderboard --suite baselines` and `compare random
    random-all oracle` at 80 columns, line for line (its elided passages aside), from a fresh
    baseline campaign: the sample went stale when the rank method changed."""
    monkeypatch.setenv("COLUMNS", "80")
    db, wh = f"sqlite:///{tmp_path / 's.sqlite'}", str(tmp_path / "w.duckdb")
    runner = CliRunner()
    assert runner.invoke(main, ["suite", "run", "baselines", "--db", db]).exit_code == 0
    assert runner.invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh]).exit_code == 0
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for command, until in (
        ("inquitree query table2_leaderboard --suite baselines", "$ inquitree compare"),
        ("inquitree compare random random-all oracle", "\n```"),
    ):
        words = command.split()[1:] + ["--warehouse", wh]
        printed = runner.invoke(main, words).output.splitlines()
        shown = _sample_lines(readme, command, until)
        assert len(shown) > 10
        missing = [line for line in shown if line not in printed]
        assert not missing, (command, missing[:3])
    # Fig. 3b at 80 columns keeps the quantity the figure plots (it was the column cut), and a change
    # between levels that move in step on every paper has no interval rather than [0.00, 0.00].
    fig3b = runner.invoke(main, ["query", "fig3b_redo_frequency", "--suite", "baselines", "--warehouse", wh]).output
    header = next(line for line in fig3b.splitlines() if "agent" in line and "┆" in line)
    assert "relative_change_pct" in header and "[0.00, 0.00]" not in fig3b, fig3b
