"""Least privilege on PostgreSQL (`inquitree db grant`): the writer records and can do nothing
else to the log; the reader only reads; the owner migrates."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from conftest import fresh_pg_database

from inquitree.cli import main
from inquitree.events import StoreError
from inquitree.events.roles import grant
from inquitree.events.store import EventStore

from tests_support import Noted

WRITER_REFUSED = [
    "UPDATE events SET payload = '{}'",
    "DELETE FROM events",
    "TRUNCATE events",
    "ALTER TABLE events ADD COLUMN x integer",
    "ALTER TABLE events DISABLE TRIGGER events_no_update_delete",
    "DROP TRIGGER events_no_update_delete ON events",
    "SET session_replication_role = replica",
    "SET LOCAL session_replication_role = replica",
    "UPDATE checkpoints SET hash = 'x'",
    "DELETE FROM checkpoints",
    "TRUNCATE checkpoints",
    "ALTER TABLE checkpoints DISABLE TRIGGER checkpoints_no_update_delete",
    "UPDATE alembic_version SET version_num = 'x'",
    "CREATE TABLE shadow (x integer)",
    "DROP TABLE events",
]


@pytest.fixture
def urls():
    admin = fresh_pg_database(role=None)
    return {"admin": admin, **grant(admin)}


def test_the_writer_records_and_verifies(urls):
    with EventStore(urls["writer"]) as store:
        store.append("s", [Noted(n=1), Noted(n=2)], 0)
        assert store.verify().ok and store.current_version("s") == 2


@pytest.mark.parametrize("sql", WRITER_REFUSED)
def test_the_writer_cannot(urls, sql):
    with EventStore(urls["writer"]) as store:
        store.append("s", [Noted(n=1)], 0)
    engine = sa.create_engine(urls["writer"])
    with pytest.raises(sa.exc.DatabaseError, match="permission denied|must be owner"), engine.begin() as conn:
        conn.exec_driver_sql(sql)
    engine.dispose()


@pytest.mark.parametrize(
    "sql", ["INSERT INTO events (stream_id) VALUES ('x')", "INSERT INTO checkpoints (kind) VALUES ('x')"]
)
def test_the_reader_cannot_write(urls, sql):
    engine = sa.create_engine(urls["reader"])
    with pytest.raises(sa.exc.DatabaseError, match="permission denied"), engine.begin() as conn:
        conn.exec_driver_sql(sql)
    engine.dispose()
    with EventStore(urls["reader"], create=False) as store:
        assert store.verify().ok
        with pytest.raises(StoreError, match="permission denied"):
            store.append("s", [Noted(n=1)], 0)


def test_grant_is_idempotent_and_the_cli_prints_urls_without_passwords(urls, monkeypatch):
    monkeypatch.setenv("INQUITREE_PG_WRITER_PASSWORD", "s3cret-writer")
    out = CliRunner().invoke(main, ["db", "grant", "--db", urls["admin"]])
    assert out.exit_code == 0, out.output
    assert "writer\tpostgresql+psycopg://inquitree_writer@" in out.output and "s3cret" not in out.output
    with EventStore(urls["writer"]) as store:  # trust auth on the throwaway cluster: no password asked
        store.append("t", [Noted(n=1)], 0)


def test_the_writer_cannot_migrate_and_is_told_who_can(urls):
    """A store left at revision 0001 (as an older InquiTree made it): the writer may read its
    revision but not upgrade it, and the message names who can."""
    from inquitree.events import migrate
    from inquitree.events.database import make_engine

    old = fresh_pg_database(role=None)
    admin = make_engine(old)
    migrate.upgrade_schema(admin, target="0001_events")
    with admin.begin() as conn:
        conn.exec_driver_sql("GRANT SELECT ON alembic_version, events TO inquitree_writer")
    admin.dispose()
    writer_url = sa.make_url(old).set(username="inquitree_writer").render_as_string(hide_password=False)
    with pytest.raises(StoreError, match="older than '0003_payload_size'"):
        EventStore(writer_url)
    engine = make_engine(writer_url)
    with pytest.raises(StoreError, match="run `inquitree db upgrade` as the store's owner"):
        migrate.upgrade_schema(engine)
    engine.dispose()
