"""The Qwen2.5-Coder-1.5B study as committed (docs/studies/qwen-1.5b.md): every exported episode
imports under the study's public key, replays identically, and a warehouse built from the imports
gives the tables the study quotes, to the last digit that floating-point sums keep. Replay re-
simulates from the recorded replies, cosines and verdicts, so none of this needs the model, its
server or an embedder. The tables were written by this test itself
(``INQUITREE_WRITE_STUDY_TABLES=1``, after creating each ``tables/NAME.csv`` empty): what the study
quotes is what a warehouse of the export computes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "docs" / "studies" / "qwen-1.5b"
EPISODES = sorted((STUDY / "episodes").glob("*.jsonl"))
# The study's signing key, as README.md and CHANGELOG.md publish it (not only the file beside the export)
STUDY_KEY_ID = "c157c41dbcc290eb"
# The randomness-3 arm played again under draw rule 2 (fakes/), signed with a key of its own
FAKES_KEY_ID, FAKES_EVENTS = "d5575b8528a0eedc", "640"
# The first arm's trees played once more with the moves read by nomic-embed-text-v1.5 (nomic/)
NOMIC_KEY_ID, NOMIC_EVENTS = "cf6ee5a24ef264b9", "721"
# ... and once more with the moves read by the rule fitted on real moves (fitted/: --match-rule fitted)
FITTED_KEY_ID = "9e32017ebe950597"
TABLES = sorted((STUDY / "tables").glob("*.csv"))  # each made by queries/NAME.sql, or by the study's sql/NAME.sql
# The study re-scored: the embedding judge with the thresholds chosen against the careful reading
# (studies/judging.py, docs/instrument.md), its verdicts appended beside the recorded ones
REJUDGE = "embedding:0.78/0.74"


def run(*args: str) -> str:
    out = CliRunner().invoke(main, list(args))
    assert out.exit_code == 0, f"{' '.join(args)}: {out.output}"
    return out.output


def test_the_study_imports_under_its_key_replays_identically_and_gives_its_tables(tmp_path):
    assert len(EPISODES) == 18 * 3 + 18  # every tree: 3 runs at randomness 0, 1 at randomness 3
    assert {p.stem for p in TABLES} >= {
        "table2_leaderboard",
        "steps_bounds",
        "judge_agreement",
        "judge_flags",
        "matching",
    }
    check_arm(STUDY, STUDY_KEY_ID, "2,906", tmp_path)


def test_the_fakes_arm_imports_under_its_key_replays_identically_and_gives_its_tables(tmp_path):
    """The randomness-3 arm played again under draw rule 2 (fakes drawn per tree), exported
    under a key of its own."""
    arm = STUDY / "fakes"
    assert len(sorted((arm / "episodes").glob("*.jsonl"))) == 18
    assert {p.stem for p in (arm / "tables").glob("*.csv")} >= {"episodes_by_level", "decisions_after_a_result"}
    check_arm(arm, FAKES_KEY_ID, FAKES_EVENTS, tmp_path)


def test_the_arm_read_by_nomic_imports_under_its_key_replays_identically_and_gives_its_tables(tmp_path):
    """The first arm's 18 trees, one run, with the agent's moves read by nomic (0.82/0.71): its
    replay needs no embedder (the recorded cosines are re-simulated), and its table sets it beside
    the first arm's (tables/reading_by_matcher.csv)."""
    arm = STUDY / "nomic"
    assert len(sorted((arm / "episodes").glob("*.jsonl"))) == 18
    assert {p.stem for p in (arm / "tables").glob("*.csv")} == {"reading_by_matcher"}
    check_arm(arm, NOMIC_KEY_ID, NOMIC_EVENTS, tmp_path)


def test_the_arm_read_by_the_fitted_rule_imports_under_its_key_replays_identically_and_gives_its_tables(tmp_path):
    """The first arm's 18 trees, one run, with the agent's moves read by the fitted match rule
    (MiniLM): each episode records the rule whole, so its replay decides as it was played, with no
    embedder; its table sets it beside the first arm's and nomic's."""
    arm = STUDY / "fitted"
    episodes = sorted((arm / "episodes").glob("*.jsonl"))
    assert len(episodes) == 18
    assert all('"match_rule":{' in p.read_text().splitlines()[0] for p in episodes)
    assert {p.stem for p in (arm / "tables").glob("*.csv")} == {"reading_by_matcher"}
    events = sum(1 for p in episodes for line in p.read_text().splitlines() if not line.startswith('{"signature"'))
    check_arm(arm, FITTED_KEY_ID, f"{events:,}", tmp_path)


def check_arm(folder: Path, key_id: str, events: str, tmp_path: Path) -> None:
    """The study page's commands on one arm: every file in one import under the arm's public key,
    the proof, the re-scoring judge's verdicts appended, a replay of each episode, and every table
    of ``folder/tables`` rebuilt by ``queries/NAME.sql`` or the study's ``sql/NAME.sql``."""
    episodes = sorted((folder / "episodes").glob("*.jsonl"))
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    imported = run("episodes", "import", *map(str, episodes), "--db", db, "--key", str(folder / "signing.pub"))
    assert imported.count(f"the signature by key {key_id}") == len(episodes), imported[-500:]
    assert f"{len(episodes)} files imported" in imported
    proof = run("db", "verify", "--key", str(folder / "signing.pub"), "--db", db, "--accept-unanchored")
    assert f"proved by checkpoints signed by key {key_id}: the {events} events" in proof
    judged = run("judge", "--all", "--judge", REJUDGE, "--embedder", "local", "--db", db)
    assert f"{len(episodes)} episodes judged" in judged, judged
    for path in episodes:
        assert "replay: identical" in run("replay", path.stem, "--db", db, "-q"), path.stem
    run("warehouse", "sync", "--db", db, "--warehouse", wh)
    for table in sorted((folder / "tables").glob("*.csv")):
        own = STUDY / "sql" / f"{table.stem}.sql"
        if own.exists():
            made = run("sql", "--file", str(own), "--warehouse", wh, "--format", "csv")
        else:
            made = run("query", table.stem, "--warehouse", wh, "--format", "csv")
        if os.environ.get("INQUITREE_WRITE_STUDY_TABLES"):  # how the tables were made: from the export
            table.write_text(made)
        assert same_table(made, table.read_text()), table.name


def same_table(made: str, quoted: str) -> bool:
    """Equal CSV text, but for the last bits of floating-point numbers: DuckDB sums in an order that
    depends on its threads, so a mean may differ in its 16th significant digit from run to run."""
    import csv
    import io
    import math

    a, b = list(csv.reader(io.StringIO(made))), list(csv.reader(io.StringIO(quoted)))
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b, strict=True)):
        return False
    for x, y in zip((c for row in a for c in row), (c for row in b for c in row), strict=True):
        if x == y:
            continue
        try:
            if not math.isclose(float(x), float(y), rel_tol=1e-12, abs_tol=1e-15):
                return False
        except ValueError:
            return False
    return True


def test_the_corrected_score_of_the_study_is_rebuilt_from_its_episodes_and_readings(tmp_path):
    """studies/qwen_corrected.py imports the study, appends the 150 careful readings as labels and
    reads the leaderboard: the committed result and the study page's table come out of it."""
    import json
    import subprocess
    import sys

    out = tmp_path / "q.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "studies" / "qwen_corrected.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    made = json.loads(out.read_text())
    kept = json.loads((ROOT / "studies" / "results" / "qwen_corrected.json").read_text())
    assert made["labelled_here"] == kept["labelled_here"]  # the readings of the imported arms' episodes
    # the leaderboard's (randomness 0): 77 readings for the embedding judge, on all its 54 episodes
    assert {r["judge_id"]: r["labelled_items"] for r in kept["after"]}[
        "embedding:local:all-MiniLM-L6-v2-int8:0.85/0.7"
    ] == 77
    for a, b in zip(made["after"], kept["after"], strict=True):
        for key, value in b.items():
            assert a[key] == (pytest.approx(value, rel=1e-9) if isinstance(value, float) else value), key
    page = (ROOT / "docs" / "studies" / "qwen-1.5b.md").read_text()
    row = {r["judge_id"]: r for r in kept["after"]}["embedding:local:all-MiniLM-L6-v2-int8:0.85/0.7"]
    quoted = (
        f"| {row['episodes']} | {row['conclusion_score']:.3f} [{row['conclusion_score_ci_low']:.3f}, "
        f"{row['conclusion_score_ci_high']:.3f}] | {row['labelled_items']} | {row['conclusion_score_corrected']:.3f} "
        f"[{row['conclusion_score_corrected_ci_low']:.3f}, {row['conclusion_score_corrected_ci_high']:.3f}] |"
    )
    assert quoted in page
    assert all(r["conclusion_score_corrected"] is None for r in kept["before"])


def test_the_a3_arm_drawn_under_draw_rule_1_is_warned_and_the_fakes_arm_is_not():
    """The study's a=3 arm was drawn under draw rule 1 (every tree of a run shares its fake draws): its
    fig3a rows say the papers are not independent; the fakes arm, drawn under rule 2, says nothing."""
    import csv

    main_rows = list(csv.DictReader((STUDY / "tables" / "fig3a_score_by_randomness.csv").open()))
    fakes = list(csv.DictReader((STUDY / "fakes" / "tables" / "fig3a_score_by_randomness.csv").open()))
    for r in main_rows:
        assert ("draw rule 1" in r["interval_warning"]) == (r["randomness"] == "3"), r
    assert fakes and not any("draw rule 1" in r["interval_warning"] for r in fakes)
