"""docs/studies/extraction-qwen-1.5b.md is recomputed from what is committed beside it: the
extraction run again over its cache makes no model call (its endpoint is a closed port) and writes
the committed tree and review, and the numbers the page quotes are those of the cache and review."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "docs" / "studies" / "extraction-qwen-1.5b"
PAPERS = ROOT.parent / "shared" / "papers"
STEM = "extracted-researchgym-paper-earlier-version"
RUNS = [  # paper, tree id, answers reused, validation errors
    ("researchgym-paper-earlier-version.txt", STEM, 24, 9),
    ("inquitree-paper.md", "extracted-inquitree-paper", 22, 8),
]


def _without_date(tree: dict) -> dict:
    tree = json.loads(json.dumps(tree))
    tree["provenance"]["note"] = tree["provenance"]["note"].rsplit(" on ", 1)[0]  # the day it was run
    return tree


@pytest.mark.parametrize(("paper", "stem", "reused", "errors"), RUNS, ids=[r[1] for r in RUNS])
def test_the_extraction_study_is_rebuilt_from_its_cache_with_no_model(tmp_path, paper, stem, reused, errors):
    if not (PAPERS / paper).exists():
        pytest.skip("the paper is in ../shared/papers beside the repository")
    out = tmp_path / "extraction"
    out.mkdir()
    shutil.copy(STUDY / f"{stem}.calls.jsonl", out)
    url = "http://127.0.0.1:9/v1"
    result = CliRunner().invoke(
        main, ["extract", str(PAPERS / paper), "--model", "qwen-1.5b", "--base-url", url, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"model calls: 0 (+{reused} reused from the cache)" in result.output
    assert (out / f"{stem}.review.md").read_text() == (STUDY / f"{stem}.review.md").read_text()
    rebuilt = json.loads((out / f"{stem}.json").read_text())
    assert _without_date(rebuilt) == _without_date(json.loads((STUDY / f"{stem}.json").read_text()))
    checked = CliRunner().invoke(main, ["trees", "validate", str(out / f"{stem}.json"), "--embedder", "local"])
    assert checked.exit_code != 0 and f"{errors} errors" in checked.output  # as the page says: not usable


def test_the_pages_numbers_are_the_caches():
    calls = [json.loads(line) for line in (STUDY / f"{STEM}.calls.jsonl").read_text().splitlines()]
    page = (ROOT / "docs" / "studies" / "extraction-qwen-1.5b.md").read_text()
    hints = sorted(c["latency_ms"] / 1000 for c in calls if c["purpose"].startswith("hints"))
    skeleton = next(c for c in calls if c["purpose"] == "extraction")
    assert f"{len(calls)} calls" in page and not any("rejected" in c for c in calls)
    assert f"the skeleton took {skeleton['latency_ms'] / 1000:.0f} s" in page
    assert f"({skeleton['usage']['output_chunks']:,} streamed chunks)" in page
    assert (
        f"the {len(hints)} hint calls {hints[0]:.0f}-{hints[-1]:.0f} s (median {hints[len(hints) // 2]:.0f} s)" in page
    )
    assert all(c["usage"]["output"] is None for c in calls)  # hence "tokens are unknown"
    review = (STUDY / f"{STEM}.review.md").read_text()
    assert "## Flags (17)" in review and "17 and 11 flags" in page
    assert "### form: placeholders (5)" in review and "### form: structure (1)" in review
    assert sum(line.endswith("| NO |") for line in review.splitlines()) == 9
