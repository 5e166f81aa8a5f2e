"""The Qwen 1.5B study's conclusion score corrected by the careful readings (docs/studies/qwen-1.5b.md,
"The score corrected by careful readings"): the study's exported episodes imported under its key,
the 150 conclusion items read by hand (core/data/judging/qwen-conclusions.jsonl) appended as a
labeller's answers, exactly as ``inquitree label conclusions`` appends them, and the leaderboard
read with and without them.

    python studies/qwen_corrected.py [--out studies/results/qwen_corrected.json]

The readings were chosen by hash order across both arms and all 18 trees, not drawn by
``inquitree label``; hash order knows nothing of an item's content, so they stand in for a
random sample. The readings of the imported episodes (both arms of the study's export; the
others belong to the fakes arm, played again) are appended; the leaderboard reads those of the
randomness-0 arm.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "docs" / "studies" / "qwen-1.5b"
READINGS = ROOT / "core" / "data" / "judging" / "qwen-conclusions.jsonl"
OUT = Path(__file__).resolve().parent / "results" / "qwen_corrected.json"
ANSWER = {"credited": "stated", "partial": "partial", "absent": "absent"}
LABELLER = "careful-reading"
COLUMNS = (
    "judge_id",
    "papers",
    "episodes",
    "conclusion_score",
    "conclusion_score_ci_low",
    "conclusion_score_ci_high",
    "conclusion_score_corrected",
    "conclusion_score_corrected_ci_low",
    "conclusion_score_corrected_ci_high",
    "labelled_items",
    "corrected_method",
)


def inquitree(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "inquitree", *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"inquitree {args[0]}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    from inquitree.events import EventStore, LabelRecorded, episode_stream

    with tempfile.TemporaryDirectory() as tmp:
        db, wh = f"sqlite:///{Path(tmp) / 'study.sqlite'}", str(Path(tmp) / "study.duckdb")
        files = sorted(str(p) for p in (STUDY / "episodes").glob("*.jsonl"))
        inquitree("episodes", "import", *files, "--key", str(STUDY / "signing.pub"), "--db", db)
        leaderboard = ["query", "table2_leaderboard", "--suite", "qwen-1.5b", "--warehouse", wh, "--format", "json"]
        inquitree("warehouse", "sync", "--db", db, "--warehouse", wh)
        before = json.loads(inquitree(*leaderboard))
        readings = [json.loads(line) for line in READINGS.read_text().splitlines() if line.strip()]
        kept = 0
        with EventStore(db) as store:
            version = 0
            for r in readings:
                stream = episode_stream(r["episode"])
                recorded = store.read_stream(stream)
                submitted = [e for e in recorded if e.event_type == "ConclusionSubmitted"]
                if not submitted:
                    continue  # an episode of another arm, not imported here
                label = LabelRecorded(
                    labeller=LABELLER,
                    sample_id="conclusions.qwen-1.5b.careful-reading",
                    kind="conclusion",
                    suite="qwen-1.5b",
                    seed=0,
                    size=len(readings),
                    stream_id=stream,
                    position=submitted[0].stream_version,
                    answer=ANSWER[r["reading"]],
                    item_id=r["item"],
                )
                version = store.append("labels/conclusions.qwen-1.5b.careful-reading", [label], version)
                kept += 1
        inquitree("warehouse", "sync", "--db", db, "--warehouse", wh)
        after = json.loads(inquitree(*leaderboard))
    result = {
        "readings": len(readings),
        "labelled_here": kept,
        "before": [{k: r.get(k) for k in COLUMNS} for r in before],
        "after": [{k: r.get(k) for k in COLUMNS} for r in after],
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for r in result["after"]:
        print(
            f"{r['judge_id']}: judge {r['conclusion_score']:.3f} [{r['conclusion_score_ci_low']:.3f}, "
            f"{r['conclusion_score_ci_high']:.3f}]; corrected by {r['labelled_items']} readings "
            f"{r['conclusion_score_corrected']:.3f} [{r['conclusion_score_corrected_ci_low']:.3f}, "
            f"{r['conclusion_score_corrected_ci_high']:.3f}]"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
