"""Bringing a database to the schema this code expects, through Alembic only."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from inquitree.events.backends import backend_named
from inquitree.events.errors import StoreError
from inquitree.events.revisions import MIGRATIONS_DIR, revision_problem
from inquitree.events.schema import metadata


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("the migrations have no head revision")
    return head


def known_revisions() -> set[str]:
    return {s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


def current_revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade_schema(engine: sa.Engine, target: str = "head", where: str = "the database") -> None:
    """Bring the database to ``target``, one process at a time.

    Processes opening a new store together all reach this point: on SQLite the upgrade runs in a
    ``BEGIN IMMEDIATE`` transaction (the others wait in SQLite's busy handler), on PostgreSQL under
    a transaction-scoped advisory lock; each checks the revision again once it holds the lock, so
    only the first migrates and the others find the schema in place."""
    cfg = alembic_config()
    with engine.connect().execution_options(writer=True) as conn, conn.begin():
        lock = backend_named(engine.dialect.name).migration_lock()
        if lock is not None:
            conn.execute(sa.text(lock))
        rev = MigrationContext.configure(conn).get_current_revision()
        if target == "head" and rev == head_revision():
            return
        if rev is None and sa.inspect(conn).has_table("events"):
            raise StoreError(f"{where} has an events table but no alembic_version: it was not made by InquiTree")
        cfg.attributes["connection"] = conn
        try:
            command.upgrade(cfg, target)
        except RuntimeError as exc:  # a migration that refuses the data it found (it says why)
            raise StoreError(f"{where}: {exc}") from exc
        except sa.exc.ProgrammingError as exc:  # e.g. the writer role, which may not change the schema
            reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            raise StoreError(
                f"{where}: cannot change the schema ({reason}); run `inquitree db upgrade` as the store's owner "
                "(on PostgreSQL the owner role of `inquitree db grant`)"
            ) from exc


def drift(engine: sa.Engine) -> list[Any]:
    """Differences between the models (events/schema.py) and the migrated database."""
    with engine.connect() as conn:
        return list(compare_metadata(MigrationContext.configure(conn), metadata))


def ensure_schema(engine: sa.Engine, where: str, *, auto_upgrade: bool = True) -> None:
    """Check the database's schema revision; bring an empty database to head.

    ``where`` names the database in messages (its URL without a password). A database at an
    unknown (newer) revision, or at an older one, is an error that names the revision and what
    to do (``revisions.revision_problem``: the warehouse says the same).
    """
    rev = current_revision(engine)
    head = head_revision()
    if rev == head:
        return
    if rev is None and auto_upgrade:
        upgrade_schema(engine, where=where)  # checks again, and for a foreign events table, under its lock
        return
    if rev is None and sa.inspect(engine).has_table("events"):
        raise StoreError(f"{where} has an events table but no alembic_version: it was not made by InquiTree")
    raise StoreError(revision_problem(where, rev, head, known_revisions()) or f"{where}: schema revision {rev!r}")
