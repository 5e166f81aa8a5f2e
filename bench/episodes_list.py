"""`inquitree episodes list` on a large store (issue: 9.6 s at 1M events; goal under 0.3 s at any size).

    python bench/episodes_list.py [--db URL | --events 1000000] [--runs 5] [--out FILE]

Without ``--db`` it generates a store of ``--events`` events (``bench/warehouse.py generate``: real
episodes of the random and oracle agents) in a temporary folder, then times the command in this
process (median of ``--runs``): the first page (50 episodes), a page deep in the log, and a page
of 500; then the first page as a user runs it, a new process each time, alternated with
``inquitree --version``. ``--quick`` is the smoke run of the test suite (a small store, one run).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_startup import timed_processes  # bench/cli_startup.py

from inquitree.cli import main as cli
from inquitree.events.store import EventStore
from warehouse import on_a_large_store  # bench/warehouse.py


def timed(url: str, args: list[str], runs: int) -> dict:
    from click.testing import CliRunner

    times, lines = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        out = CliRunner().invoke(cli, ["episodes", "list", "--db", url, *args])
        times.append(time.perf_counter() - t0)
        if out.exit_code != 0:
            raise SystemExit(f"episodes list {' '.join(args)} failed: {out.output}")
        lines = len(out.stdout.splitlines()) - 1
    return {
        "args": " ".join(args) or "(defaults)",
        "episodes_listed": lines,
        "median_s": round(statistics.median(times), 4),
    }


def wall(url: str, runs: int) -> dict:
    """The command as a user runs it, a new process each time (start-up and imports included),
    alternated with ``inquitree --version`` (the CLI's own start) as the same-moment baseline;
    as this environment runs it, and with the package's bytecode kept (in a temporary
    PYTHONPYCACHEPREFIX written by a first run), as an installed package has it where
    PYTHONDONTWRITEBYTECODE is set (``timed_processes`` in bench/cli_startup.py)."""
    command = [sys.executable, "-m", "inquitree"]
    cases = {"episodes list": [*command, "episodes", "list", "--db", url], "--version": [*command, "--version"]}
    times = timed_processes(cases, runs)
    return {f"{name} median_s": round(statistics.median(ts), 4) for name, ts in times.items()}


def measure(url: str, folder: Path, runs: int) -> dict:
    with EventStore(url, create=False) as store:
        events, episodes = store.last_position(), len(store.newest_streams("episode/", 10**9))
    pages = [[], ["--offset", str(episodes // 2)], ["--limit", "500"]]
    return {
        "events": events,
        "episodes": episodes,
        "runs": runs,
        "pages": [timed(url, a, runs) for a in pages],
        "wall (new process each run)": wall(url, runs),
    }


def main() -> None:
    on_a_large_store(__doc__ or "", measure)


if __name__ == "__main__":
    main()
