"""docs/studies/extraction-qwen-1.5b.md is recomputed from what is committed beside it: the
extraction run again over its call cache (the engine's, holding the model's raw answers) makes no
model call, its endpoint being closed, and writes the committed tree and review; and the numbers
the page quotes are those of the run's call log and review."""

from __future__ import annotations

import json
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "docs" / "studies" / "extraction-qwen-1.5b"
PAGE = ROOT / "docs" / "studies" / "extraction-qwen-1.5b.md"
PAPERS = ROOT.parent / "shared" / "papers"
RUNS = [  # paper, tree id
    ("researchgym-paper-earlier-version.txt", "extracted-researchgym-paper-earlier-version"),
    ("inquitree-paper.md", "extracted-inquitree-paper"),
]
# as the page's commands ran it: the cache keys answers by endpoint and request (max_tokens included)
URL, MAX_TOKENS = "http://127.0.0.1:8011/v1", "4096"


def _log(stem: str) -> list[dict]:
    return [json.loads(line) for line in (STUDY / f"{stem}.calls.jsonl").read_text().splitlines()]


def _without_date(tree: dict) -> dict:
    tree = json.loads(json.dumps(tree))
    tree["provenance"]["note"] = tree["provenance"]["note"].rsplit(" on ", 1)[0]  # the day it was run
    return tree


def _without_run_line(review: str) -> list[str]:
    return [line for line in review.splitlines() if not line.startswith("Extracted by ")]


def _validation_errors(path: Path) -> list[str]:
    """What `trees validate` says is wrong with a tree, its folder left out."""
    checked = CliRunner().invoke(main, ["trees", "validate", str(path), "--embedder", "local"])
    assert checked.exit_code != 0, checked.output  # as the page says: not usable
    errors = [line.replace(str(path.parent) + "/", "") for line in checked.output.splitlines()]
    return [line for line in errors if line.startswith("ERROR")]


@pytest.mark.parametrize(("paper", "stem"), RUNS, ids=[r[1] for r in RUNS])
def test_the_extraction_study_is_rebuilt_from_its_cache_with_no_model(tmp_path, paper, stem):
    if not (PAPERS / paper).exists():
        pytest.skip("the paper is in ../shared/papers beside the repository")
    out = tmp_path / "extraction"
    out.mkdir()
    shutil.copy(STUDY / f"{stem}.cache.sqlite", out)
    result = CliRunner().invoke(
        main,
        ["extract", str(PAPERS / paper), "--model", "qwen-1.5b", "--base-url", URL, "--out", str(out),
         "--max-tokens", MAX_TOKENS, "--call-limit", "5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"model calls: 0 (+{len(_log(stem))} reused from the cache)" in result.output
    rebuilt = (out / f"{stem}.review.md").read_text()
    committed = (STUDY / f"{stem}.review.md").read_text()
    assert _without_run_line(rebuilt) == _without_run_line(committed)
    assert f"0 model calls this run, {len(_log(stem))} answers reused from the cache" in rebuilt
    tree = json.loads((out / f"{stem}.json").read_text())
    assert _without_date(tree) == _without_date(json.loads((STUDY / f"{stem}.json").read_text()))
    assert _validation_errors(out / f"{stem}.json") == _validation_errors(STUDY / f"{stem}.json")


def _seconds(calls: list[dict]) -> list[float]:
    return sorted(c["latency_ms"] / 1000 for c in calls)


@pytest.mark.parametrize(("paper", "stem"), RUNS, ids=[r[1] for r in RUNS])
def test_the_pages_numbers_are_the_runs(paper, stem):
    log, page = _log(stem), PAGE.read_text()
    committed = (STUDY / f"{stem}.review.md").read_text()
    assert f"{len(log)} model calls this run, 0 answers reused from the cache" in committed
    assert all(c["usage"]["output"] is None for c in log)  # hence "tokens are unknown"
    rejected = sum(bool(c["problems"]) for c in log)
    hints = _seconds([c for c in log if c["purpose"].startswith("hints")])
    checks = _seconds([c for c in log if c["purpose"].startswith("stage")])
    (skeleton,) = [c for c in log if c["purpose"] == "extraction"]
    flags = committed.split("## Flags (", 1)[1].split(")", 1)[0]
    cosines = [line for line in committed.splitlines() if line.endswith(("| NO |", "| yes |"))]
    row = (
        f"| `{stem}` | {len(log)} ({rejected}) | {sum(c['latency_ms'] for c in log) / 60_000:.1f} min "
        f"| {skeleton['latency_ms'] / 1000:.0f} s, {skeleton['usage']['output_chunks']:,} streamed chunks "
        f"| {len(hints)}: {hints[0]:.0f}-{hints[-1]:.0f} s, median {statistics.median(hints):.0f} s "
        f"| {len(checks)}: {checks[0]:.0f}-{checks[-1]:.0f} s | {flags} "
        f"| {sum(line.endswith('| NO |') for line in cosines)} of {len(cosines)} "
        f"| {len(_validation_errors(STUDY / f'{stem}.json'))} |"
    )
    assert row in page.splitlines(), row


@pytest.mark.parametrize(("paper", "stem"), RUNS, ids=[r[1] for r in RUNS])
def test_the_log_shows_what_the_cache_holds(paper, stem):
    """The committed cache is binary; its log is the readable copy: the same raw answers, one for
    one, as the model gave them to the recorded endpoint."""
    con = sqlite3.connect(f"file:{STUDY / f'{stem}.cache.sqlite'}?mode=ro&immutable=1", uri=True)
    try:
        rows = con.execute("SELECT model, endpoint, answer FROM calls").fetchall()
    finally:
        con.close()
    assert {(model, endpoint) for model, endpoint, _ in rows} == {("qwen-1.5b", URL)}
    cached = sorted(json.loads(answer)["text"] for _, _, answer in rows)
    assert cached == sorted(c["answer"] for c in _log(stem))
