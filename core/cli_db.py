"""``inquitree db``: the event store's schema and integrity."""

from __future__ import annotations

import sys

import click

from inquitree.core.cli_common import db_option


@click.group()
def db() -> None:
    """The event store: schema upgrades, integrity check, streams."""


@db.command()
@db_option
def upgrade(db_url: str | None) -> None:
    """Bring the store's schema to the newest migration."""
    from inquitree.events import migrate
    from inquitree.events.store import default_url, make_engine, redact

    url = db_url or default_url()
    engine = make_engine(url)
    before = migrate.current_revision(engine)
    migrate.upgrade(engine)
    click.echo(f"{redact(url)}: schema {before or '(empty)'} -> {migrate.current_revision(engine)}")


@db.command()
@db_option
def verify(db_url: str | None) -> None:
    """Walk every stream's hash chain; exit 1 at the first event that no longer matches."""
    from inquitree.events.store import EventStore

    with EventStore(db_url, create=False) as store:
        report = store.verify(progress=lambda n: click.echo(f"  ... {n:,} events checked", err=True))
    if report.ok:
        click.echo(f"ok: {report.events_checked:,} events in {report.streams_checked:,} streams, every hash matches")
        return
    stream, version, what = report.first_problem
    click.echo(f"TAMPERED: stream {stream!r} version {version}: {what}")
    sys.exit(1)


@db.command()
@db_option
@click.option("--prefix", default=None, help="Only streams whose id starts with this.")
def streams(db_url: str | None, prefix: str | None) -> None:
    """List the streams with their versions."""
    from inquitree.events.store import EventStore

    with EventStore(db_url, create=False) as store:
        for s in store.streams(prefix):
            click.echo(f"{s.stream_id}\t{s.version}\t{s.first_recorded_at}\t{s.last_recorded_at}")
