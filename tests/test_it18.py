"""The IT-18 trees: one per paper of the InquiTree paper's Table 4, reconstructed from public material.

Engine bounds (oracle 3n with q_norm 1.0, always-miss n(2H+3)) and hint monotonicity are
checked for every shipped tree in test_engine.py and test_trees.py; this file checks what
is particular to the IT-18 set: the registry equals the paper's table, each paper has one
tree that says where its content comes from, and the JSON is what its TOML source builds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from inquitree.core.game.tree import it18_registry, load_tree_file, publication_window, shipped_tree_paths

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT.parent / "shared" / "papers" / "inquitree-paper.md"


def it18_trees() -> dict[int, object]:
    out = {}
    for p in shipped_tree_paths():
        t = load_tree_file(p)
        if t.paper.get("it18_id") is not None:
            assert t.paper["it18_id"] not in out, f"two trees for IT-18 #{t.paper['it18_id']}"
            out[t.paper["it18_id"]] = t
    return out


def test_registry_is_the_papers_table_4():
    papers = it18_registry()
    assert len(papers) == 18 and sum(p["subtopics"] for p in papers) == 120
    if not PAPER.exists():
        pytest.skip(f"{PAPER} not beside the checkout")
    text = PAPER.read_text(encoding="utf-8")
    table = text[text.index("Table 4.") : text.index("Table 5.")]
    rows = [
        (int(m[1]), m[2], m[3], int(m[4])) for m in re.finditer(r"^(\d+)\t<i>(.*)</i>\t(.*)\t(\d+)$", table, flags=re.M)
    ]
    assert rows == [(p["it18_id"], p["title"], p["journal"], p["subtopics"]) for p in papers]


def test_every_it18_paper_has_one_tree_that_states_its_sources():
    trees = it18_trees()
    papers = it18_registry()
    assert sorted(trees) == sorted(p["it18_id"] for p in papers)
    for p in papers:
        t = trees[p["it18_id"]]
        assert t.id.startswith(f"it18-{p['it18_id']:02d}-")
        assert t.title == p["title"] and t.paper["paper_subtopics"] == p["subtopics"]
        prov = t.provenance
        assert prov["kind"] == "reconstructed-from-public-material"
        assert "not the authors' IT-18 configuration" in prov["note"]
        assert f"Subtopics: {t.n} here, {p['subtopics']} in the paper's Table 4." in prov["note"]
        if t.n != p["subtopics"]:
            assert "could not be identified" in prov["note"], t.id
        assert prov["sources"] and all(s.startswith(("http://", "https://")) for s in prov["sources"])
        assert t.n <= p["subtopics"], f"{t.id}: more subtopics than the paper lists"
        # Every tree says where its journal, DOI and date come from (public records found with
        # the search tool), and what Fig. 4 may conclude from them.
        pub = prov["publication"]
        assert pub["sources"] and all(s.startswith(("http://", "https://")) for s in pub["sources"]), t.id
        assert pub["checked"] and len(pub["note"]) > 40, t.id
        first, last = publication_window(t.paper)
        assert first or last, f"{t.id}: no date and no bound"
        if t.paper.get("published") is None:
            assert "date undetermined" in pub["note"], f"{t.id}: a missing date must say what Fig. 4 does with it"
        if t.paper.get("doi") is None:
            assert "DOI" in pub["note"], f"{t.id}: a missing DOI must be explained"
        if t.paper["journal"] != p["journal"]:  # the tree keeps the truth and says so
            assert "Table 4" in pub["note"] and t.paper["journal"] in pub["note"], t.id


def test_each_result_needed_by_some_conclusion_and_fakes_differ_from_truth():
    for t in it18_trees().values():
        needed = {r for c in t.conclusions for r in c.requires_results}
        results = {st.result.id for s in t.subtopics for st in s.studies}
        assert needed == results, f"{t.id}: results no conclusion needs: {sorted(results - needed)}"
        for s in t.subtopics:
            for st in s.studies:
                assert all(f.strip() != st.result.text.strip() for f in st.result.fakes)


def test_json_is_what_the_toml_sources_build():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_it18_trees.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
