"""Least privilege on PostgreSQL: an owner, a writer and a reader for one store.

- **owner** owns the tables and runs the migrations (``inquitree db upgrade``).
- **writer** records: it may SELECT and INSERT the events and checkpoints (and use their
  sequences) and read the schema revision; nothing else. Without ownership it cannot ALTER the
  tables or disable their triggers, and without superuser it cannot set
  ``session_replication_role``; UPDATE, DELETE and TRUNCATE are not granted at all.
- **reader** may only SELECT (the warehouse and the read commands).

:func:`grant` sets this up from a connection with the right to create roles (a superuser or the
database's owner with CREATEROLE). It is idempotent: run it again after an upgrade. Passwords,
when the server asks for them, come from the environment (``INQUITREE_PG_<ROLE>_PASSWORD``) and
are never written down or printed.
"""

from __future__ import annotations

import os
import re

import sqlalchemy as sa

from inquitree.events import migrate
from inquitree.events.errors import StoreError

DEFAULT_ROLES = {"owner": "inquitree_owner", "writer": "inquitree_writer", "reader": "inquitree_reader"}
TABLES = ("events", "checkpoints")
FUNCTIONS = ("inquitree_events_immutable()", "inquitree_checkpoints_immutable()")
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def password_env(role: str) -> str:
    return f"INQUITREE_PG_{role.upper()}_PASSWORD"


def grant(admin_url: str, roles: dict[str, str] | None = None) -> dict[str, str]:
    """Create the three roles (if missing), bring the schema to head, give the tables to the owner
    and grant the writer and reader what they need. Returns each role's URL (no password)."""
    from inquitree.events.database import make_engine, redact

    roles = {**DEFAULT_ROLES, **(roles or {})}
    for kind, name in roles.items():
        if not _NAME.fullmatch(name):
            raise StoreError(f"role name for --{kind} must be lower-case letters, digits and _: {name!r}")
    engine = make_engine(admin_url)
    if engine.dialect.name != "postgresql":
        raise StoreError(f"{redact(admin_url)}: roles are a PostgreSQL feature (a SQLite file has no users)")
    database = sa.make_url(admin_url).database
    owner, writer, reader = roles["owner"], roles["writer"], roles["reader"]
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for kind, name in roles.items():
                password = os.environ.get(password_env(kind))
                exists = conn.exec_driver_sql("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).first()
                verb = "ALTER" if exists else "CREATE"
                if password:
                    # DDL takes no bound parameters: a quoted literal (standard_conforming_strings is on).
                    literal = "'" + password.replace("'", "''") + "'"
                    conn.exec_driver_sql(f"{verb} ROLE {name} LOGIN PASSWORD {literal}")
                else:
                    conn.exec_driver_sql(f"{verb} ROLE {name} LOGIN")
            conn.exec_driver_sql(f'GRANT CONNECT ON DATABASE "{database}" TO {owner}, {writer}, {reader}')
            conn.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {owner}, {writer}, {reader}")
            conn.exec_driver_sql(f"GRANT CREATE ON SCHEMA public TO {owner}")
            conn.exec_driver_sql("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        migrate.upgrade_schema(engine, where=redact(admin_url))
        with engine.begin() as conn:
            for table in (*TABLES, "alembic_version"):
                conn.exec_driver_sql(f"ALTER TABLE {table} OWNER TO {owner}")
                conn.exec_driver_sql(f"REVOKE ALL ON TABLE {table} FROM PUBLIC, {writer}, {reader}")
            for function in FUNCTIONS:
                conn.exec_driver_sql(f"ALTER FUNCTION {function} OWNER TO {owner}")
            tables = ", ".join(TABLES)
            conn.exec_driver_sql(f"GRANT SELECT, INSERT ON TABLE {tables} TO {writer}")
            conn.exec_driver_sql(f"GRANT SELECT ON TABLE {tables}, alembic_version TO {reader}")
            conn.exec_driver_sql(f"GRANT SELECT ON TABLE alembic_version TO {writer}")
            conn.exec_driver_sql(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {writer}")
            # Tables a later migration (run by the owner) creates get the same grants.
            conn.exec_driver_sql(
                f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT SELECT, INSERT ON TABLES TO {writer}"
            )
            conn.exec_driver_sql(
                f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT SELECT ON TABLES TO {reader}"
            )
            conn.exec_driver_sql(
                f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT USAGE ON SEQUENCES TO {writer}"
            )
    except sa.exc.SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", exc)).strip()
        for kind in roles:  # the server may quote the statement back, password included
            if os.environ.get(password_env(kind)):
                reason = reason.replace(os.environ[password_env(kind)], "***")
        raise StoreError(f"{redact(admin_url)}: cannot set up the roles: {reason}") from None
    finally:
        engine.dispose()
    base = sa.make_url(admin_url).set(password=None)
    return {kind: base.set(username=name).render_as_string(hide_password=False) for kind, name in roles.items()}
