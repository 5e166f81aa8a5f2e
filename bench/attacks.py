"""The attack table (issue: a log that proves itself): each attack of ``tests/attackkit.py`` on a
copy of a store recorded with signed checkpoints and anchored, against ``db verify`` without a key,
with the anchor and with the public key: found or not, and what it said.

    python bench/attacks.py --out bench/results/attacks.json    # prints a Markdown table
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.events.signing import load_verifier
from inquitree.events.store import EventStore
from inquitree.events.verify import Anchor, VerifyReport

from attackkit import ATTACKS, attacked_copy, record_lab


def verdict(report: VerifyReport) -> tuple[bool, str]:
    """(found, what verify said) for one report."""
    if report.first_problem is not None:
        stream, version, what = report.first_problem
        where = f"{stream} v{version}: " if stream else ""
        return True, f"TAMPERED: {where}{what}"
    if report.ok:
        return False, "ok" + ("" if report.proof else " (and: cannot prove a cut end or a re-chained log)")
    return True, f"NOT PROVEN: {report.uncovered} events after position {report.covered_to}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "lab").mkdir()
        lab = record_lab(Path(d) / "lab")
        anchor, verifier = Anchor.load(lab.anchor), load_verifier(lab.public_key)
        for i, (name, attack) in enumerate(ATTACKS):
            db = attacked_copy(lab, attack, Path(d) / f"a{i}")
            with EventStore(f"sqlite:///{db}", create=False) as store:
                results = {
                    "no key": verdict(store.verify()),
                    "anchor": verdict(store.verify(anchor=anchor)),
                    "key": verdict(store.verify(verifier=verifier)),
                }
            rows.append({"attack": name, **{k: {"found": f, "message": m} for k, (f, m) in results.items()}})
    print("| attack | no key | anchor | key |\n|---|---|---|---|")
    for r in rows:
        cells = [("found" if r[k]["found"] else "**not found**") for k in ("no key", "anchor", "key")]
        print(f"| {r['attack']} | " + " | ".join(cells) + " |")
    print()
    for r in rows:
        print(f"- {r['attack']}: key -> {r['key']['message']}")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
