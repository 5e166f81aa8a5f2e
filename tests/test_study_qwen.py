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

from click.testing import CliRunner

from inquitree.cli import main

STUDY = Path(__file__).resolve().parent.parent / "docs" / "studies" / "qwen-1.5b"
EPISODES = sorted((STUDY / "episodes").glob("*.jsonl"))
# The study's signing key, as README.md and CHANGELOG.md publish it (not only the file beside the export)
STUDY_KEY_ID = "c157c41dbcc290eb"
TABLES = sorted((STUDY / "tables").glob("*.csv"))  # each made by queries/NAME.sql, or by the study's sql/NAME.sql


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
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    # the study page's commands: every file in one import, then the proof with the study's key
    imported = run("episodes", "import", *map(str, EPISODES), "--db", db, "--key", str(STUDY / "signing.pub"))
    assert imported.count(f"the signature by key {STUDY_KEY_ID}") == len(EPISODES), imported[-500:]
    assert f"{len(EPISODES)} files imported" in imported
    proof = run("db", "verify", "--key", str(STUDY / "signing.pub"), "--db", db, "--accept-unanchored")
    assert f"proved by checkpoints signed by key {STUDY_KEY_ID}: the 2,906 events" in proof
    for path in EPISODES:
        assert "replay: identical" in run("replay", path.stem, "--db", db, "-q"), path.stem
    run("warehouse", "sync", "--db", db, "--warehouse", wh)
    for table in TABLES:
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
