"""The event store's database: where it is (URLs, the default, redaction), the one description of
its ``events`` and ``checkpoints`` tables as the store reads them, and its connections: reads on a
connection taken for a block, appends on one kept open, walks over the whole log in batches.
Where the connections come from (sqlite3 itself for a plain file, SQLAlchemy's pool for anything
else) and what differs between databases are the backends' (``events/backends/``).
:class:`~inquitree.events.store.EventStore` holds a ``Database`` (``store.db``); it knows nothing of events.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from inquitree.events.backends import backend_named, connections_for, sqlite
from inquitree.events.chain import GENESIS_HASH
from inquitree.events.errors import (
    StoreDamaged,
    StoreError,
    is_damage,
)

if TYPE_CHECKING:
    import sqlalchemy as sa

DB_ENV = "INQUITREE_DB"
DEFAULT_URL = "sqlite:///inquitree.sqlite"

INSERT_COLUMNS = (
    "global_position",
    "stream_id",
    "stream_version",
    "event_type",
    "schema_version",
    "recorded_at",
    "payload",
    "prev_hash",
    "hash",
    "log_hash",
)
EVENT_COLUMNS = ", ".join(INSERT_COLUMNS)  # a SELECT's columns in RecordedEvent's order
# What a projection (the warehouse) reads of each event, in this order: no hashes (verify checks those).
NOTIFICATION_COLUMNS = INSERT_COLUMNS[:7]


def notifications_sql(after: str, upto: str | None = None, limit: str | None = None) -> str:
    """The store's one query for projections, in the manner of a notification log: the events
    after a global position (and up to one), in order, with ``NOTIFICATION_COLUMNS``. The
    arguments are the driver's placeholders (``?``, ``%s``, ``$1``)."""
    where = f"global_position > {after}" + (f" AND global_position <= {upto}" if upto else "")
    tail = f" LIMIT {limit}" if limit else ""
    return f"SELECT {', '.join(NOTIFICATION_COLUMNS)} FROM events WHERE {where} ORDER BY global_position{tail}"


LAST_POSITION_SQL = "SELECT max(global_position) FROM events"
SCHEMA_REVISION_SQL = "SELECT version_num FROM alembic_version"  # Alembic's record of the schema

CHECKPOINT_COLUMNS = ("seq", "kind", "subject", "position", "hash", "signed_at", "key_id", "signature", "note")


def default_url() -> str:
    """The store URL: ``$INQUITREE_DB`` or ``sqlite:///inquitree.sqlite`` (in the working directory)."""
    return os.environ.get(DB_ENV) or DEFAULT_URL


_SECOND: tuple[int, str] = (-1, "")  # the last whole second utc_now formatted, and its text


def utc_now() -> str:
    """``2026-11-22T04:00:00.123456Z``. On every append: the date and time are formatted once a
    second, the microseconds every time (a fifth of ``datetime.isoformat``'s cost)."""
    global _SECOND
    sec, us = divmod(time.time_ns() // 1000, 1_000_000)
    last = _SECOND  # one read: another thread may replace it, never half of it
    if last[0] != sec:
        last = _SECOND = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{last[1]}.{us:06d}Z"


def epoch_of(recorded_at: str) -> float:
    """Seconds since the epoch of a ``recorded_at`` that :func:`utc_now` wrote."""
    import datetime as dt

    return dt.datetime.fromisoformat(recorded_at.replace("Z", "+00:00")).timestamp()


def redact(url: str) -> str:
    """The URL without its password, for messages (``user:***@``, as SQLAlchemy renders it)."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def _is_db_error(exc: BaseException) -> bool:
    """An error of a database or its driver (sqlite3, psycopg, or SQLAlchemy's wrapping of them)."""
    if isinstance(exc, sqlite3.Error):
        return True
    for module, name in (("sqlalchemy.exc", "SQLAlchemyError"), ("psycopg", "Error")):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(exc, cls):
            return True
    return False


def make_engine(url: str, read_only: bool = False) -> sa.Engine:
    """A SQLAlchemy engine for the store URL, with a clear error for a bad URL; with ``read_only``
    its connections refuse to write (SQLite's query_only, PostgreSQL's read-only transactions)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception as exc:
        raise StoreError(
            f"not a database URL: {url!r} (expected e.g. sqlite:///runs.sqlite or "
            f"postgresql+psycopg://user@host:5432/db)"
        ) from exc
    try:
        backend = backend_named(parsed.get_backend_name())
    except ValueError:
        raise StoreError(
            f"{redact(url)}: unsupported database {parsed.get_backend_name()!r} "
            "(InquiTree stores events in SQLite or PostgreSQL)"
        ) from None
    return backend.engine(parsed, read_only, redact(url))


def _schema_revision(cur: Any) -> str | None:
    """The store's schema revision as Alembic records it, or None (no table, or not one row)."""
    try:  # a failed statement ends the caller's transaction; its connection is rolled back right after
        cur.execute(SCHEMA_REVISION_SQL)
        rows = cur.fetchall()
    except Exception as exc:
        if not _is_db_error(exc):
            raise
        return None
    return rows[0][0] if len(rows) == 1 else None


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern (with ESCAPE '/') for the strings that start with ``prefix``."""
    return prefix.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"


def _rollback(raw: Any) -> None:
    with contextlib.suppress(Exception):
        raw.rollback()


def _short(exc: BaseException) -> str:
    """The driver's own one-line reason, without SQLAlchemy's boilerplate."""
    orig = getattr(exc, "orig", None) or exc
    lines = [ln.strip() for ln in str(orig).strip().splitlines() if ln.strip()]
    return "; ".join(lines[:2]) if lines else type(orig).__name__


class Database:
    """Connections to one event store's database; what its database does its own way is its
    ``backend``'s (``events/backends/``)."""

    def __init__(self, url: str | None, read_only: bool, create: bool):
        """Find the database at ``url`` and set up its connections (none is opened yet). Without
        ``create``, a SQLite file that does not exist is an error, not a new store."""
        self.url = url or default_url()
        self.read_only = read_only
        if not create:
            path = sqlite.sqlite_database(self.url)
            if path is not None and not Path(path).expanduser().exists():
                raise StoreError(
                    f"no event store at {redact(self.url)} (no such file: {Path(path).expanduser().resolve()}); "
                    "`inquitree play --record`, `suite run` or `episodes import` create one"
                )
        self._engine: sa.Engine | None = None
        self._engine_lock = threading.Lock()
        self.connections = connections_for(self.url, read_only, lambda: self.engine, redact(self.url))
        self.backend = self.connections.backend
        self.dialect = self.backend.name
        self.dbapi: Any = self.connections.dbapi
        # Appends of one process queue on a lock: on SQLite a writer that finds the file locked waits
        # in SQLite's busy handler, which sleeps in growing steps (up to 100 ms), and the heads this
        # store remembers are updated by one append at a time.
        self.write_lock = threading.Lock()
        self.mark = self.backend.mark
        self._raw: Any = None  # the pooled connection appends use (see EventStore._append)
        self._wconn: Any = None  # its driver connection, and a cursor on it kept between appends
        self._wcur: Any = None

    def __repr__(self) -> str:
        return f"Database({redact(self.url)!r})"

    def damage(self, exc: BaseException) -> StoreDamaged:
        return StoreDamaged(
            f"the event store {redact(self.url)} is damaged ({_short(exc)}): `inquitree db verify --db URL` "
            "reports the damage and what can still be proven and exported",
            _short(exc),
        )

    @property
    def engine(self) -> sa.Engine:
        """The store's SQLAlchemy engine, made on first use (migrations, and every URL but a plain
        SQLite file)."""
        with self._engine_lock:
            if self._engine is None:
                self._engine = make_engine(self.url, self.read_only)
            return self._engine

    def close(self) -> None:
        if self._raw is not None:
            with contextlib.suppress(Exception):
                self._wcur.close()
                self._raw.close()
            self._raw = self._wconn = self._wcur = None
        self.connections.close()
        if self._engine is not None:
            self._engine.dispose()

    # -- connections -----------------------------------------------------------------------
    @contextlib.contextmanager
    def cursor(self) -> Iterator[Any]:
        """A cursor for reads, on a connection taken for as long as the block runs."""
        conn = self.connections.take()
        try:
            cur = conn.cursor()
            try:
                yield cur
            finally:
                cur.close()
        except Exception as exc:
            self.connections.discard(conn)
            if _is_db_error(exc) and is_damage(exc):
                raise self.damage(exc) from exc
            raise
        except BaseException:
            self.connections.discard(conn)
            raise
        self.connections.give_back(conn)

    # -- writing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def write_transaction(self) -> Iterator[Any]:
        """A cursor on the appends' connection in one transaction (under the write lock), committed
        when the block ends and rolled back if it raises."""
        with self.write_lock:
            raw, cur = self.writer()
            try:
                self.backend.begin_write(cur)
                yield cur
                raw.commit()
            except BaseException:
                _rollback(raw)
                raise

    def writer(self) -> tuple[Any, Any]:
        """(driver connection, cursor) for appends, opened on first use."""
        if self.read_only:
            raise StoreError(f"{redact(self.url)} was opened read-only: nothing can be appended through it")
        if self._raw is None:
            self._raw = self.connections.connect()
            self._wconn = getattr(self._raw, "driver_connection", self._raw)
            self._wcur = self._wconn.cursor()
        return self._wconn, self._wcur

    def drop_writer(self) -> None:
        raw, self._raw = self._raw, None
        self._wconn = self._wcur = None
        if raw is not None:
            with contextlib.suppress(Exception):
                # closes it: a connection that failed is not reused (nor given back to a pool)
                raw.invalidate() if hasattr(raw, "invalidate") else raw.close()

    def hash_on(self, cur: Any, stream_id: str, version: int) -> str | None:
        """The stream hash at ``version`` (the genesis hash before version 1; None: no such event)."""
        if version == 0:
            return GENESIS_HASH
        m = self.mark
        cur.execute(f"SELECT hash FROM events WHERE stream_id = {m} AND stream_version = {m}", (stream_id, version))
        row = cur.fetchone()
        return row[0] if row else None

    @staticmethod
    def read_log_head(cur: Any) -> tuple[int, str]:
        cur.execute("SELECT global_position, log_hash FROM events ORDER BY global_position DESC LIMIT 1")
        row = cur.fetchone()
        return (row[0], row[1]) if row is not None else (0, GENESIS_HASH)

    def missing_guards(self) -> list[str]:
        """The immutability guards (triggers; on PostgreSQL also grants) that are not in force."""
        from inquitree.events import guards

        with self.cursor() as cur:
            return guards.missing(cur, self.backend)

    def declared_guards(self) -> list[str]:
        """The immutability guards this database's backend has, in force or not."""
        from inquitree.events import guards

        return guards.declared(self.backend)

    def starting_with(self, prefix: str) -> tuple[str, tuple[str, ...]]:
        """A condition (and its arguments) for the stream ids that start with ``prefix``, exactly.

        On SQLite it is a range of the (stream_id, stream_version) index, which holds exactly the
        ids that start with the prefix: LIKE is case-insensitive there, so it could not use that
        index and read every event (a campaign's start read a million-event store twice over,
        0.85 s). On PostgreSQL LIKE is exact already; a range there would follow the database's
        collation, not the bytes."""
        m = self.mark
        end = self.backend.prefix_range(prefix)
        if end is None:
            return f"stream_id LIKE {m} ESCAPE '/'", (_like_prefix(prefix),)
        return f"stream_id >= {m} AND stream_id < {m}", (prefix, end)

    @contextlib.contextmanager
    def scan(self, sql: str) -> Iterator[Iterator[tuple[Any, ...]]]:
        """The rows of ``sql`` straight from the driver, fetched in batches (a server-side cursor on
        PostgreSQL), for walks over the whole log: SQLAlchemy's row objects cost more than the hashing."""
        raw = self.connections.connect()
        try:
            driver: Any = getattr(raw, "driver_connection", raw)
            cur = self.backend.scan_cursor(driver)
            cur.execute(sql)

            def rows() -> Iterator[tuple[Any, ...]]:
                while batch := cur.fetchmany(20_000):
                    yield from batch

            yield rows()
            cur.close()
        except Exception as exc:
            if _is_db_error(exc) and is_damage(exc):
                raise self.damage(exc) from exc
            raise
        finally:
            _rollback(raw)
            raw.close()
