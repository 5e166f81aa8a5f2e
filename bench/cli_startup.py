"""CLI start-up: wall time of `inquitree --version` and `inquitree play --help`, against a bare
`python -c pass` of the same interpreter, alternated in one run (the machine is shared).

Each command is timed twice: as the environment runs it, and with the package's compiled
bytecode kept (in a temporary PYTHONPYCACHEPREFIX, written by a first run), as an installed
package has it (pip compiles it at install). Where PYTHONDONTWRITEBYTECODE is set, as on the
machines these sessions run on, the first figure includes compiling every module from source.

    python bench/cli_startup.py [--runs 15] [--out bench/results/cli_startup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "inquitree"]
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "inquitree --version": [*CLI, "--version"],
    "inquitree play --help": [*CLI, "play", "--help"],
}


def timed_processes(cases: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Each command's wall seconds over ``runs`` rounds, the commands alternated within a round (the
    machine is shared), twice: as this environment runs them (key: the case's name) and with the
    bytecode kept in a temporary PYTHONPYCACHEPREFIX written by a first run (name + " (bytecode kept)")."""
    with tempfile.TemporaryDirectory() as pyc:
        envs = {
            "": dict(os.environ),
            " (bytecode kept)": {
                **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                "PYTHONPYCACHEPREFIX": pyc,
            },
        }
        for cmd in cases.values():  # writes the bytecode
            subprocess.run(cmd, check=True, capture_output=True, env=envs[" (bytecode kept)"])
        times: dict[str, list[float]] = {k + e: [] for e in envs for k in cases}
        for _ in range(runs):
            for label, env in envs.items():
                for name, cmd in cases.items():
                    t0 = time.perf_counter()
                    subprocess.run(cmd, check=True, capture_output=True, env=env)
                    times[name + label].append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "cli_startup.json"))
    args = ap.parse_args()
    times = timed_processes(CASES, args.runs)
    result = {
        "stamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": args.runs,
        "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
        "median_s": {k: round(statistics.median(v), 3) for k, v in times.items()},
        "min_s": {k: round(min(v), 3) for k, v in times.items()},
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
