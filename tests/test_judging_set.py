"""The conclusion items read by hand (core/data/judging): the set is what its README says, and
studies/judging.py gives the agreement docs/instrument.md quotes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "core" / "data" / "judging" / "qwen-conclusions.jsonl"
sys.path.insert(0, str(ROOT / "studies"))


def _items() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]


def test_the_set_is_what_its_readme_says():
    from judging import verdicts

    items = _items()
    assert len(items) == 150 and len({(i["episode"], i["item"]) for i in items}) == 150
    assert {i["reading"] for i in items} == {"absent", "partial", "credited"}
    assert [sum(i["reading"] == r for i in items) for r in ("absent", "partial", "credited")] == [102, 27, 21]
    sides: dict[str, set] = {}
    for i in items:
        sides.setdefault(i["tree"], set()).add(i["split"])
        assert i["tree"] in i["episode"] and ".a0.r1" not in i["episode"]  # run 1 repeats run 0
    assert len(sides) == 18 and all(len(s) == 1 for s in sides.values())
    found = verdicts()
    assert all("embedding" in found[(i["episode"], i["item"])] for i in items)  # every item was judged


def test_the_judges_agreement_is_what_docs_quote():
    import subprocess

    out = subprocess.run(
        [sys.executable, str(ROOT / "studies" / "judging.py"), "--out", "/dev/null"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "embedding judge: 150 items, agreement 0.6333, kappa 0.258" in out.stdout
    assert "model judge: 87 items, agreement 0.2069, kappa -0.0133" in out.stdout
    assert "full 0.78, partial 0.74" in out.stdout and "held-out kappa 0.3486" in out.stdout
    text = " ".join((ROOT / "docs" / "instrument.md").read_text().split())
    assert "63.3% of the items (Cohen's kappa 0.26)" in text
    assert "20.7% of its 87 items (kappa -0.01)" in text and "from 0.17 to 0.35" in text
