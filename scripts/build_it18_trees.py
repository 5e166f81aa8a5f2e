"""Build the IT-18 research trees (trees/it18-*.json) from their sources (scripts/it18/*.toml).

The InquiTree paper's released set, IT-18 (its Table 4), lists 18 open-access
papers. The authors' configurations are not reachable from here, so each tree is
our own reconstruction from public text about the paper (its abstract and public
article pages), written in our own words; each source file lists the addresses it
used. The TOML files are the thing a person edits; this script only expands them:

- one study per subtopic, with ids ``sN.study`` and result id ``rN``;
- a hint list of three expands to four with a level-4 hint that names the target
  outright (``Investigate <subtopic text>`` / ``Carry out this study: <study text>``),
  which is what level 4 means in the paper (Section 3.4); a list of four is kept;
- the provenance note states what the tree is, what it is not, and how its
  subtopic count compares with the paper's.

    python scripts/build_it18_trees.py          # write trees/it18-*.json
    python scripts/build_it18_trees.py --check  # exit 1 if any JSON is stale
    python scripts/build_it18_trees.py --order-hints  # rewrite the sources' h1..h3 order (see below)

Eq. 6 asks the hints to grow closer to their target level by level. The hints are
written by hand from vague to specific, but where the local embedder ranks two
of h1..h3 the other way round than their writer did, ``--order-hints`` rewrites
the source so that h1..h3 appear in the embedder's order (h4, the target named
outright, stays last). The texts are unchanged; only their levels move.

tests/test_it18.py runs the check, so the JSON and its sources cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "scripts" / "it18"
TREES = ROOT / "trees"

PROVENANCE = (
    "Reconstructed for InquiTree from public material about this paper (the addresses under sources: "
    "abstracts, public article pages and summaries), written in our own words. It is not the authors' IT-18 "
    "configuration, which is not reachable from here, and it was not checked against the full text. Result "
    "texts report findings as that material states them, with numbers only where it gives them; the fake "
    "results and all hints are ours. {count}"
)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _hints(given: list[str], level4: str, where: str) -> list[str]:
    if len(given) == 4:
        return list(given)
    if len(given) == 3:
        return [*given, level4]
    raise SystemExit(f"{where}: expected 3 or 4 hints, got {len(given)}")


def expand(src: dict, source_name: str) -> dict:
    paper = src["paper"]
    subtopics = []
    for i, s in enumerate(src["subtopics"], start=1):
        sid = s.get("id", f"s{i}")
        where = f"{source_name}: subtopics[{i - 1}]"
        subtopics.append(
            {
                "id": sid,
                "text": s["text"],
                "depends_on": list(s.get("depends_on", [])),
                "hints": _hints(s["hints"], "Investigate " + _lower_first(s["text"]), where + ".hints"),
                "studies": [
                    {
                        "id": f"{sid}.study",
                        "text": s["study"],
                        "hints": _hints(
                            s["study_hints"],
                            "Carry out this study: " + _lower_first(s["study"]),
                            where + ".study_hints",
                        ),
                        "result": {"id": "r" + sid[1:], "text": s["result"], "fakes": list(s["fakes"])},
                    }
                ],
            }
        )
    n, m = len(subtopics), paper["paper_subtopics"]
    count = f"Subtopics: {n} here, {m} in the paper's Table 4."
    if n != m:
        count += " " + src["coverage_note"].strip()
    doc = {
        "schema": "inquitree/research-tree@1",
        "id": src["id"],
        "paper": {
            "title": paper["title"],
            "journal": paper.get("journal"),
            "doi": paper.get("doi"),
            "published": paper.get("published"),
            **{k: paper[k] for k in ("published_not_before", "published_not_after") if k in paper},
            "open_access": True,
            "it18_id": paper["it18_id"],
            "paper_subtopics": m,
        },
        "provenance": {
            "kind": "reconstructed-from-public-material",
            "note": PROVENANCE.format(count=count) + (" " + src["note"].strip() if src.get("note") else ""),
            "sources": list(src["sources"]),
            **({"publication": dict(src["publication"])} if "publication" in src else {}),
        },
        "topic": {"text": src["topic"]},
        "subtopics": subtopics,
        "conclusions": [
            {"id": c.get("id", f"c{j}"), "text": c["text"], "requires_results": list(c["requires"])}
            for j, c in enumerate(src["conclusions"], start=1)
        ],
    }
    return doc


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def order_hints() -> int:
    """Rewrite scripts/it18/*.toml so that each target's h1..h3 rise in cosine to it (local embedder)."""
    from inquitree.core.players.calibrate import hint_cosines
    from inquitree.core.players.embed import LocalEmbedder

    emb = LocalEmbedder()
    moved = 0
    for path in sorted(SOURCES.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        src = tomllib.loads(text)
        for s in src["subtopics"]:
            for target, hints in ((s["text"], s["hints"]), (s["study"], s["study_hints"])):
                first = hints[:3]
                cos = hint_cosines(emb, target, first)
                order = sorted(range(3), key=lambda i: cos[i])
                if order == [0, 1, 2]:
                    continue
                old = "".join(f"  {_toml_string(h)},\n" for h in first)
                new = "".join(f"  {_toml_string(first[i])},\n" for i in order)
                if text.count(old) != 1:
                    raise SystemExit(f"{path.name}: cannot locate the hint block of {target[:60]!r} to reorder it")
                text = text.replace(old, new)
                moved += 1
        path.write_text(text, encoding="utf-8")
    print(f"reordered the hints of {moved} targets")
    return 0


def build(check: bool) -> int:
    stale = []
    for path in sorted(SOURCES.glob("*.toml")):
        with open(path, "rb") as f:
            src = tomllib.load(f)
        doc = expand(src, str(path.relative_to(ROOT)))
        out = TREES / f"{doc['id']}.json"
        text = render(doc)
        if check:
            if not out.exists() or out.read_text(encoding="utf-8") != text:
                stale.append(out.name)
        else:
            out.write_text(text, encoding="utf-8")
    if stale:
        print("stale (run python scripts/build_it18_trees.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that trees/it18-*.json are up to date")
    ap.add_argument(
        "--order-hints",
        action="store_true",
        help="rewrite the sources so h1..h3 rise in cosine to their target (local embedder)",
    )
    args = ap.parse_args()
    sys.exit(order_hints() if args.order_hints else build(args.check))
