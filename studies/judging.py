"""How well the judges agree with a careful reading: the 150 conclusion items of
``core/data/judging/qwen-conclusions.jsonl`` (how they were chosen and read in its README), each
read as credited, partial or absent, against the verdicts the Qwen study's episodes carry (the
embedding judge on every episode, the same model as judge on 48 of the first arm's).

    python studies/judging.py [--out studies/results/judging.json]

Per judge: items judged, exact agreement, Cohen's kappa over the three categories, and the
confusion table (rows: the reading; columns: the judge). The embedding judge's two thresholds
(full 0.85, partial 0.7 on the best cosine between the item and any agent item, which its
verdicts record) are then chosen again on the calibration trees (on a 0.01 grid, the pair with the
highest kappa there, the higher thresholds of equals) and both pairs are reported on the held-out
trees. Reads the exported episodes only: no model, no store.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from inquitree.core.instrument.judging import CATEGORIES, LABELS, SCORE, agreement

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "docs" / "studies" / "qwen-1.5b"
GRID = [round(0.5 + 0.01 * k, 2) for k in range(50)]  # 0.50 .. 0.99
COSINE = re.compile(r"has cosine (-?\d+\.\d+)")


def verdicts() -> dict[tuple[str, str], dict[str, dict]]:
    """(episode, item) -> judge kind ('embedding' or 'model') -> {'category', 'cosine'} from every
    exported episode of the study (both arms)."""
    found: dict[tuple[str, str], dict[str, dict]] = {}
    for path in sorted(STUDY.glob("episodes/*.jsonl")) + sorted(STUDY.glob("fakes/episodes/*.jsonl")):
        for line in path.open(encoding="utf-8"):
            event = json.loads(line)
            if event.get("type") != "JudgeVerdict":
                continue
            p = event["payload"]
            kind = "embedding" if p["judge_id"].startswith("embedding:") else "model"
            cosine = COSINE.search(p.get("rationale") or "")
            found.setdefault((path.stem, p["item_id"]), {})[kind] = {
                "category": SCORE[round(float(p["score"]), 1)],
                "cosine": float(cosine.group(1)) if cosine else None,
            }
    return found


def category(cosine: float, full: float, partial: float) -> str:
    return "credited" if cosine >= full else "partial" if cosine >= partial else "absent"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "judging.json"))
    args = ap.parse_args()
    items = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    found = verdicts()
    result: dict = {"labels": str(LABELS.relative_to(ROOT)), "items": len(items)}
    for kind in ("embedding", "model"):
        pairs = [(it["reading"], found[(it["episode"], it["item"])][kind]["category"]) for it in items
                 if kind in found.get((it["episode"], it["item"]), {})]  # fmt: skip
        result[kind] = agreement(pairs)
    scored = [(it, found[(it["episode"], it["item"])]["embedding"]["cosine"]) for it in items]
    calibrate = [(it["reading"], c) for it, c in scored if it["split"] == "calibrate"]
    held_out = [(it["reading"], c) for it, c in scored if it["split"] == "held-out"]

    def on(rows: list[tuple[str, float]], full: float, partial: float) -> dict:
        return agreement([(r, category(c, full, partial)) for r, c in rows])

    tried = [(on(calibrate, f, p), f, p) for f in GRID for p in GRID if p <= f]
    best, full, partial = max(tried, key=lambda t: (t[0]["kappa"] or -1, t[1], t[2]))
    result["thresholds"] = {
        "chosen_on_calibration_trees": {"full": full, "partial": partial, "calibrate": best},
        "held_out_chosen": on(held_out, full, partial),
        "held_out_default_0.85_0.7": on(held_out, 0.85, 0.7),
        "calibrate_default_0.85_0.7": on(calibrate, 0.85, 0.7),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for kind in ("embedding", "model"):
        r = result[kind]
        print(f"{kind} judge: {r['items']} items, agreement {r['agreement']}, kappa {r['kappa']}")
        for row in CATEGORIES:
            print(f"   reading {row:8}: " + ", ".join(f"{j} {r['confusion'][row][j]}" for j in CATEGORIES))
    t = result["thresholds"]
    print(
        f"thresholds chosen on the calibration trees: full {full}, partial {partial} "
        f"(kappa there {best['kappa']}); held-out kappa {t['held_out_chosen']['kappa']} "
        f"(agreement {t['held_out_chosen']['agreement']}) against {t['held_out_default_0.85_0.7']['kappa']} "
        f"({t['held_out_default_0.85_0.7']['agreement']}) at 0.85/0.7"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
