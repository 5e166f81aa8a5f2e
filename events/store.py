"""The event store: an append-only log over SQLAlchemy Core (SQLite or PostgreSQL).

- ``append(stream_id, events, expected_version)`` commits atomically; the unique
  key on (stream_id, stream_version) is the optimistic-concurrency check and its
  integrity error becomes :class:`ConcurrencyError`.
- Reads: one stream from a version, every stream after a global position (for
  projections), the list of streams.
- Immutability is the database's job (triggers from the first migration).
- Each event's ``hash`` covers the previous event's hash in its stream and the
  event's own content; :meth:`EventStore.verify` walks the chains.

Global positions are handed out in commit order: SQLite has one writer at a
time (appends run in ``BEGIN IMMEDIATE``), and on PostgreSQL every append takes
one transaction-level advisory lock before it inserts, so a projection reading
"after position P" never skips an event that commits later with a smaller
position.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import sqlite3
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import make_url

from inquitree.events import migrate
from inquitree.events.base import Event, decode, parse_json
from inquitree.events.errors import ConcurrencyError, StoreError, UnknownEventType, UnknownEventVersion
from inquitree.events.schema import events as events_table

DB_ENV = "INQUITREE_DB"
DEFAULT_URL = "sqlite:///inquitree.sqlite"
GENESIS_HASH = "0" * 64
_PG_APPEND_LOCK = 0x1A7E_7EE  # the advisory-lock key that serializes appends on PostgreSQL

_INSERT_COLUMNS = (
    "stream_id",
    "stream_version",
    "event_type",
    "schema_version",
    "recorded_at",
    "payload",
    "prev_hash",
    "hash",
)


def default_url() -> str:
    """The store URL: ``$INQUITREE_DB`` or ``sqlite:///inquitree.sqlite`` (in the working directory)."""
    return os.environ.get(DB_ENV) or DEFAULT_URL


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a malformed URL is shown as given
        return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def chain_hash(
    prev_hash: str,
    stream_id: str,
    stream_version: int,
    event_type: str,
    schema_version: int,
    recorded_at: str,
    payload_json: str,
) -> str:
    """sha256 over the previous hash and this event's stored content."""
    text = f"{prev_hash}\n{stream_id}\n{stream_version}\n{event_type}\n{schema_version}\n{recorded_at}\n{payload_json}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclasses.dataclass(frozen=True)
class RecordedEvent:
    """An event as stored: position, stream version, metadata and payload."""

    global_position: int
    stream_id: str
    stream_version: int
    event_type: str
    schema_version: int
    recorded_at: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str

    @property
    def event(self) -> Event:
        """The payload decoded (and upcast) into the current event class."""
        try:
            return decode(self.event_type, self.schema_version, self.payload)
        except (UnknownEventType, UnknownEventVersion) as exc:
            raise StoreError(
                f"{exc} (stream {self.stream_id!r}, version {self.stream_version}, "
                f"global position {self.global_position})"
            ) from exc


@dataclasses.dataclass(frozen=True)
class StreamInfo:
    stream_id: str
    version: int
    first_recorded_at: str
    last_recorded_at: str


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    events_checked: int
    streams_checked: int
    first_problem: tuple[str, int, str] | None  # (stream_id, stream_version, what)

    @property
    def ok(self) -> bool:
        return self.first_problem is None


def _sqlite_engine(url: sa.URL) -> sa.Engine:
    database = url.database or ""
    if database and database != ":memory:":
        parent = Path(database).expanduser().resolve().parent
        if not parent.is_dir():
            raise StoreError(f"cannot open the event store {url}: directory {parent} does not exist")
    busy_ms = int(os.environ.get("INQUITREE_SQLITE_BUSY_MS", "30000"))
    engine = sa.create_engine(url, connect_args={"timeout": busy_ms / 1000})

    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={busy_ms}")
        # Switching a new file to WAL needs it alone for a moment; processes opening a new store
        # together can find it busy without SQLite waiting for them, so the switch is tried again.
        deadline = time.monotonic() + busy_ms / 1000
        while True:
            try:
                cur.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("writer") else "BEGIN")

    return engine


def make_engine(url: str) -> sa.Engine:
    """A SQLAlchemy engine for the store URL, with a clear error for a bad URL."""
    try:
        parsed = make_url(url)
    except Exception as exc:  # noqa: BLE001
        raise StoreError(
            f"not a database URL: {url!r} (expected e.g. sqlite:///runs.sqlite or "
            f"postgresql+psycopg://user@host:5432/db)"
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed)
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        try:
            return sa.create_engine(parsed, pool_pre_ping=True)
        except ModuleNotFoundError as exc:
            raise StoreError(f"{redact(url)}: PostgreSQL needs psycopg: pip install 'inquitree[postgres]'") from exc
    raise StoreError(
        f"{redact(url)}: unsupported database {parsed.get_backend_name()!r} "
        "(InquiTree stores events in SQLite or PostgreSQL)"
    )


class EventStore:
    """The append-only event log. See the module docstring for the guarantees."""

    def __init__(
        self,
        url: str | None = None,
        *,
        clock: Callable[[], str] = utc_now,
        auto_upgrade: bool = True,
        create: bool = True,
    ):
        """Open the store at ``url``. With ``create=False`` (commands that only read) a SQLite file
        that does not exist, or a database without InquiTree's schema, is an error instead of
        becoming a new, empty store."""
        self.url = url or default_url()
        if not create:
            auto_upgrade = False
            parsed = make_url(self.url) if "://" in self.url else None
            path = parsed.database if parsed is not None and parsed.get_backend_name() == "sqlite" else None
            if path and path != ":memory:" and not Path(path).expanduser().exists():
                raise StoreError(
                    f"no event store at {redact(self.url)} (no such file: {Path(path).expanduser().resolve()}); "
                    "`inquitree play --record`, `suite run` or `episodes import` create one"
                )
        self.clock = clock
        self.engine = make_engine(self.url)
        self.dialect = self.engine.dialect.name
        # SQLite has one writer at a time, and a writer that finds the file locked waits in SQLite's
        # busy handler, which sleeps in growing steps (up to 100 ms). Threads of this process queue
        # on a lock instead and start the moment the previous append commits.
        self._write_lock = threading.Lock() if self.dialect == "sqlite" else contextlib.nullcontext()
        mark = "?" if self.engine.dialect.paramstyle == "qmark" else "%s"
        # Rows go to the driver's executemany as tuples: SQLAlchemy's per-row dict handling
        # cost more than the insert itself (bench/store_append.py).
        self._insert_sql = (
            f"INSERT INTO events ({', '.join(_INSERT_COLUMNS)}) VALUES ({', '.join([mark] * len(_INSERT_COLUMNS))})"
        )
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        except sa.exc.SQLAlchemyError as exc:
            self.engine.dispose()
            raise StoreError(f"cannot open the event store {redact(self.url)}: {_short(exc)}") from exc
        migrate.ensure_schema(self.engine, redact(self.url), auto_upgrade=auto_upgrade)

    def __repr__(self) -> str:
        return f"EventStore({redact(self.url)!r})"

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "EventStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------
    def _writer(self):
        conn = self.engine.connect().execution_options(writer=True)
        return conn

    def append(self, stream_id: str, events: Sequence[Event], expected_version: int) -> int:
        """Append ``events`` to ``stream_id`` if it is at ``expected_version`` (0: new stream).

        All or nothing; returns the stream's new version. Raises
        :class:`ConcurrencyError` if the stream is at another version.
        """
        if not events:
            return expected_version
        if expected_version < 0:
            raise ValueError("expected_version must be >= 0")
        with self._write_lock, self._writer() as conn:
            try:
                with conn.begin():
                    if self.dialect == "postgresql":
                        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_APPEND_LOCK})
                    prev = self._hash_at(conn, stream_id, expected_version)
                    rows = self._rows(stream_id, events, expected_version, prev)
                    conn.exec_driver_sql(self._insert_sql, rows)
            except sa.exc.IntegrityError as exc:
                raise ConcurrencyError(stream_id, expected_version, self.current_version(stream_id)) from exc
            except sa.exc.OperationalError as exc:
                hint = " (another process holds a write lock on the file)" if "locked" in str(exc) else ""
                raise StoreError(f"append to {stream_id!r} in {redact(self.url)} failed: {_short(exc)}{hint}") from exc
        return expected_version + len(events)

    def _hash_at(self, conn: sa.Connection, stream_id: str, version: int) -> str:
        if version == 0:
            return GENESIS_HASH
        found = conn.execute(
            sa.select(events_table.c.hash).where(
                events_table.c.stream_id == stream_id, events_table.c.stream_version == version
            )
        ).scalar_one_or_none()
        if found is None:
            actual = (
                conn.execute(
                    sa.select(sa.func.max(events_table.c.stream_version)).where(events_table.c.stream_id == stream_id)
                ).scalar_one_or_none()
                or 0
            )
            raise ConcurrencyError(stream_id, version, actual)
        return found

    def _rows(self, stream_id: str, events: Sequence[Event], expected: int, prev: str) -> list[tuple]:
        """Rows in ``_INSERT_COLUMNS`` order, serialized and chained."""
        now = self.clock()
        rows = []
        for i, ev in enumerate(events, start=1):
            payload = ev.to_json()
            version = expected + i
            # chain_hash(), inlined over the payload's bytes (this loop is the append hot path).
            head = f"{prev}\n{stream_id}\n{version}\n{ev.TYPE}\n{ev.VERSION}\n{now}\n".encode()
            digest = hashlib.sha256(head + payload).hexdigest()
            rows.append((stream_id, version, ev.TYPE, ev.VERSION, now, payload.decode(), prev, digest))
            prev = digest
        return rows

    # -- reading ---------------------------------------------------------------------------
    def current_version(self, stream_id: str) -> int:
        with self.engine.connect() as conn:
            return (
                conn.execute(
                    sa.select(sa.func.max(events_table.c.stream_version)).where(events_table.c.stream_id == stream_id)
                ).scalar_one_or_none()
                or 0
            )

    def read_stream(self, stream_id: str, from_version: int = 1) -> list[RecordedEvent]:
        """Every event of ``stream_id`` from ``from_version`` on, in version order."""
        q = (
            sa.select(events_table)
            .where(events_table.c.stream_id == stream_id, events_table.c.stream_version >= from_version)
            .order_by(events_table.c.stream_version)
        )
        with self.engine.connect() as conn:
            return [_recorded(r) for r in conn.execute(q)]

    def read_all(self, after_position: int = 0, limit: int = 10_000) -> list[RecordedEvent]:
        """Up to ``limit`` events of every stream with global position > ``after_position``."""
        q = (
            sa.select(events_table)
            .where(events_table.c.global_position > after_position)
            .order_by(events_table.c.global_position)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [_recorded(r) for r in conn.execute(q)]

    def iter_all(self, after_position: int = 0, batch: int = 10_000) -> Iterator[RecordedEvent]:
        while True:
            chunk = self.read_all(after_position, batch)
            yield from chunk
            if len(chunk) < batch:
                return
            after_position = chunk[-1].global_position

    def last_position(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.max(events_table.c.global_position))).scalar_one_or_none() or 0

    def streams(self, prefix: str | None = None) -> list[StreamInfo]:
        """Every stream with its version and first/last timestamps, in stream id order."""
        c = events_table.c
        q = (
            sa.select(
                c.stream_id, sa.func.max(c.stream_version), sa.func.min(c.recorded_at), sa.func.max(c.recorded_at)
            )
            .group_by(c.stream_id)
            .order_by(c.stream_id)
        )
        if prefix:
            q = q.where(c.stream_id.startswith(prefix, autoescape=True))
        with self.engine.connect() as conn:
            return [StreamInfo(*row) for row in conn.execute(q)]

    def streams_with_event(self, prefix: str, event_type: str) -> set[str]:
        """The ids of streams starting with ``prefix`` that hold at least one ``event_type`` event."""
        c = events_table.c
        q = (
            sa.select(c.stream_id)
            .distinct()
            .where(c.stream_id.startswith(prefix, autoescape=True), c.event_type == event_type)
        )
        with self.engine.connect() as conn:
            return {row[0] for row in conn.execute(q)}

    # -- integrity -------------------------------------------------------------------------
    def verify(self, progress: Callable[[int], None] | None = None, stream_id: str | None = None) -> VerifyReport:
        """Walk every stream's hash chain (or one stream's); report the first event whose content no longer matches."""
        c = events_table.c
        q = sa.select(
            c.stream_id, c.stream_version, c.event_type, c.schema_version, c.recorded_at, c.payload, c.prev_hash, c.hash
        ).order_by(c.stream_id, c.stream_version)
        if stream_id is not None:
            q = q.where(c.stream_id == stream_id)
        checked = streams = 0
        current, prev, expect_version = None, GENESIS_HASH, 1
        with self.engine.connect() as conn:
            for sid, version, etype, sver, at, payload, prev_hash, digest in conn.execution_options(
                yield_per=20_000
            ).execute(q):
                if sid != current:
                    current, prev, expect_version, streams = sid, GENESIS_HASH, 1, streams + 1
                problem = None
                if version != expect_version:
                    problem = f"version gap: expected version {expect_version}"
                elif prev_hash != prev:
                    problem = "prev_hash does not match the previous event's hash"
                elif chain_hash(prev, sid, version, etype, sver, at, payload) != digest:
                    problem = "content does not match its hash (the event was changed)"
                checked += 1
                if problem:
                    return VerifyReport(checked, streams, (sid, version, problem))
                prev, expect_version = digest, version + 1
                if progress and checked % 100_000 == 0:
                    progress(checked)
        return VerifyReport(checked, streams, None)


def _recorded(row) -> RecordedEvent:
    m = row._mapping
    return RecordedEvent(
        m["global_position"],
        m["stream_id"],
        m["stream_version"],
        m["event_type"],
        m["schema_version"],
        m["recorded_at"],
        parse_json(m["payload"]),
        m["prev_hash"],
        m["hash"],
    )


def _short(exc: BaseException) -> str:
    """The driver's own one-line reason, without SQLAlchemy's boilerplate."""
    orig = getattr(exc, "orig", None) or exc
    lines = [ln.strip() for ln in str(orig).strip().splitlines() if ln.strip()]
    return "; ".join(lines[:2]) if lines else type(orig).__name__
