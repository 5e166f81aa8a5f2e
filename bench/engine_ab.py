"""Recording speed of this checkout against an earlier revision, A/B in one run: bench/engine.py of
each, alternated round by round on the same machine (it is shared, so the two are compared round
by round, never against a figure measured at another hour).

    python bench/engine_ab.py --base REV [--rounds 5] [--episodes 150] [--out FILE]

The earlier revision is checked out into a temporary git worktree and imported as ``inquitree``
through PYTHONPATH (its own folder, linked under that name), with this venv's packages. Per round
and revision: engine-plus-matching steps/s, recorded steps/s and their ratio (the cost of
recording a step, as a multiple of playing it), and the recording overhead in ms a step. The
verdict compares the medians of the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIELDS = ("engine_plus_cached_matching_steps_per_s", "recorded_steps_per_s", "recording_overhead_ms_per_step")


def one_run(package_root: Path, checkout: Path, episodes: int, out: Path) -> dict:
    """bench/engine.py of ``checkout`` with ``inquitree`` imported from it; its three figures."""
    env = {"PYTHONPATH": str(package_root), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    cmd = [sys.executable, str(checkout / "bench" / "engine.py"), "--episodes", str(episodes), "--rounds", "1"]
    subprocess.run([*cmd, "--out", str(out)], check=True, env=env, cwd=out.parent, capture_output=True)
    found = json.loads(out.read_text())
    row = {k: found[k] for k in FIELDS}
    row["ratio"] = round(row["engine_plus_cached_matching_steps_per_s"] / row["recorded_steps_per_s"], 2)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the earlier revision (a commit or tag)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--episodes", type=int, default=150)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "engine_ab.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="inquitree-ab-") as tmp:
        work = Path(tmp)
        base = work / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), args.base], check=True)
        try:
            sides = {}
            for name, checkout in (("head", ROOT), ("base", base)):
                (work / f"pkg-{name}").mkdir()
                (work / f"pkg-{name}" / "inquitree").symlink_to(checkout)
                sides[name] = (work / f"pkg-{name}", checkout)
            rounds: dict[str, list[dict]] = {"head": [], "base": []}
            for k in range(args.rounds):
                for name in ("head", "base") if k % 2 == 0 else ("base", "head"):
                    row = one_run(*sides[name], args.episodes, work / f"{name}-{k}.json")
                    rounds[name].append(row)
                    print(
                        f"round {k + 1}, {name}: ratio {row['ratio']}, {row['recorded_steps_per_s']} steps/s recorded"
                    )
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    medians = {n: {f: statistics.median(r[f] for r in rows) for f in (*FIELDS, "ratio")} for n, rows in rounds.items()}
    result = {
        "head": head.stdout.strip(),
        "base": args.base,
        "episodes": args.episodes,
        "rounds": rounds,
        "medians": medians,
        "ratio_head_over_base": round(medians["head"]["ratio"] / medians["base"]["ratio"], 3),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"median cost of recording a step, as a multiple of playing it: head {medians['head']['ratio']}, "
        f"base {medians['base']['ratio']} ({result['ratio_head_over_base']}x); wrote {args.out}"
    )


if __name__ == "__main__":
    main()
