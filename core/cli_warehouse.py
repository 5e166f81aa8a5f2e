"""``inquitree warehouse``, ``inquitree query`` and ``inquitree sql``: the analytics side."""

from __future__ import annotations

import click

from inquitree.core.cli_common import db_option, progress


def warehouse_option(f):
    return click.option(
        "--warehouse",
        "warehouse_path",
        envvar="INQUITREE_WAREHOUSE",
        default=None,
        metavar="PATH",
        help="DuckDB file (default: $INQUITREE_WAREHOUSE or ./inquitree.duckdb).",
    )(f)


def registry_option(f):
    return click.option(
        "--registry",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        envvar="INQUITREE_REGISTRY",
        help="Model registry file (cutoffs for Fig. 4) that extends the shipped one, or replaces it "
        'with "replace": true; an entry for a listed model replaces it (default: $INQUITREE_REGISTRY).',
    )(f)


def output_options(f):
    """--format and --out, for the commands that print a table (see _emit)."""
    f = click.option("--out", default=None, type=click.Path(dir_okay=False))(f)
    return click.option(
        "--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table", show_default=True
    )(f)


@click.group()
def warehouse() -> None:
    """The DuckDB warehouse: an incremental projection of the event store."""


def _progress(n: int, pos: int) -> None:
    progress(f"  ... {n:,} events loaded (position {pos:,})")


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
    help="Price table (default: $INQUITREE_PRICES or trees/registry/prices.json).",
)
@registry_option
def sync(db_url, warehouse_path, trees_dirs, prices, registry) -> None:
    """Load the events recorded since the last sync."""
    from pathlib import Path

    from inquitree.warehouse.sync import Warehouse

    with Warehouse(warehouse_path) as wh:
        r = wh.sync(
            db_url,
            progress=_progress,
            trees_dirs=list(trees_dirs),
            prices=Path(prices) if prices else None,
            registry=Path(registry) if registry else None,
        )
        click.echo(
            f"{wh.path}: {r.events:,} new events in {r.seconds:.2f} s; checkpoint at position {r.last_position:,}"
        )


@warehouse.command()
@db_option
@warehouse_option
@click.option("--trees", "trees_dirs", multiple=True, type=click.Path(file_okay=False))
@registry_option
def rebuild(db_url, warehouse_path, trees_dirs, registry) -> None:
    """Delete the warehouse and load every event again."""
    from pathlib import Path

    from inquitree.warehouse.sync import default_warehouse_path
    from inquitree.warehouse.sync import rebuild as do_rebuild

    path = warehouse_path or default_warehouse_path()
    r = do_rebuild(
        path, db_url, progress=_progress, trees_dirs=list(trees_dirs), registry=Path(registry) if registry else None
    )
    click.echo(f"{path}: rebuilt from {r.events:,} events in {r.seconds:.2f} s")


@warehouse.command()
@warehouse_option
@click.option("--parquet", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write.")
def export(warehouse_path, out_dir) -> None:
    """Write every warehouse table as a Parquet file."""
    from inquitree.warehouse.sync import Warehouse

    with Warehouse(warehouse_path) as wh:
        for p in wh.export_parquet(out_dir):
            click.echo(str(p))


def _emit(df, fmt: str, out: str | None) -> None:
    import polars as pl

    if fmt == "parquet":
        if not out:
            raise click.UsageError("--format parquet needs --out FILE")
        df.write_parquet(out)
        click.echo(f"wrote {df.height} rows to {out}", err=True)
        return
    if fmt == "csv":
        text = df.write_csv()
    elif fmt == "json":
        text = df.write_json()
    else:
        with pl.Config(tbl_rows=200, tbl_cols=40, fmt_str_lengths=60, tbl_width_chars=200):
            text = str(df)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        click.echo(text, nl=not text.endswith("\n"))


@click.command()
@click.argument("name", required=False)
@warehouse_option
@output_options
@click.option("--list", "list_", is_flag=True, help="List the queries with their first comment line.")
def query(name, warehouse_path, fmt, out, list_) -> None:
    """Run queries/NAME.sql against the warehouse (sync first)."""
    from inquitree.warehouse.sync import QUERIES_DIR, query_names

    if list_ or not name:
        for q in query_names():
            first = (QUERIES_DIR / f"{q}.sql").read_text().splitlines()[0].removeprefix("-- ")
            click.echo(f"{q:28} {first}")
        return
    with _existing(warehouse_path) as wh:
        _emit(wh.query(name), fmt, out)


@click.command()
@click.argument("text")
@warehouse_option
@output_options
def sql(text, warehouse_path, fmt, out) -> None:
    """Run one SQL statement against the warehouse, on a read-only connection (it cannot change it)."""
    with _existing(warehouse_path, read_only=True) as wh:
        _emit(wh.sql(text), fmt, out)


def _existing(warehouse_path: str | None, read_only: bool = False):
    """The warehouse, which must exist and hold a sync: a query on an empty one says what to do."""
    from pathlib import Path

    from inquitree.warehouse.sync import Warehouse, WarehouseError, default_warehouse_path

    path = warehouse_path or default_warehouse_path()
    if not Path(path).exists():
        raise WarehouseError(f"no warehouse at {path}: run `inquitree warehouse sync` first (it reads the store)")
    wh = Warehouse(path, read_only=read_only)
    if not wh.con.execute("SELECT count(*) FROM sync_state").fetchall()[0][0]:
        wh.close()
        raise WarehouseError(f"the warehouse {path} holds nothing yet: run `inquitree warehouse sync` first")
    return wh


@click.command()
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write.")
@warehouse_option
@db_option
@click.option("--sync/--no-sync", default=True, show_default=True, help="Sync the warehouse from the store first.")
@click.option("--max-episodes", default=200, show_default=True, help="Episode pages to write (the most recent).")
@registry_option
def report(out_dir, warehouse_path, db_url, sync, max_episodes, registry) -> None:
    """Write an HTML report: leaderboard, the paper's figures, and an episode viewer."""
    from pathlib import Path

    from inquitree.warehouse.report import write_report
    from inquitree.warehouse.sync import Warehouse

    with Warehouse(warehouse_path) as wh:
        if sync:
            r = wh.sync(db_url, progress=_progress, registry=Path(registry) if registry else None)
            click.echo(f"synced {r.events:,} new events", err=True)
        index = write_report(wh, out_dir, max_episodes=max_episodes)
    click.echo(f"wrote {index}")
