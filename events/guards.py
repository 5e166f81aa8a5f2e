"""The database's guards: which are in place, and putting back the missing ones.

The log is immutable because the database refuses UPDATE, DELETE and TRUNCATE on the events
and checkpoints tables, and bounded because it refuses an event whose payload is over the
store's limit from any writer: triggers on every backend (migrations 0001, 0002 and 0003; each
backend's module in ``events/backends/`` lists its own), and on PostgreSQL
also the roles' grants (``events/roles.py``: the writer and reader may not change a row). Whoever
owns the file or the tables can remove a guard (``DROP TRIGGER``, ``ALTER TABLE ... DISABLE
TRIGGER``, ``GRANT UPDATE``) and change rows afterwards; the hash chains still catch the change,
but a store without its guards is no longer protected against the next one. ``db verify`` names
each missing guard and ``db upgrade`` (as the owner) puts it back.
"""

from __future__ import annotations

from typing import Any

from inquitree.events.backends import Backend

__all__ = ["declared", "missing", "restore_guards"]


def declared(backend: Backend) -> list[str]:
    """The guards this backend has, one phrase each (``db verify`` lists them): what the database
    itself refuses, whatever the writer."""
    return [f"{name} refuses {what} on {table}" for name, (table, what, *_) in backend.guards.items()]


def missing(cur: Any, backend: Backend) -> list[str]:
    """Each guard that is not in force, as a sentence ([] when all are). A backend that has none
    is not guarded at all, and says so: only the chains, with an anchor or a key, show a change."""
    expected = backend.guards
    if not expected:
        return [
            f"the {backend.name or 'store'} backend has no immutability guards: the database itself refuses "
            "no UPDATE, DELETE or oversized INSERT"
        ]
    present, disabled, grants = backend.guard_state(cur)
    found = []
    for name, (table, what, *_) in expected.items():
        if name not in present:
            found.append(f"trigger {name} is missing ({what} on {table} is not refused)")
        elif name in disabled:
            found.append(f"trigger {name} is disabled ({what} on {table} is not refused)")
    found += [f"role {role} may {privilege} {table}" for table, role, privilege in grants]
    return found


def restore_guards(conn: Any, backend: Backend) -> list[str]:
    """Put back every missing guard on a DBAPI connection of the owner; returns what was done."""
    cur = conn.cursor()
    done = backend.restore_guards(cur, *backend.guard_state(cur))
    conn.commit()
    cur.close()
    return done
