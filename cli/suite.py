"""``inquitree suite``: run and inspect evaluation campaigns."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from typing import Any, Callable

import click

from inquitree.cli.common import Progress, db_option, echo, progress, progress_due, say


@click.group()
def suite() -> None:
    """Evaluation campaigns described by a suite file (TOML)."""


@suite.command("run")
@click.argument("suite_file", type=click.Path(dir_okay=False))
@db_option
@click.option("--shard", default=None, metavar="I/N", help="Run only every N-th cell, starting at the I-th.")
@click.option("--concurrency", "-j", type=int, default=None, help="Episodes in flight (default: the suite's).")
@click.option(
    "--agent",
    "agents",
    multiple=True,
    metavar="SPEC",
    help="Run these agents instead of the suite's (repeatable), e.g. --agent openai:gpt-5.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes: each runs its share of the cells (a sub-shard) with its own -j episodes in flight.",
)
@click.option(
    "--trust-suite",
    is_flag=True,
    help="Let the suite name files outside its folder and the current directory, and send $OPENAI_API_KEY to "
    "its base URLs (only for a suite you wrote or checked).",
)
@click.option("--as-worker", is_flag=True, hidden=True, help="Run as one of --workers' processes: its parent reports.")
def run(suite_file, db_url, shard, concurrency, agents, workers, trust_suite, as_worker) -> None:
    """Run every unfinished cell: skip finished episodes, continue interrupted ones."""
    from inquitree.core.run import Suite, parse_shard, set_up
    from inquitree.events import EventStore

    s = Suite.load(suite_file, agents, trusted=trust_suite)
    from inquitree.core.game import resolve_tree

    for tree in s.trees:  # a typo in a tree is refused before the store is made
        resolve_tree(tree)
    index, count = parse_shard(shard)
    setup = set_up(s)  # a missing key or a wrong agent is refused before the store is made, too
    if workers > 1:
        # The store is opened (made, or checked) once here, not by every worker at once; it is
        # closed again before the workers start, so that none inherits a connection.
        EventStore(db_url).close()
        sys.exit(_run_workers(suite_file, db_url, (index, count), concurrency, agents, workers, trust_suite))
    sys.exit(run_shard(s, suite_file, db_url, (index, count), concurrency, agents, worker=as_worker, setup=setup))


def run_shard(
    s,
    suite_file: str,
    db_url: str | None,
    shard: tuple[int, int],
    concurrency: int | None,
    agents: tuple = (),
    worker: bool = False,
    setup=None,
) -> int:
    """Run one shard of the campaign with its progress and report (``suite run`` and each forked
    worker call this, the worker with its sub-shard: its parent says the progress and the scores);
    returns the command's exit code."""
    from inquitree.core.run import HALT_AFTER, CampaignInterrupted, run_suite
    from inquitree.events import EventStore

    index, count = shard

    def on_cell(report, remaining: int) -> None:
        # an endpoint that reports no usage for a stream (llama.cpp's server): its chunks are counted
        noun = "tokens (streamed chunks, where no usage was reported)" if report.chunks_counted else "tokens"
        extra = f"; {report.done} done, {report.failed} failed" + (
            f", {report.tokens:,} {noun}" if report.tokens else ""
        )
        if meter is not None:  # (a worker has none: it is not called there)
            meter.in_flight = report.in_flight
            meter.update(report.cells - remaining, extra, total=report.cells)

    t0 = time.perf_counter()
    interrupted = False
    with EventStore(db_url) as store, contextlib.nullcontext() if worker else Progress(0, "cells") as meter:
        try:
            report = run_suite(
                s, store, (index, count), progress=None if worker else on_cell, concurrency=concurrency, setup=setup
            )
        except CampaignInterrupted as exc:
            report, interrupted = exc.report, True
    if interrupted or report.halted:
        left = f", {report.stopped} stopped at a step and {report.not_started} not started"
    elif report.not_started:
        left = f", {report.not_started} not started (the campaign budget is spent)"
    else:
        left = ""
    echo(
        f"suite {s.name} shard {index}/{count}: {report.cells} cells, {report.skipped} already finished, "
        f"{report.done} done now, {report.failed} failed, {report.taken_elsewhere} taken by another worker"
        f"{left} ({time.perf_counter() - t0:.1f} s)"
    )
    for line in report.reused_elsewhere:  # finished cells of another endpoint, kept
        say(line, err=True)
    if not worker:
        with EventStore(db_url) as store:
            say_scores(s, store)
    if interrupted:
        echo("interrupted: run the same command again to continue where it stopped", err=True)
    status = status_command(suite_file, db_url, tuple(agents))
    say_failures(report.errors, status)
    if report.halted:  # one line, the status command in it whole
        who = f" of {', '.join(report.halted_agents)}" if report.halted_agents else ""
        echo(
            f"stopped: the first {HALT_AFTER} cells{who} all failed the same way and none succeeded: "
            f"{report.halted}; every other agent's cells were played. "
            "Fix what it says (is the server up? the key? the model's name? its token budget?), then run the same "
            f"command again: it continues with the cells left. `{status}` shows where the campaign stands.",
            err=True,
        )
    return 130 if interrupted else 1 if (report.failed or report.halted) else 0


def say_failures(errors: list[str], status: str, shown: int = 20) -> None:
    """Each way the cells failed, once, with how many cells failed that way and the first of them
    (an error is ``EPISODE: why``); the most frequent first."""
    from collections import Counter

    ways: Counter[str] = Counter()
    first: dict[str, str] = {}
    for err in errors:
        episode, _, why = err.partition(": ")
        ways[why or episode] += 1
        first.setdefault(why or episode, episode)
    for why, count in ways.most_common(shown):
        cells = f"{count} cells, the first {first[why]}" if count > 1 else first[why]
        echo(f"  failed ({cells}): {why}", err=True)
    if len(ways) > shown:
        echo(f"  ... and {len(ways) - shown} other reasons: `{status}` lists every failed cell", err=True)


def say_scores(s, store) -> None:
    """The campaign's short leaderboard: each agent's conclusion score with its interval, per judge."""
    from inquitree.core.run import campaign_scores

    rows = campaign_scores(s, store)
    width = max((len(r.agent) for r in rows), default=0)
    for judge in dict.fromkeys(r.judge for r in rows):
        mine = [r for r in rows if r.judge == judge]
        papers = max(r.interval.papers for r in mine)
        level = mine[0].randomness
        say(f"conclusion score at randomness {level}, judge {judge} (mean over {papers} papers, 95% interval):")
        for r in mine:
            i = r.interval
            if i.estimate is None:
                cell = "no score"
            elif i.low is None or i.high is None:
                cell = f"{i.estimate:.2f} [no interval]"
            else:
                cell = f"{i.estimate:.2f} [{i.low:.2f}, {i.high:.2f}]"
            without = f"  ({r.unscored} episodes without a usable verdict)" if r.unscored else ""
            echo(f"  {r.agent:<{width}}  {cell}{without}")
    if rows:
        say(
            "(the tables, with methods and warnings: inquitree warehouse sync, then inquitree query table2_leaderboard)"
        )


def status_command(suite_file: str, db_url: str | None, agents: tuple[str, ...]) -> str:
    """The `suite status` command for this campaign, as a user can paste it: the same store and
    agents as the run (a password in the store's URL shown as ***)."""
    import shlex

    from inquitree.events import redact

    words = ["inquitree", "suite", "status", suite_file]
    if db_url:
        words += ["--db", redact(db_url)]
    for a in agents:
        words += ["--agent", a]
    return shlex.join(words)


def worker_shards(shard: tuple[int, int], workers: int) -> list[str]:
    """Split shard I/M between ``workers`` processes: worker k runs shard (I + M(k-1))/(M*workers),
    whose cells are exactly shard I/M's, every ``workers``-th of them."""
    index, count = shard
    return [f"{index + count * k}/{count * workers}" for k in range(workers)]


class _ForkedWorker:
    """A worker forked from this process: ``work`` (the campaign's API for its sub-shard, not the
    command line again) in a child that already has every module this process imported, so it
    starts at once instead of importing them again (about a second per worker, most of the gap
    to the ideal in bench/campaign.py). Only the
    subset of :class:`subprocess.Popen` that :func:`_run_workers` uses (``stdout``, ``poll``,
    ``send_signal``, ``terminate``, ``wait``, ``returncode``)."""

    def __init__(self, work: Callable[[], int], env: dict[str, str]):
        import os

        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # or the child would print this process's pending output again
        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 2
            try:
                os.close(read)
                os.dup2(write, 1)
                os.dup2(write, 2)
                os.close(write)
                # Python-level streams on the new descriptors: sys.stdout may have been replaced
                # (a test's capture, an embedding program) and would not reach the pipe.
                sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - the worker's own streams, for the life of the process
                sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - the worker's own streams, for the life of the process
                os.environ.clear()
                os.environ.update(env)
                code = work()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # reported on the relayed output, as a child process would
                import traceback

                traceback.print_exc()
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        os.close(write)
        self.stdout = os.fdopen(read, encoding="utf-8", errors="replace")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        import os

        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        import os

        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def wait(self) -> int:
        import os

        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


def _wait_for(procs: list[tuple[int, Any]], workers: int, t0: float) -> None:
    # On a terminal a line rewritten twice a second; piped (CI, nohup) a line every 10 s.
    due = progress_due(0.5) if sys.stderr.isatty() else progress_due(10.0)
    while any(p.poll() is None for _, p in procs):
        if due(False):
            running = sum(p.poll() is None for _, p in procs)
            line = f"  {running} of {workers} workers running ({time.monotonic() - t0:.0f} s)"
            if sys.stderr.isatty():
                progress(line)
            else:
                echo(line, err=True)
        time.sleep(0.02)  # the end is noticed within 20 ms, not half a second (bench/campaign.py)
    progress(f"  {workers} workers finished ({time.monotonic() - t0:.0f} s)", done=True)


def _drain(stream, into: list[str]) -> None:
    with stream:
        into.append(stream.read())


def _can_fork() -> bool:
    """Fork where it is the platform's way (Linux and the BSDs); elsewhere workers are new
    interpreters (macOS's system libraries are not fork-safe; Windows has no fork)."""
    import os

    return hasattr(os, "fork") and sys.platform != "darwin" and os.environ.get("INQUITREE_WORKERS_FORK", "1") != "0"


def _run_workers(suite_file, db_url, shard, concurrency, agents, workers: int, trusted: bool = False) -> int:
    """Run the campaign in ``workers`` child processes (each `suite run --shard`, so each keeps the
    guarantees of a shard: cells run once, a finished cell is skipped, an interrupted one resumed),
    and relay what each says. The store URL goes to them in the environment, not in their
    command lines (which other users of the machine can read)."""
    import functools
    import os
    import subprocess

    from inquitree.core.run import Suite, parse_shard

    env = dict(os.environ)
    if db_url:
        env["INQUITREE_DB"] = db_url
    procs: list[tuple[int, Any]] = []
    fork = _can_fork()
    for k, sub in enumerate(worker_shards(shard, workers), start=1):
        args = ["suite", "run", suite_file, "--shard", sub, "--as-worker"]
        if concurrency:
            args += ["-j", str(concurrency)]
        for spec in agents:
            args += ["--agent", spec]
        if trusted:
            args.append("--trust-suite")
        if fork:
            work = functools.partial(
                run_shard,
                Suite.load(suite_file, agents, trusted=trusted),
                suite_file,
                db_url,
                parse_shard(sub),
                concurrency,
                tuple(agents),
                worker=True,
            )
            procs.append((k, _ForkedWorker(work, env)))
        else:
            cmd = [sys.executable, "-m", "inquitree", *args]
            out = subprocess.PIPE
            procs.append((k, subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)))
    # Each worker's output is drained as it comes, so that no worker can wait on a full pipe
    # (64 KB; a run prints at most 50 failures, but a crash's traceback has no such bound).
    outputs: dict[int, list[str]] = {k: [] for k, _ in procs}
    readers = [threading.Thread(target=_drain, args=(p.stdout, outputs[k]), daemon=True) for k, p in procs]
    for r in readers:
        r.start()
    t0 = time.monotonic()
    try:
        try:
            _wait_for(procs, workers, t0)
        except KeyboardInterrupt:
            # Each worker stops as `suite run` does: its episodes in flight end at a step boundary.
            # A Ctrl-C from the terminal reached them already; a signal sent to this process only
            # did not, so it is relayed (a worker takes the two as one).
            for _, p in procs:
                with contextlib.suppress(OSError, ValueError):  # gone already; no SIGINT to send on Windows
                    p.send_signal(signal.SIGINT)
            progress("  stopping: the workers' episodes in flight finish their step (Ctrl-C again to end them now)")
            _wait_for(procs, workers, t0)
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.terminate()
            p.wait()
        for r in readers:
            r.join()
    for k, _ in procs:
        for line in "".join(outputs[k]).rstrip().splitlines():
            echo(f"worker {k}/{workers}: {line}")
    from inquitree.events import EventStore

    with EventStore(db_url) as store:
        say_scores(Suite.load(suite_file, agents, trusted=trusted), store)
    codes = [p.returncode for _, p in procs]
    return max(codes) if all(c >= 0 for c in codes) else 2


# A cell's state (core/run/cells.py) as `suite status` counts it, in the order it prints them.
STATUS_WORDS = {
    "finished": "finished",
    "limit": "ended by a limit",
    "failed": "failed",
    "interrupted": "interrupted",
    "running": "running",
    "pending": "not started",
}


def _cause_lines(causes: dict[tuple[str, str, str], list[str]]) -> list[str]:
    """Each way cells failed or ended by a limit, once, with the agent, how many cells and the first
    of them (a campaign's run says a reason once with a count; status repeated it per cell)."""
    lines = []
    for (what, agent, why), ids in causes.items():
        many = f"{len(ids)} cells of {agent}" if len(ids) > 1 else f"1 cell of {agent}"
        first = ids[0] if len(ids) == 1 else f"{ids[0]} and {len(ids) - 1} more"
        verb = "failed" if what == "failed" else "ended by a limit"
        lines.append(f"  {verb}: {many} ({first}): {why}")
    return lines


@suite.command("status")
@click.argument("suite_file", type=click.Path(dir_okay=False))
@db_option
@click.option("--agent", "agents", multiple=True, metavar="SPEC", help="As given to `suite run --agent`.")
def status(suite_file, db_url, agents) -> None:
    """How many cells are finished, ended by a limit, failed, interrupted, running or not started
    (as the viewer's live list tells them); each failed cell with its reason."""
    from inquitree.core.run import STATE_EVENTS, Suite, cell_state, recorded_cells, recorded_runs, run_status
    from inquitree.events import EventStore

    s = Suite.load(suite_file, agents, trusted=True)  # status reads no file the suite names and calls nothing
    with EventStore(db_url, create=False) as store:
        folds = recorded_cells(store, s.name, STATE_EVENTS)  # tokens and cost are the viewer's: no replies read
        now = time.time()
        state, note = run_status(recorded_runs(store, s.name), now)
    alive = None if state is None else state == "running"
    counts = dict.fromkeys(STATUS_WORDS, 0)
    causes: dict[tuple[str, str, str], list[str]] = {}  # (what, agent, why) -> the cells' episode ids
    for c in s.cells():
        eid = c.episode_id(s.name)
        fold = folds.get(eid)
        cell = cell_state(fold, now, alive)
        counts[cell] += 1
        if cell in ("failed", "limit") and fold is not None:
            why = str(fold.reason) if cell == "failed" else f"the {fold.limit} limit"
            causes.setdefault((cell, c.agent, why), []).append(eid)
    shown = [f"{n} {STATUS_WORDS[k]}" for k, n in counts.items() if n or k not in ("limit", "running")]
    echo(f"suite {s.name}: " + ", ".join(shown))
    if state is not None:
        echo(f"  campaign: {state} ({note})")
    for line in _cause_lines(causes):
        echo(line)
