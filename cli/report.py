"""``inquitree report``: the HTML report (leaderboard, the paper's figures, an episode viewer)."""

from __future__ import annotations

import click

from inquitree.cli.common import (
    db_option,
    echo,
    progress_done,
)
from inquitree.cli.tables import (
    complete_case_option,
    fixed_papers_option,
    interval_settings,
    joint_ranks_option,
    registry_option,
    scope_options,
    scoped,
    sync_progress,
    warehouse_option,
)


@click.command()
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write.")
@warehouse_option
@db_option
@click.option("--sync/--no-sync", default=True, show_default=True, help="Sync the warehouse from the store first.")
@click.option("--max-episodes", default=200, show_default=True, help="Episode pages to write (the most recent).")
@registry_option
@fixed_papers_option
@joint_ranks_option
@complete_case_option
@scope_options
def report(
    out_dir,
    warehouse_path,
    db_url,
    sync,
    max_episodes,
    registry,
    fixed_papers,
    joint_ranks,
    complete_case,
    suites,
    one_off,
) -> None:
    """Write an HTML report: leaderboard, the paper's figures, and an episode viewer."""
    from pathlib import Path

    from inquitree.warehouse import kept_only_if_used, write_report

    if registry and not sync:
        raise click.UsageError("--registry is read by the sync: it needs --sync")
    settings = interval_settings(fixed_papers, joint_ranks, complete_case)
    with kept_only_if_used(warehouse_path, settings=settings) as wh:
        if sync:
            r = wh.sync(db_url, progress=sync_progress, registry=Path(registry) if registry else None)
            progress_done()
            echo(f"synced {r.events:,} new events", err=True)
        wh.for_analyses()
        scope = scoped(wh, suites, one_off, db_url)
        index = write_report(wh, out_dir, max_episodes=max_episodes, scope=scope)
    echo(f"wrote {index}")
