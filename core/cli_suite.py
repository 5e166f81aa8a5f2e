"""``inquitree suite``: run and inspect evaluation campaigns."""

from __future__ import annotations

import sys
import time

import click

from inquitree.core.cli_common import db_option, progress


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
def run(suite_file, db_url, shard, concurrency, agents, workers) -> None:
    """Run every unfinished cell: skip finished episodes, continue interrupted ones."""
    from inquitree.core.campaign import Suite, parse_shard, run_suite
    from inquitree.events.store import EventStore

    s = Suite.load(suite_file, agents)
    index, count = parse_shard(shard)
    if workers > 1:
        sys.exit(_run_workers(suite_file, db_url, (index, count), concurrency, agents, workers))
    last = [0.0]

    def on_cell(report, remaining: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0 or remaining == 0:
            last[0] = now
            progress(
                f"  done {report.done}  failed {report.failed}  remaining {remaining}  "
                f"skipped {report.skipped}  tokens {report.tokens:,}",
                done=remaining == 0,
            )

    t0 = time.perf_counter()
    with EventStore(db_url) as store:
        report = run_suite(s, store, (index, count), progress=on_cell, concurrency=concurrency)
    budget = f", {report.not_started} not started (the campaign budget is spent)" if report.not_started else ""
    click.echo(
        f"suite {s.name} shard {index}/{count}: {report.cells} cells, {report.skipped} already finished, "
        f"{report.done} done now, {report.failed} failed, {report.taken_elsewhere} taken by another worker"
        f"{budget} ({time.perf_counter() - t0:.1f} s)"
    )
    for err in report.errors[:50]:
        click.echo(f"  failed: {err}", err=True)
    if len(report.errors) > 50:
        click.echo(
            f"  ... and {len(report.errors) - 50} more: `inquitree suite status {suite_file}` lists them", err=True
        )
    sys.exit(1 if report.failed else 0)


def worker_shards(shard: tuple[int, int], workers: int) -> list[str]:
    """Split shard I/M between ``workers`` processes: worker k runs shard (I + M(k-1))/(M*workers),
    whose cells are exactly shard I/M's, every ``workers``-th of them."""
    index, count = shard
    return [f"{index + count * k}/{count * workers}" for k in range(workers)]


def _run_workers(suite_file, db_url, shard, concurrency, agents, workers: int) -> int:
    """Run the campaign in ``workers`` child processes (each `suite run --shard`, so each keeps the
    guarantees of a shard: cells run once, a finished cell is skipped, an interrupted one resumed),
    and relay what each says. The store URL goes to them in the environment, not in their
    command lines (which other users of the machine can read)."""
    import os
    import subprocess

    env = dict(os.environ)
    if db_url:
        env["INQUITREE_DB"] = db_url
    procs = []
    for k, sub in enumerate(worker_shards(shard, workers), start=1):
        cmd = [sys.executable, "-m", "inquitree", "suite", "run", suite_file, "--shard", sub]
        if concurrency:
            cmd += ["-j", str(concurrency)]
        for spec in agents:
            cmd += ["--agent", spec]
        procs.append((k, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    t0 = time.monotonic()
    outputs = {}
    try:
        shown = -1.0
        while any(p.poll() is None for _, p in procs):
            if time.monotonic() - shown >= 0.5:
                shown = time.monotonic()
                running = sum(p.poll() is None for _, p in procs)
                progress(f"  {running} of {workers} workers running ({shown - t0:.0f} s)")
            time.sleep(0.02)  # the end is noticed within 20 ms, not half a second (bench/campaign.py)
        progress(f"  {workers} workers finished ({time.monotonic() - t0:.0f} s)", done=True)
    finally:
        for k, p in procs:
            if p.poll() is None:
                p.terminate()
            outputs[k] = (p.communicate()[0] or "").rstrip()
    for k, _ in procs:
        for line in outputs[k].splitlines():
            click.echo(f"worker {k}/{workers}: {line}")
    codes = [p.returncode for _, p in procs]
    return max(codes) if all(c >= 0 for c in codes) else 2


@suite.command("status")
@click.argument("suite_file", type=click.Path(dir_okay=False))
@db_option
@click.option("--agent", "agents", multiple=True, metavar="SPEC", help="As given to `suite run --agent`.")
def status(suite_file, db_url, agents) -> None:
    """How many cells are finished, failed, interrupted or not started; each failed cell with its reason."""
    from inquitree.core.campaign import Suite
    from inquitree.core.runner import STREAM_PREFIX, stream_id
    from inquitree.events.store import EventStore

    s = Suite.load(suite_file, agents)
    with EventStore(db_url, create=False) as store:
        started = {x.stream_id for x in store.streams(prefix=STREAM_PREFIX)}
        finished = store.streams_with_event(STREAM_PREFIX, "EpisodeScored")
        failed = store.streams_with_event(STREAM_PREFIX, "EpisodeFailed")
        counts = {"finished": 0, "failed": 0, "interrupted": 0, "not started": 0}
        reasons = []
        for c in s.cells():
            sid = stream_id(c.episode_id(s.name))
            key = (
                "finished"
                if sid in finished
                else "failed"
                if sid in failed
                else "interrupted"
                if sid in started
                else "not started"
            )
            counts[key] += 1
            if key == "failed":
                last = next(r.event for r in reversed(store.read_stream(sid)) if r.event_type == "EpisodeFailed")
                reasons.append(
                    f"  failed: {sid.removeprefix(STREAM_PREFIX)} at step {last.step}: "
                    f"[{last.kind or '?'}{', retryable' if last.retryable else ''}] {last.error}"
                )
    click.echo(f"suite {s.name}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    for line in reasons:
        click.echo(line)
