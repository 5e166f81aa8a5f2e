"""``inquitree warehouse``: the DuckDB warehouse's own commands (sync, rebuild, export)."""

from __future__ import annotations

import click

from inquitree.cli.common import (
    db_option,
    echo,
    progress_done,
)
from inquitree.cli.tables import (
    existing,
    registry_option,
    sync_progress,
    warehouse_option,
)


@click.group()
def warehouse() -> None:
    """The DuckDB warehouse: an incremental projection of the event store."""


@warehouse.command()
@db_option
@warehouse_option
@click.option(
    "--trees",
    "trees_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Extra directory of tree files (for episodes on trees that are not shipped).",
)
@click.option(
    "--prices",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Price table (default: $INQUITREE_PRICES, else ~/.config/inquitree/prices.json, else none).",
)
@registry_option
@click.option(
    "--memory",
    default=None,
    metavar="SIZE",
    help="Memory the warehouse may use, e.g. 320MB (the default) or 2GB; the sync's peak follows it, "
    "not the log's size. Default: $INQUITREE_WAREHOUSE_MEMORY or 320MB.",
)
def sync(db_url, warehouse_path, trees_dirs, prices, registry, memory) -> None:
    """Load the events recorded since the last sync."""
    import time
    from pathlib import Path

    from inquitree.warehouse import default_warehouse_path, up_to_date

    t0 = time.perf_counter()
    path = warehouse_path or default_warehouse_path()
    options: dict = {
        "trees_dirs": list(trees_dirs),
        "prices": Path(prices) if prices else None,
        "registry": Path(registry) if registry else None,
    }
    position = up_to_date(path, db_url, memory=memory, **options)  # nothing new: no writer, no copy
    if position is not None:
        echo(f"{path}: 0 new events in {time.perf_counter() - t0:.2f} s; checkpoint at position {position:,}")
        return
    from inquitree.warehouse import kept_only_if_used  # the writer: DuckDB's views, PyArrow, the sync

    with kept_only_if_used(warehouse_path, memory=memory) as wh:
        r = wh.sync(db_url, progress=sync_progress, **options)
        progress_done()
        echo(f"{wh.path}: {r.events:,} new events in {r.seconds:.2f} s; checkpoint at position {r.last_position:,}")


@warehouse.command()
@db_option
@warehouse_option
@click.option("--trees", "trees_dirs", multiple=True, type=click.Path(file_okay=False))
@registry_option
def rebuild(db_url, warehouse_path, trees_dirs, registry) -> None:
    """Delete the warehouse and load every event again."""
    from pathlib import Path

    from inquitree.warehouse import default_warehouse_path
    from inquitree.warehouse import rebuild as do_rebuild

    path = warehouse_path or default_warehouse_path()
    r = do_rebuild(
        path, db_url, progress=sync_progress, trees_dirs=list(trees_dirs), registry=Path(registry) if registry else None
    )
    progress_done()
    echo(f"{path}: rebuilt from {r.events:,} events in {r.seconds:.2f} s")


@warehouse.command()
@warehouse_option
@click.option("--parquet", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write.")
def export(warehouse_path, out_dir) -> None:
    """Write every warehouse table as a Parquet file."""
    with existing(warehouse_path) as wh:
        for p in wh.export_parquet(out_dir):
            echo(str(p))
