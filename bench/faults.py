"""The fault matrix of the real-model issue, and the longest a never-answering endpoint holds a step.

1. For each fault, a 2-cell campaign against a loopback server that turns faulty after two calls
   (tests/faultkit.py, the same runs the tests check): how each episode ended, and whether every
   cell was accounted for.
2. A server that accepts the connection and never answers, with the default call settings
   (timeout 60 s, 2 retries, each retry after a timeout waiting twice as long): the wall time one
   agent step is held, against the stated bound.

    python bench/faults.py [--out bench/results/faults.json] [--skip-hang]
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from slow_drip import held_call

from inquitree.core.calls.settings import CallSettings

from faultkit import FAULTS, run_fault


def never_answers() -> dict:
    """One agent call with the default settings against an endpoint that never answers."""
    return {"settings": CallSettings().describe(), **held_call("hang", CallSettings())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "faults.json"))
    ap.add_argument("--skip-hang", action="store_true")
    ap.add_argument("--quick", action="store_true", help="the smoke run: two faults, no hanging endpoint")
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="inquitree-faults-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)  # no folder outlives the run
    rows = []
    for fault in [f for f in FAULTS if not args.quick or f in (500, "retry_after")]:
        r = run_fault(fault, d / str(fault))
        eps = list(r["episodes"].values())
        rows.append(
            {
                "fault": r["fault"],
                "cells": r["cells"],
                "done": r["done"],
                "failed": r["failed"],
                "accounted": r["done"] + r["failed"] == r["cells"],
                "ended": sorted(
                    {(e.get("kind") or e["outcome"]) + (" (retryable)" if e.get("retryable") else "") for e in eps}
                ),
                "message": eps[0].get("error", "")[:200] if eps else "",
                "wall_s": r["wall_s"],
                "requests": r["requests"],
            }
        )
        print(rows[-1], flush=True)
    result = {
        "stamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
        ).stdout.strip(),
        "matrix_settings": "2 cells, the server fails every call after the 2nd (retry_after: one 429 "
        "with Retry-After: 1 s), timeout 0.5 s, max_retries 1, suite retries 0",
        "matrix": rows,
    }
    if not (args.skip_hang or args.quick):
        result["never_answers_default_settings"] = never_answers()
        print(result["never_answers_default_settings"], flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
