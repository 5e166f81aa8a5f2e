"""The record of the shipped instruments' measurements that every table states beside its figures
(``core/data/instrument/measured.json``, read by ``inquitree.core.instrument.measured``).

    python studies/instrument_record.py [--nomic-url URL] [--draws N]

Measures, on the labelled sets of ``core/data/``: the matcher with the local embedder at its
defaults (tau 0.75, tau_study 0.42) and with the rule fitted for it (``--match-rule fitted``), with
nomic at its defaults (0.82, 0.71) when its server answers (else the earlier measurement is kept,
with a line saying so), and the embedding judges
with the local embedder at 0.85/0.7 (the default) and 0.78/0.74 (thresholds chosen on the
calibration trees). A judge that needs a model server is measured with `inquitree instrument
measure --judge SPEC --format json > FILE` and added with ``--add FILE``; such entries are kept when
the record is made again. tests/test_instrument.py measures the local entries again and compares.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from inquitree.core.instrument import measure_judge, measure_matcher
from inquitree.core.instrument.measured import SHIPPED
from inquitree.core.players.embed import EmbedderError, NomicEmbedder
from inquitree.core.players.kinds import make_embedder, make_judge

JUDGES = ("embedding", "embedding:0.78/0.74")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nomic-url", default=None)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--out", default=str(SHIPPED))
    ap.add_argument("--add", action="append", default=[], help="a measurement: instrument measure --format json")
    args = ap.parse_args()
    earlier = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {"matchers": [], "judges": []}
    local = make_embedder("local", cache=False)
    matchers = [measure_matcher(local, draws=args.draws), measure_matcher(local, draws=args.draws, rule="fitted")]
    try:
        nomic = make_embedder("nomic", base_url=args.nomic_url, cache=False)
        nomic.embed(["a probe"])
        matchers.append(measure_matcher(nomic, draws=args.draws))
    except EmbedderError as exc:
        kept = [m for m in earlier["matchers"] if m["embedder"] == NomicEmbedder.id]
        matchers += kept
        print(f"nomic: skipped ({str(exc).splitlines()[0]}); its earlier measurement is kept", file=sys.stderr)
    judges = [measure_judge(make_judge(spec, local), draws=args.draws) for spec in JUDGES]
    added = [json.loads(Path(path).read_text()) for path in args.add]
    kept = [j for j in earlier["judges"] if not j["judge"].startswith("embedding:")]  # measured with a server
    for found in kept + added:
        judges = [j for j in judges if j["judge"] != found["judge"]] + [found]
    Path(args.out).write_text(json.dumps({"matchers": matchers, "judges": judges}, indent=1) + "\n")
    for m in matchers:
        t = m["topic"]["held_out"]
        print(
            f"{m['embedder']} ({m['rule']}) at {m['tau']}/{m['tau_study']}: "
            f"held-out Topic {t['recognised']} / {t['false_match']}"
        )
    for j in judges:
        print(f"{j['judge']}: held-out kappa {j['held_out']['kappa']} {j['held_out']['kappa_interval']}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
