"""The database's immutability guards: which are in place, and putting back the missing ones.

The log is immutable because the database refuses UPDATE, DELETE and TRUNCATE on the events
and checkpoints tables: triggers on both backends (migrations 0001 and 0002), and on PostgreSQL
also the roles' grants (``events/roles.py``: the writer and reader may not change a row). Whoever
owns the file or the tables can remove a guard (``DROP TRIGGER``, ``ALTER TABLE ... DISABLE
TRIGGER``, ``GRANT UPDATE``) and change rows afterwards; the hash chains still catch the change,
but a store without its guards is no longer protected against the next one. ``db verify`` names
each missing guard and ``db upgrade`` (as the owner) puts it back.
"""

from __future__ import annotations

from typing import Any

__all__ = ["missing", "restore"]

_SQLITE = {
    "events_no_update": ("events", "UPDATE"),
    "events_no_delete": ("events", "DELETE"),
    "checkpoints_no_update": ("checkpoints", "UPDATE"),
    "checkpoints_no_delete": ("checkpoints", "DELETE"),
}
_POSTGRES = {
    "events_no_update_delete": ("events", "UPDATE OR DELETE", "ROW", "inquitree_events_immutable"),
    "events_no_truncate": ("events", "TRUNCATE", "STATEMENT", "inquitree_events_immutable"),
    "checkpoints_no_update_delete": ("checkpoints", "UPDATE OR DELETE", "ROW", "inquitree_checkpoints_immutable"),
    "checkpoints_no_truncate": ("checkpoints", "TRUNCATE", "STATEMENT", "inquitree_checkpoints_immutable"),
}
_PG_FUNCTION = """CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION '{table} are immutable: % is not allowed', TG_OP; END $$"""
_PG_GRANTS = """SELECT c.relname, coalesce(r.rolname, 'PUBLIC'), a.privilege_type
    FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
    WHERE c.relname IN ('events', 'checkpoints') AND c.relnamespace = current_schema()::regnamespace
      AND a.privilege_type IN ('UPDATE', 'DELETE', 'TRUNCATE') AND a.grantee <> c.relowner
    ORDER BY 1, 2, 3"""


def _state(cur: Any, dialect: str) -> tuple[set[str], set[str], list[tuple[str, str, str]]]:
    """(triggers present, triggers disabled, (table, role, privilege) granted beyond the owner)."""
    if dialect == "sqlite":
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {r[0] for r in cur.fetchall()}, set(), []
    cur.execute(
        "SELECT t.tgname, t.tgenabled FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "WHERE NOT t.tgisinternal AND c.relname IN ('events', 'checkpoints') "
        "AND c.relnamespace = current_schema()::regnamespace"
    )
    rows = cur.fetchall()
    present = {name for name, _ in rows}
    disabled = {name for name, enabled in rows if enabled == "D"}
    cur.execute(_PG_GRANTS)
    return present, disabled, [tuple(r) for r in cur.fetchall()]


def missing(cur: Any, dialect: str) -> list[str]:
    """Each guard that is not in force, as a sentence ([] when all are)."""
    expected = _SQLITE if dialect == "sqlite" else _POSTGRES if dialect == "postgresql" else {}
    if not expected:
        return []
    present, disabled, grants = _state(cur, dialect)
    found = []
    for name, (table, what, *_) in expected.items():
        if name not in present:
            found.append(f"trigger {name} is missing ({what} on {table} is not refused)")
        elif name in disabled:
            found.append(f"trigger {name} is disabled ({what} on {table} is not refused)")
    found += [f"role {role} may {privilege} {table}" for table, role, privilege in grants]
    return found


def restore(conn: Any, dialect: str) -> list[str]:
    """Put back every missing guard on a DBAPI connection of the owner; returns what was done."""
    cur = conn.cursor()
    present, disabled, grants = _state(cur, dialect)
    done = []
    if dialect == "sqlite":
        for name, (table, what) in _SQLITE.items():
            if name not in present:
                cur.execute(
                    f"CREATE TRIGGER {name} BEFORE {what} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} are immutable: {what} is not allowed'); END"
                )
                done.append(f"created trigger {name}")
    elif dialect == "postgresql":
        for name, (table, what, level, function) in _POSTGRES.items():
            if name not in present:
                cur.execute(_PG_FUNCTION.format(name=function, table=table))
                cur.execute(
                    f"CREATE TRIGGER {name} BEFORE {what} ON {table} FOR EACH {level} EXECUTE FUNCTION {function}()"
                )
                done.append(f"created trigger {name}")
            elif name in disabled:
                cur.execute(f"ALTER TABLE {table} ENABLE TRIGGER {name}")
                done.append(f"enabled trigger {name}")
        for table, role, privilege in grants:
            grantee = "PUBLIC" if role == "PUBLIC" else '"' + role.replace('"', '""') + '"'
            cur.execute(f"REVOKE {privilege} ON TABLE {table} FROM {grantee}")
            done.append(f"revoked {privilege} on {table} from {role}")
    conn.commit()
    cur.close()
    return done
