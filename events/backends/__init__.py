"""The databases an event store can live in, one module each (``sqlite.py``, ``postgres.py``), behind
one interface, :class:`Backend`: what differs between them (the driver's placeholder, how a write
transaction starts and appends are serialized, a many-row insert, a prefix as an index range, a
server-side scan, the immutability guards). ``events/database.py`` holds what is the same for all
of them and asks the backend for the rest; adding a database is adding a module here and a line to
:func:`backend_named`. The shared store tests (``tests/test_store.py``) run on every backend."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    import sqlalchemy as sa


# The largest payload an event may have, in bytes: the store refuses a larger one before it writes
# anything, and the database's own guard (migration 0003) refuses it from any writer.
MAX_PAYLOAD_BYTES = 4 * 1024 * 1024
# The guard the database holds every INSERT to, as events/guards.py names what it refuses.
SIZE_GUARD = ("events_payload_size", "events", f"an INSERT of a payload over {MAX_PAYLOAD_BYTES:,} bytes")


class Backend:
    """What a database does its own way. Every method takes the driver's cursor or connection; the
    defaults are standard SQL."""

    name: str = ""  # SQLAlchemy's dialect name: "sqlite", "postgresql"
    mark: str = "?"  # the driver's placeholder
    newest_table: str = "events"  # the table expression a newest-first page of streams reads
    # the guards: trigger name -> (table, what it refuses, ...), see events/guards.py
    guards: Mapping[str, tuple[str, ...]] = {}

    def engine(self, url: sa.URL, read_only: bool, shown: str) -> sa.Engine:
        """A SQLAlchemy engine for ``url`` (a parsed URL; ``shown``: it without its password);
        ``read_only``: its connections refuse to write, in the database itself."""
        raise NotImplementedError

    def begin_append(self, cur: Any) -> None:
        """Start an append's transaction, holding off every other appender until it commits."""
        raise NotImplementedError

    def begin_write(self, cur: Any) -> None:
        """Start a write transaction that is not an append (checkpoints, imported signatures)."""
        raise NotImplementedError

    def hold_off_appends(self, cur: Any) -> None:
        """Inside a write transaction: no append may commit until it ends (a signer reads the log
        and writes its checkpoints in one such transaction)."""
        raise NotImplementedError

    def migration_lock(self) -> str | None:
        """A statement that makes schema migrations of this database wait for one another inside a
        transaction (None: the transaction itself does, as SQLite's BEGIN IMMEDIATE)."""
        return None

    def insert_rows(self, cur: Any, insert_one: str, columns: int, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``rows`` of ``columns`` values with ``insert_one`` (an INSERT of one row)."""
        raise NotImplementedError

    def prefix_range(self, prefix: str) -> str | None:
        """The upper end of an index range holding exactly the ids starting with ``prefix``, or None
        to match by LIKE."""
        return None

    def scan_cursor(self, driver: Any) -> Any:
        """A cursor for a walk over the whole log, fetched in batches."""
        return driver.cursor()

    def guard_state(self, cur: Any) -> tuple[set[str], set[str], list[tuple[str, str, str]]]:
        """(triggers present, triggers disabled, (table, role, privilege) granted beyond the owner)."""
        raise NotImplementedError

    def restore_guards(
        self, cur: Any, present: set[str], disabled: set[str], grants: list[tuple[str, str, str]]
    ) -> list[str]:
        """Put back the guards not in force; returns what was done."""
        raise NotImplementedError


class Connections:
    """Where a store's connections come from: a plain SQLite file opens its own with sqlite3
    (:class:`~inquitree.events.backends.sqlite.FileConnections`), anything else takes them from
    SQLAlchemy's pool (:class:`Pooled`). A store asks for one with :meth:`take` and hands it back
    with :meth:`give_back`, and never asks which kind it has."""

    backend: Backend
    dbapi: Any  # the driver module: its IntegrityError and Error are what appends catch

    def connect(self) -> Any:
        """A new DBAPI connection (the appends' own, kept open between appends)."""
        raise NotImplementedError

    def take(self) -> Any:
        """A connection for a read, for as long as the caller holds it."""
        return self.connect()

    def give_back(self, conn: Any) -> None:
        """Done with ``conn`` (from :meth:`take`): kept for the next read, or closed."""
        self.discard(conn)

    def discard(self, conn: Any) -> None:
        """Done with ``conn`` after an error: rolled back and closed (a pool's is given back), never reused."""
        with contextlib.suppress(Exception):
            conn.rollback()
        conn.close()

    def close(self) -> None:
        """Close what is kept (connections, a pool)."""


class Pooled(Connections):
    """Connections from SQLAlchemy's pool (PostgreSQL, with a liveness check before each use; a
    SQLite URL with options, or in memory): given back rolled back."""

    def __init__(self, engine: Callable[[], sa.Engine]):
        """``engine``: the store's engine, made on first use."""
        self._engine = engine
        dialect = engine().dialect
        self.backend, self.dbapi = backend_named(dialect.name), dialect.dbapi

    def connect(self) -> Any:
        return self._engine().raw_connection()


def connections_for(url: str, read_only: bool, engine: Callable[[], sa.Engine], shown: str) -> Connections:
    """The connections of the store at ``url``: a plain SQLite file's own (SQLAlchemy, slow to
    import, in every command that opens a store and in every worker, is then loaded only to make
    or upgrade the schema), else SQLAlchemy's pool. ``shown``: the URL without its password."""
    from inquitree.events.backends import sqlite

    path = sqlite.plain_file(url)
    if path is None:
        return Pooled(engine)
    sqlite.check_parent(path, shown)
    return sqlite.FileConnections(path, read_only)


def backend_named(name: str) -> Backend:
    """The backend of a SQLAlchemy dialect name; an unknown one is an error."""
    if name == "sqlite":
        from inquitree.events.backends.sqlite import SQLite

        return SQLite()
    if name == "postgresql":
        from inquitree.events.backends.postgres import Postgres

        return Postgres()
    raise ValueError(f"no event store backend for the database {name!r}")
