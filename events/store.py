"""The event store: an append-only log in SQLite or PostgreSQL, in plain SQL over the drivers.

A plain SQLite file is opened with sqlite3 itself; PostgreSQL (and SQLite URLs with options)
through SQLAlchemy's connection pool. SQLAlchemy and Alembic make and upgrade the schema
(``events/schema.py``, ``migrations/``), loaded only when a store is not at the head revision.

- ``append(stream_id, events, expected_version)`` commits atomically; the unique
  key on (stream_id, stream_version) is the optimistic-concurrency check and its
  integrity error becomes :class:`ConcurrencyError`.
- Reads: one stream from a version, every stream after a global position (for
  projections), the list of streams.
- Immutability is the database's job (triggers from the first migration).
- Two hash chains (``events/chain.py``): each event's ``hash`` covers its stream's previous
  hash and its content; its ``log_hash`` covers the previous event's log hash and its global
  position. Signed checkpoints of the log head (``events/signing.py``) and anchors kept outside
  the database prove the log up to their head; :meth:`EventStore.verify` checks all of it.

Global positions are given by the store, densely, in commit order: SQLite has one writer at a
time (appends run in ``BEGIN IMMEDIATE``), and on PostgreSQL every append takes one
transaction-level advisory lock before it inserts, so a projection reading "after position P"
never skips an event that commits later with a smaller position.

The store remembers the head of the log and of each stream it appended to, so an append reads
nothing back. A head that another process has moved on shows up in the database as a unique-key
conflict: on the global position (the append re-reads the log head and tries again) or on the
stream version (another writer won: :class:`ConcurrencyError`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import sqlite3
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from inquitree.events import revisions, signing
from inquitree.events.base import Event, decode, parse_json
from inquitree.events.chain import GENESIS_HASH, chain_hash, link_problem, log_hash
from inquitree.events.errors import (
    ConcurrencyError,
    InquiTreeError,
    StoreDamaged,
    StoreError,
    UnknownEventType,
    UnknownEventVersion,
    is_damage,
)
from inquitree.events.names import EPISODE_PREFIX, IMPORT_PREFIX, BadName, check_episode_id, shown

if TYPE_CHECKING:
    import sqlalchemy as sa

DB_ENV = "INQUITREE_DB"
DEFAULT_URL = "sqlite:///inquitree.sqlite"
__all__ = ["GENESIS_HASH", "chain_hash", "log_hash", "EventStore", "RecordedEvent", "VerifyReport", "Anchor"]
SQLITE_PAGE_SIZE = 8192  # a new SQLite store's page size (see _sqlite_setup)
_PG_APPEND_LOCK = 0x1A7E_7EE  # the advisory-lock key that serializes appends on PostgreSQL

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


def redact(url: str) -> str:
    """The URL without its password, for messages (``user:***@``, as SQLAlchemy renders it)."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


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
    log_hash: str | None = None

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
class Anchor:
    """A head of the log kept outside the database: the event at ``position`` has ``log_hash``.

    Written by ``inquitree db anchor`` as JSON; signed when a key is given (``key_id``, ``signature``
    over the same line a log checkpoint signs)."""

    position: int
    log_hash: str
    events: int
    streams: int
    made_at: str
    store: str = ""
    key_id: str | None = None
    signature: str | None = None

    FORMAT = "inquitree-anchor/1"

    @classmethod
    def of(cls, report: "VerifyReport", store: str = "", signer: signing.Signer | None = None) -> "Anchor":
        """The head a clean ``verify()`` report found, made now, signed when ``signer`` is given."""
        anchor = cls(
            report.head_position, report.head_hash, report.events_checked, report.streams_checked, utc_now(), store
        )
        if signer is None:
            return anchor
        return dataclasses.replace(anchor, key_id=signer.key_id, signature=signer.sign(anchor.message()))

    def to_json(self) -> str:
        return json.dumps({"format": self.FORMAT, **dataclasses.asdict(self)}, indent=2) + "\n"

    @classmethod
    def load(cls, path: str | Path) -> "Anchor":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InquiTreeError(f"{path}: cannot read the anchor ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != cls.FORMAT:
            raise InquiTreeError(f"{path}: not an InquiTree anchor (field 'format' is not {cls.FORMAT!r})")
        fields = {f.name for f in dataclasses.fields(cls)}
        try:
            anchor = cls(**{k: v for k, v in data.items() if k in fields})
        except TypeError as exc:
            raise InquiTreeError(f"{path}: {exc}") from exc
        if not isinstance(anchor.position, int) or not re.fullmatch(r"[0-9a-f]{64}", str(anchor.log_hash)):
            raise InquiTreeError(f"{path}: field 'position' must be an integer and 'log_hash' 64 hex digits")
        return anchor

    def message(self) -> bytes:
        return signing.checkpoint_message("log", "log", self.position, self.log_hash, self.made_at)


@dataclasses.dataclass
class _KeyState:
    """One key's checkpoints as a store has read and checked them (read again from ``seen`` on)."""

    seen: int = 0  # the last checkpoint seq read
    log: tuple[int, str] = (0, GENESIS_HASH)  # the highest log head it signed
    streams: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)  # stream -> signed head


@dataclasses.dataclass(frozen=True)
class SignResult:
    """What a signer signed: the log head (``position``, None if nothing new), how many stream heads,
    and how many events after the signed head nothing accounts for (the first as (global position,
    stream, version)); ``problem`` says what was found broken, and then nothing was signed."""

    position: int | None = None
    streams: int = 0
    unaccounted: int = 0
    first_unaccounted: tuple[int, str, int] | None = None
    problem: str | None = None

    def warning(self, key_id: str) -> str | None:
        if self.problem:
            return f"NOT SIGNED with key {key_id}: {self.problem}; run `inquitree db verify`"
        if self.unaccounted and self.first_unaccounted:
            pos, sid, version = self.first_unaccounted
            return (
                f"key {key_id} does not vouch for {self.unaccounted:,} event(s) from global position {pos} on "
                f"(stream {sid!r} version {version}): no recorder holding the key appended them. If another process "
                "is still recording with the key, it signs them when it ends; otherwise check them "
                "(`inquitree db verify`, `inquitree replay`)"
            )
        return None


@dataclasses.dataclass
class VerifyReport:
    """What ``verify`` checked and proved.

    ``first_problem`` is (stream id, stream version, what) for a problem at an event, or
    (None, None, what) for one of the log as a whole (a missing head, a bad signature).
    ``covered_to`` is the highest global position proved by the anchor or by a log checkpoint
    signed with a given key; of the events after it, ``stream_covered`` are proved by a signed head
    of their stream and ``uncovered`` by nothing: with an anchor or a key, those make the report
    not ok."""

    events_checked: int
    streams_checked: int
    first_problem: tuple[str | None, int | None, str] | None
    head_position: int = 0
    head_hash: str = GENESIS_HASH
    proof: tuple[str, ...] = ()  # "anchor", "key"
    covered_to: int = 0
    uncovered: int = 0
    stream_covered: int = 0  # events after ``covered_to`` proved by a signed head of their stream
    # records of imports (``import/`` streams) covered by nothing: an importer without a key wrote
    # them. They prove nothing and claim little (the episode's own signature is checked apart), so
    # they are reported, not counted in ``uncovered``.
    unsigned_import_records: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problem found and, when an anchor or a key was given, every event covered by it."""
        return self.first_problem is None and not (self.proof and self.uncovered)


def _busy_ms() -> int:
    return int(os.environ.get("INQUITREE_SQLITE_BUSY_MS", "30000"))


def _check_parent(database: str, shown: str) -> None:
    if database and database != ":memory:":
        parent = Path(database).expanduser().resolve().parent
        if not parent.is_dir():
            raise StoreError(f"cannot open the event store {shown}: directory {parent} does not exist")


def _sqlite_setup(dbapi_conn: sqlite3.Connection, busy_ms: int) -> None:
    """Every SQLite connection of a store: statements in autocommit unless a BEGIN says otherwise,
    SQLite's busy wait, WAL and synchronous=NORMAL; a new file gets 8 KiB pages."""
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={busy_ms}")
    # Only a file not yet written takes it (the WAL switch below writes it); an existing store keeps
    # its page size. An event row is about 600 bytes and an append commits whole pages to the WAL:
    # 8 KiB pages write fewer WAL frames per append: 2-9% less CPU to insert a campaign's rows,
    # mostly the kernel's time in writes (bench/engine.py's store floor, alternated with 4 KiB).
    cur.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
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


def sqlite_database(url: str) -> str | None:
    """The file of a ``sqlite:///PATH[?options]`` URL; None for memory and any other URL."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return path if path and path != ":memory:" else None


def _sqlite_file(url: str) -> str | None:
    """The file of a plain ``sqlite:///PATH`` URL, which the store opens with sqlite3 itself; None
    for any other URL (PostgreSQL, memory, options), opened through SQLAlchemy."""
    return None if "?" in url else sqlite_database(url)


def _sqlite_connect(path: str, read_only: bool = False) -> sqlite3.Connection:
    busy_ms = _busy_ms()
    if read_only:  # SQLite's own read-only mode: the file is never written, whatever SQL is sent
        where = "file:" + urllib.parse.quote(str(Path(path).expanduser().resolve())) + "?mode=ro"
        conn = sqlite3.connect(where, uri=True, timeout=busy_ms / 1000, check_same_thread=False)
        conn.isolation_level = None
        conn.execute(f"PRAGMA busy_timeout={busy_ms}")
        conn.execute("PRAGMA query_only=1")
        return conn
    conn = sqlite3.connect(Path(path).expanduser(), timeout=busy_ms / 1000, check_same_thread=False)
    try:
        _sqlite_setup(conn, busy_ms)
    except BaseException:
        conn.close()
        raise
    return conn


def _sqlite_engine(url: sa.URL, read_only: bool = False) -> sa.Engine:
    import sqlalchemy as sa
    from sqlalchemy import event as sa_event

    _check_parent(url.database or "", str(url))
    busy_ms = _busy_ms()
    engine = sa.create_engine(url, connect_args={"timeout": busy_ms / 1000})

    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        _sqlite_setup(dbapi_conn, busy_ms)  # SQLAlchemy emits BEGIN itself (below)
        if read_only:
            dbapi_conn.execute("PRAGMA query_only=1")

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("writer") else "BEGIN")

    return engine


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
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception as exc:  # noqa: BLE001
        raise StoreError(
            f"not a database URL: {url!r} (expected e.g. sqlite:///runs.sqlite or "
            f"postgresql+psycopg://user@host:5432/db)"
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, read_only)
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        args = {"options": "-c default_transaction_read_only=on"} if read_only else {}
        try:
            return sa.create_engine(parsed, pool_pre_ping=True, connect_args=args)
        except ModuleNotFoundError as exc:
            raise StoreError(f"{redact(url)}: PostgreSQL needs psycopg: pip install 'inquitree[postgres]'") from exc
    raise StoreError(
        f"{redact(url)}: unsupported database {parsed.get_backend_name()!r} "
        "(InquiTree stores events in SQLite or PostgreSQL)"
    )


# The largest event the log takes: far above any real one (a reply is cut at 20,000 characters, a
# tree file at 5 MB is refused before it is played), far below what stops the warehouse's loader.
MAX_EVENT_BYTES = 4 * 1024 * 1024


class FromEnv:
    """The default signer: the key named by ``$INQUITREE_SIGNING_KEY`` (for a store that may create)."""


FROM_ENV = FromEnv()


class EventStore:
    """The append-only event log. See the module docstring for the guarantees."""

    def __init__(
        self,
        url: str | None = None,
        *,
        clock: Callable[[], str] = utc_now,
        auto_upgrade: bool = True,
        create: bool = True,
        signer: "signing.Signer | None | FromEnv" = FROM_ENV,
        read_only: bool = False,
    ):
        """Open the store at ``url``. With ``create=False`` (commands that only read) a SQLite file
        that does not exist, or a database without InquiTree's schema, is an error instead of
        becoming a new, empty store.

        ``signer`` signs checkpoints of the log head (:meth:`checkpoint`); by default (``FROM_ENV``)
        a store that may create (a writer) takes it from ``$INQUITREE_SIGNING_KEY``; None: no signer.

        ``read_only`` (implies ``create=False``): every connection refuses to write, in the database
        itself (a viewer's)."""
        self.url = url or default_url()
        self.read_only = read_only
        create = create and not read_only
        if isinstance(signer, FromEnv):
            signer = signing.signer_from_env() if create else None
        self.signer: signing.Signer | None = signer
        # A plain SQLite file is opened with sqlite3 itself: SQLAlchemy (a third of a second to
        # import, in every command that opens a store and in every worker) is then loaded only to
        # make or upgrade the schema. Other URLs go through SQLAlchemy's pool (PostgreSQL's with a
        # liveness check before each use).
        self._file = _sqlite_file(self.url)
        if not create:
            auto_upgrade = False
            path = sqlite_database(self.url)
            if path is not None and not Path(path).expanduser().exists():
                raise StoreError(
                    f"no event store at {redact(self.url)} (no such file: {Path(path).expanduser().resolve()}); "
                    "`inquitree play --record`, `suite run` or `episodes import` create one"
                )
        self.clock = clock
        self._engine: sa.Engine | None = None
        self._engine_lock = threading.Lock()
        if self._file is not None:
            _check_parent(self._file, redact(self.url))
            self.dialect = "sqlite"
        else:
            self.dialect = self.engine.dialect.name
        self._dbapi: Any = sqlite3 if self.dialect == "sqlite" else self.engine.dialect.dbapi
        self._idle: list[sqlite3.Connection] = []  # a plain file's reader connections, to reuse
        self._pool_lock = threading.Lock()
        # Appends of one process queue on a lock: on SQLite a writer that finds the file locked waits
        # in SQLite's busy handler, which sleeps in growing steps (up to 100 ms), and the heads this
        # store remembers are updated by one append at a time.
        self._write_lock = threading.Lock()
        self._mark = "?" if self.dialect == "sqlite" else "%s"
        self._log_head: tuple[int, str] | None = None  # (global position, log hash) after our last append
        self._heads: dict[str, tuple[int, str]] = {}  # stream id -> (version, hash) after our last append to it
        self._unsigned = False  # appended since the last checkpoint
        # What this store appended and its key has not yet vouched for: global position ranges, and
        # each stream with the first version appended here (a signer signs only what it accounts for).
        self._own: list[tuple[int, int]] = []
        self._own_streams: dict[str, int] = {}
        self._signed: dict[str, _KeyState] = {}  # key id -> its checkpoints read so far
        self._said: set[str] = set()  # signing problems already printed
        self._raw: Any = None  # the pooled connection appends use (see _append)
        self._wconn: Any = None  # its driver connection, and a cursor on it kept between appends
        self._wcur: Any = None
        self._insert_one = (
            f"INSERT INTO events ({', '.join(INSERT_COLUMNS)}) VALUES ({', '.join([self._mark] * len(INSERT_COLUMNS))})"
        )
        try:
            with self._cursor() as cur:  # an unreachable database fails here, not as "no schema" below
                cur.execute("SELECT 1")
                cur.fetchall()
                revision = _schema_revision(cur)
        except Exception as exc:
            if not _is_db_error(exc):
                raise
            self._close_connections()
            if is_damage(exc):
                raise self._damage(exc) from exc
            raise StoreError(f"cannot open the event store {redact(self.url)}: {_short(exc)}") from exc
        if revision != revisions.head():
            # Alembic (a fifth of a second to import, in every worker process) only when the
            # schema is not at head: to make it, or to say why it cannot be used.
            from inquitree.events import migrate

            migrate.ensure_schema(self.engine, redact(self.url), auto_upgrade=auto_upgrade)
        if create and revision is not None:  # a writer into an existing store: are its guards in place?
            missing = self.missing_guards()
            if missing:
                print(
                    f"inquitree: warning: {redact(self.url)} no longer enforces immutability ({'; '.join(missing)}); "
                    "`inquitree db upgrade`, as the store's owner, restores it",
                    file=sys.stderr,
                )

    def __repr__(self) -> str:
        return f"EventStore({redact(self.url)!r})"

    def _damage(self, exc: BaseException) -> StoreDamaged:
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
        """Sign the head if this store appended since its last checkpoint (with a signer), and close."""
        try:
            if self.signer is not None and self._unsigned:
                self.sign_recorded()
        finally:
            self._close_connections()

    def _close_connections(self) -> None:
        if self._raw is not None:
            with contextlib.suppress(Exception):
                self._wcur.close()
                self._raw.close()
            self._raw = self._wconn = self._wcur = None
        with self._pool_lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        if self._engine is not None:
            self._engine.dispose()

    # -- connections -----------------------------------------------------------------------
    def _connect(self) -> Any:
        """A DBAPI connection of this store's own (a plain SQLite file), or one from SQLAlchemy's
        pool (closing it gives it back, rolled back)."""
        if self._file is not None:
            return _sqlite_connect(self._file, self.read_only)
        return self.engine.raw_connection()

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor for reads, on a connection taken for as long as the block runs."""
        conn = None
        if self._file is not None:
            with self._pool_lock:
                conn = self._idle.pop() if self._idle else None
        conn = conn or self._connect()
        reusable = False
        try:
            cur = conn.cursor()
            try:
                yield cur
            except Exception as exc:
                if _is_db_error(exc) and is_damage(exc):
                    raise self._damage(exc) from exc
                raise
            finally:
                cur.close()
            reusable = self._file is not None and not conn.in_transaction
        finally:
            if reusable:
                with self._pool_lock:
                    if len(self._idle) < 8:
                        self._idle.append(conn)
                        conn = None
            if conn is not None:
                if self._file is None:
                    _rollback(conn)
                conn.close()

    def __enter__(self) -> "EventStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write_transaction(self) -> Iterator[Any]:
        """A cursor on the appends' connection in one transaction (under the write lock), committed
        when the block ends and rolled back if it raises."""
        with self._write_lock:
            raw, cur = self._dbapi_writer()
            try:
                if self.dialect == "sqlite":
                    cur.execute("BEGIN IMMEDIATE")
                yield cur
                raw.commit()
            except BaseException:
                _rollback(raw)
                raise

    def append(self, stream_id: str, events: Sequence[Event], expected_version: int) -> int:
        """Append ``events`` to ``stream_id`` if it is at ``expected_version`` (0: new stream).

        All or nothing; returns the stream's new version. Raises
        :class:`ConcurrencyError` if the stream is at another version.
        """
        if not events:
            return expected_version
        if expected_version < 0:
            raise ValueError("expected_version must be >= 0")
        _check_stream_name(stream_id)
        now = self.clock()
        content = [(ev.TYPE, ev.VERSION, now, ev.to_json()) for ev in events]
        return self._append(stream_id, content, expected_version)

    def _append(self, stream_id: str, content: list[tuple[str, int, str, bytes]], expected_version: int) -> int:
        """Append (type, schema version, recorded_at, payload bytes) rows; see :meth:`append`.

        Appends go through this store's own DBAPI connection and one cursor on it (under the write
        lock): SQLAlchemy's connection checkout, events and reset-on-return, and even its proxies'
        attribute lookups, cost more than the insert (bench/integrity.py)."""
        for etype, _v, _at, payload in content:
            if len(payload) > MAX_EVENT_BYTES:
                raise StoreError(
                    f"append to {stream_id!r}: a {etype} event of {len(payload):,} bytes is larger than an event may "
                    f"be ({MAX_EVENT_BYTES:,} bytes); nothing was written"
                )
        dbapi = self._dbapi
        with self._write_lock:
            for _attempt in range(3):
                raw, cur = self._dbapi_writer()
                try:
                    if self.dialect == "postgresql":
                        cur.execute(f"SELECT pg_advisory_xact_lock({_PG_APPEND_LOCK})")
                    else:
                        cur.execute("BEGIN IMMEDIATE")
                    stream_head = self._heads.get(stream_id)
                    if stream_head is None or stream_head[0] != expected_version:
                        stream_head = (expected_version, self._dbapi_hash_at(cur, stream_id, expected_version))
                    if self._log_head is None:
                        cur.execute(
                            "SELECT global_position, log_hash FROM events ORDER BY global_position DESC LIMIT 1"
                        )
                        self._log_head = tuple(cur.fetchone() or (0, GENESIS_HASH))
                    rows = _rows(stream_id, content, stream_head, self._log_head)
                    self._insert(cur, rows)
                    raw.commit()
                except dbapi.IntegrityError as exc:
                    # Another writer moved a head on: the stream's (it won) or only the log's (read it again).
                    _rollback(raw)
                    self._log_head = None
                    self._heads.pop(stream_id, None)
                    actual = self.current_version(stream_id)
                    if actual != expected_version:
                        raise ConcurrencyError(stream_id, expected_version, actual) from exc
                    continue
                except dbapi.Error as exc:  # locked, unreachable, not allowed (a reader role), damaged
                    self._drop_dbapi_writer()
                    if is_damage(exc):
                        raise self._damage(exc) from exc
                    hint = " (another process holds a write lock on the file)" if "locked" in str(exc) else ""
                    raise StoreError(
                        f"append to {stream_id!r} in {redact(self.url)} failed: {_short(exc)}{hint}"
                    ) from exc
                except BaseException:
                    _rollback(raw)
                    self._log_head = None
                    raise
                last = rows[-1]
                self._log_head = (last[0], last[-1])
                self._heads[stream_id] = (last[2], last[-2])
                self._unsigned = True
                self._own.append((rows[0][0], last[0]))
                self._own_streams.setdefault(stream_id, rows[0][2])
                return int(last[2])
        raise StoreError(f"append to {stream_id!r} in {redact(self.url)}: the log head kept moving (3 attempts)")

    def _dbapi_writer(self) -> tuple[Any, Any]:
        """(driver connection, cursor) for appends, opened on first use."""
        if self.read_only:
            raise StoreError(f"{redact(self.url)} was opened read-only: nothing can be appended through it")
        if self._raw is None:
            self._raw = self._connect()
            self._wconn = getattr(self._raw, "driver_connection", self._raw)
            self._wcur = self._wconn.cursor()
        return self._wconn, self._wcur

    def _drop_dbapi_writer(self) -> None:
        raw, self._raw, self._log_head = self._raw, None, None
        self._wconn = self._wcur = None
        if raw is not None:
            with contextlib.suppress(Exception):
                # closes it: a connection that failed is not reused (nor given back to a pool)
                raw.invalidate() if hasattr(raw, "invalidate") else raw.close()

    def _insert(self, cur: Any, rows: list[tuple[Any, ...]]) -> None:
        if self.dialect == "sqlite":
            if len(rows) == 1:
                cur.execute(self._insert_one, rows[0])
            else:
                cur.executemany(self._insert_one, rows)
            return
        # One multi-row INSERT on PostgreSQL: psycopg runs executemany in pipeline mode, and a
        # pipeline that a unique-key conflict aborts prints "error ignored terminating
        # <psycopg.Pipeline [INERROR]>" on stderr when it is collected.
        one = f"({', '.join([self._mark] * len(INSERT_COLUMNS))})"
        sql = f"INSERT INTO events ({', '.join(INSERT_COLUMNS)}) VALUES {', '.join([one] * len(rows))}"
        cur.execute(sql, tuple(v for row in rows for v in row))

    def _dbapi_hash_at(self, cur: Any, stream_id: str, version: int) -> str:
        found = self._hash_on(cur, stream_id, version)
        if found is None:
            raise ConcurrencyError(stream_id, version, self._version_on(cur, stream_id))
        return found

    def _version_on(self, cur: Any, stream_id: str) -> int:
        """The stream's version as ``cur`` sees it (0: no such stream)."""
        cur.execute(f"SELECT max(stream_version) FROM events WHERE stream_id = {self._mark}", (stream_id,))
        return (cur.fetchone() or (0,))[0] or 0

    @staticmethod
    def _read_log_head(cur: Any) -> tuple[int, str]:
        cur.execute("SELECT global_position, log_hash FROM events ORDER BY global_position DESC LIMIT 1")
        row = cur.fetchone()
        return (row[0], row[1]) if row is not None else (0, GENESIS_HASH)

    def append_exported(self, stream_id: str, rows: Sequence[dict[str, Any]]) -> int:
        """Append a new stream from exported rows, keeping each event's timestamp, schema version and
        stored payload, so the stream's hashes are the exporter's. Each row's ``hash`` (when given)
        must be the one this store computes: the first that is not is named, and nothing is written."""
        _check_stream_name(stream_id)
        content, prev = [], GENESIS_HASH
        for i, row in enumerate(rows, start=1):
            payload = row["payload_json"]
            digest = chain_hash(prev, stream_id, i, row["type"], row["version"], row["recorded_at"], payload)
            if row.get("hash") is not None and (row.get("prev_hash") != prev or row["hash"] != digest):
                raise StoreError(
                    f"event {i} ({row['type']}) of {stream_id!r} does not match its hash: the file was edited "
                    "after it was exported (or its events were reordered)"
                )
            content.append((row["type"], row["version"], row["recorded_at"], payload.encode()))
            prev = digest
        return self._append(stream_id, content, 0)

    def head(self) -> tuple[int, str]:
        """The log's head: the last event's global position and log hash ((0, zeros) when empty)."""
        with self._cursor() as cur:
            return self._read_log_head(cur)

    def checkpoint(
        self, signer: signing.Signer | None = None, note: str | None = None, *, adopt: bool = False
    ) -> "SignResult":
        """Sign what the key can vouch for, and store the checkpoints; see :class:`SignResult`.

        A signer never signs a head it has not checked. First it checks every earlier checkpoint of
        its key (their signatures, and that the log still has the head the last one signed), then
        both chains of every event after that head. Each of those events must be accounted for:
        appended by this store, or inside a stream whose head a checkpoint of the key signed (another
        process recording with the key). This store's streams get signed heads (``stream``
        checkpoints), and the log's head is signed up to the first event nothing accounts for.
        ``adopt=True`` (``db anchor --key K --adopt``, after a person checked the log) vouches for
        every event whose chains hold. Uses ``signer`` or the store's own; without either, or with
        nothing new since this store's last checkpoint, it does nothing."""
        signer = signer or self.signer
        if signer is None or (signer is self.signer and not self._unsigned and not adopt):
            return SignResult()
        with self._write_transaction() as cur:
            if self.dialect == "postgresql":  # one signer at a time, and no append between its read and its rows
                cur.execute(f"SELECT pg_advisory_xact_lock({_PG_APPEND_LOCK})")
            result = self._sign_accounted(cur, signer, note, adopt)
        if signer is self.signer:
            self._unsigned = result.problem is not None or result.unaccounted > 0
        return result

    def sign_recorded(self) -> "SignResult":
        """The store's own signer signs what this store recorded (after an episode, and on close);
        a problem, or events it cannot vouch for, are said once on stderr, never signed over."""
        result = self.checkpoint()
        message = result.warning(self.signer.key_id if self.signer else "")
        if message and message not in self._said:
            self._said.add(message)
            print(f"inquitree: {message}", file=sys.stderr)
        return result

    def _sign_accounted(self, cur: Any, signer: signing.Signer, note: str | None, adopt: bool) -> "SignResult":  # noqa: C901 - one walk checks, accounts and signs in one transaction
        m = self._mark
        state = self._signed.setdefault(signer.key_id, _KeyState())
        cur.execute(
            f"SELECT {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints WHERE key_id = {m} AND seq > {m} ORDER BY seq",
            (signer.key_id, state.seen),
        )
        verifier = signer.verifier
        for row in cur.fetchall():
            cp = dict(zip(CHECKPOINT_COLUMNS, row, strict=False))
            message = signing.checkpoint_message(cp["kind"], cp["subject"], cp["position"], cp["hash"], cp["signed_at"])
            if not verifier.verify(message, cp["signature"]):
                return SignResult(
                    problem=f"checkpoint #{cp['seq']} claims key {signer.key_id} but its signature does not verify "
                    "(forged or altered)"
                )
            state.seen = cp["seq"]
            if cp["kind"] == "log" and cp["position"] > state.log[0]:
                state.log = (cp["position"], cp["hash"])
            elif cp["kind"] == "stream" and cp["position"] > state.streams.get(cp["subject"], (0, ""))[0]:
                state.streams[cp["subject"]] = (cp["position"], cp["hash"])
        start, start_hash = state.log
        if start:
            cur.execute(f"SELECT log_hash FROM events WHERE global_position = {m}", (start,))
            row = cur.fetchone()
            if row is None or row[0] != start_hash:
                return SignResult(
                    problem=f"the log at global position {start} is not the one key {signer.key_id} signed: "
                    "it was rewritten or cut short"
                )
        cur.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE global_position > {m} ORDER BY global_position", (start,)
        )
        rows = cur.fetchall()
        heads: dict[str, tuple[int, str]] = {}
        prev_log, signed_to, signed_hash = start_hash, start, start_hash
        unaccounted, first, refused = 0, None, set()
        for pos, sid, version, etype, sver, at, payload, prev_hash, digest, lhash in rows:
            last = heads.get(sid)
            if last is None:
                last = (version - 1, self._hash_on(cur, sid, version - 1) or "")
            problem = link_problem(last, sid, version, etype, sver, at, payload, prev_hash, digest)
            if problem is None and log_hash(prev_log, pos, digest) != lhash:
                problem = "log hash does not match (an event before it was removed, inserted or moved)"
            signed_stream = state.streams.get(sid)
            if problem is None and signed_stream and signed_stream[0] == version and signed_stream[1] != digest:
                problem = f"key {signer.key_id} signed another hash for this event"
            if problem:
                return SignResult(problem=f"stream {sid!r} version {version} (global position {pos}): {problem}")
            heads[sid], prev_log = (version, digest), lhash
            if adopt or self._owns(pos) or (signed_stream is not None and version <= signed_stream[0]):
                if first is None:
                    signed_to, signed_hash = pos, lhash
                continue
            unaccounted += 1
            refused.add(sid)
            first = first or (pos, sid, version)
        streams = 0
        for sid in list(self._own_streams):
            if sid in refused or sid not in heads:
                continue
            version, digest = heads[sid]
            if state.streams.get(sid, (0, ""))[0] < version:
                self._sign(cur, signer, "stream", sid, version, digest, note)
                streams += 1
            del self._own_streams[sid]
        if signed_to > start:
            self._sign(cur, signer, "log", "log", signed_to, signed_hash, note)
            self._own = [(a, b) for a, b in self._own if b > signed_to]
        return SignResult(signed_to if signed_to > start else None, streams, unaccounted, first)

    def _owns(self, position: int) -> bool:
        return any(a <= position <= b for a, b in self._own)

    def _hash_on(self, cur: Any, stream_id: str, version: int) -> str | None:
        """The stream hash at ``version`` (the genesis hash before version 1; None: no such event)."""
        if version == 0:
            return GENESIS_HASH
        m = self._mark
        cur.execute(f"SELECT hash FROM events WHERE stream_id = {m} AND stream_version = {m}", (stream_id, version))
        row = cur.fetchone()
        return row[0] if row else None

    def add_signature(self, signature: dict[str, Any], note: str | None = None) -> None:
        """Keep a stream signature made elsewhere (an imported episode's provenance)."""
        row = {k: signature[k] for k in ("kind", "subject", "position", "hash", "signed_at", "key_id", "signature")}
        with self._write_transaction() as cur:
            self._insert_checkpoint(cur, {**row, "note": note})

    def _insert_checkpoint(self, cur: Any, row: dict[str, Any]) -> None:
        names = CHECKPOINT_COLUMNS[1:]  # seq is the database's
        marks = ", ".join([self._mark] * len(names))
        cur.execute(f"INSERT INTO checkpoints ({', '.join(names)}) VALUES ({marks})", tuple(row[k] for k in names))

    def _sign(
        self, cur: Any, signer: signing.Signer, kind: str, subject: str, position: int, digest: str, note: str | None
    ) -> dict[str, Any]:
        at = self.clock()
        row = {
            "kind": kind,
            "subject": subject,
            "position": position,
            "hash": digest,
            "signed_at": at,
            "key_id": signer.key_id,
            "signature": signer.sign(signing.checkpoint_message(kind, subject, position, digest, at)),
        }
        self._insert_checkpoint(cur, {**row, "note": note})
        return row

    def missing_guards(self) -> list[str]:
        """The immutability guards (triggers; on PostgreSQL also grants) that are not in force."""
        from inquitree.events import guards

        with self._cursor() as cur:
            return guards.missing(cur, self.dialect)

    def checkpoints(self) -> list[dict[str, Any]]:
        with self._cursor() as cur:
            cur.execute(f"SELECT {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints ORDER BY seq")
            return [dict(zip(CHECKPOINT_COLUMNS, r, strict=False)) for r in cur.fetchall()]

    # -- reading ---------------------------------------------------------------------------
    def current_version(self, stream_id: str) -> int:
        with self._cursor() as cur:
            return self._version_on(cur, stream_id)

    def read_stream(self, stream_id: str, from_version: int = 1) -> list[RecordedEvent]:
        """Every event of ``stream_id`` from ``from_version`` on, in version order."""
        m = self._mark
        with self._cursor() as cur:
            cur.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE stream_id = {m} AND stream_version >= {m} "
                "ORDER BY stream_version",
                (stream_id, from_version),
            )
            return [_recorded(r) for r in cur.fetchall()]

    def read_all(self, after_position: int = 0, limit: int = 10_000) -> list[RecordedEvent]:
        """Up to ``limit`` events of every stream with global position > ``after_position``."""
        m = self._mark
        with self._cursor() as cur:
            cur.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE global_position > {m} ORDER BY global_position LIMIT {m}",
                (after_position, limit),
            )
            return [_recorded(r) for r in cur.fetchall()]

    def read_prefix(
        self, prefix: str, event_types: Sequence[str], through_position: int, batch: int = 10_000
    ) -> Iterator[RecordedEvent]:
        """The events of ``event_types`` in the streams starting with ``prefix``, up to
        ``through_position``, stream by stream (the stream index's order: a campaign's own events,
        not the whole log's)."""
        where, args = self._starting_with(prefix)
        m = self._mark
        types = ", ".join([m] * len(event_types))
        after: tuple[str, int] = ("", 0)
        while True:
            with self._cursor() as cur:
                cur.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} AND event_type IN ({types}) "
                    f"AND global_position <= {m} AND (stream_id > {m} OR (stream_id = {m} AND stream_version > {m})) "
                    f"ORDER BY stream_id, stream_version LIMIT {batch}",
                    (
                        *args,
                        *event_types,
                        through_position,
                        after[0],
                        after[0],
                        after[1],
                    ),
                )
                rows = cur.fetchall()
            yield from (_recorded(r) for r in rows)
            if len(rows) < batch:
                return
            after = (rows[-1][1], rows[-1][2])

    def iter_all(self, after_position: int = 0, batch: int = 10_000) -> Iterator[RecordedEvent]:
        while True:
            chunk = self.read_all(after_position, batch)
            yield from chunk
            if len(chunk) < batch:
                return
            after_position = chunk[-1].global_position

    def last_position(self) -> int:
        with self._cursor() as cur:
            cur.execute("SELECT max(global_position) FROM events")
            return (cur.fetchone() or (0,))[0] or 0

    def streams(self, prefix: str | None = None) -> list[StreamInfo]:
        """Every stream with its version and first/last timestamps, in stream id order."""
        where = ""  # every stream
        args: tuple[str, ...] = ()
        if prefix:
            condition, args = self._starting_with(prefix)
            where = f"WHERE {condition} "
        with self._cursor() as cur:
            cur.execute(
                "SELECT stream_id, max(stream_version), min(recorded_at), max(recorded_at) FROM events "
                f"{where}GROUP BY stream_id ORDER BY stream_id",
                args,
            )
            return [StreamInfo(*row) for row in cur.fetchall()]

    def newest_streams(self, prefix: str, limit: int, offset: int = 0) -> list[StreamInfo]:
        """A page of the streams starting with ``prefix``, newest first (by their first event),
        read from the primary key backwards: the time does not grow with the log (``streams``
        groups every event). ``version`` and ``last_recorded_at`` are of the first event; read the
        stream for the rest."""
        where, args = self._starting_with(prefix)
        m = self._mark
        with self._cursor() as cur:
            cur.execute(
                f"SELECT stream_id, stream_version, recorded_at, recorded_at FROM events WHERE stream_version = 1 "
                f"AND {where} ORDER BY global_position DESC LIMIT {m} OFFSET {m}",
                (*args, limit, offset),
            )
            return [StreamInfo(*row) for row in cur.fetchall()]

    def streams_with_event(self, prefix: str, event_type: str) -> set[str]:
        """The ids of streams starting with ``prefix`` that hold at least one ``event_type`` event."""
        where, args = self._starting_with(prefix)
        with self._cursor() as cur:
            cur.execute(
                f"SELECT DISTINCT stream_id FROM events WHERE {where} AND event_type = {self._mark}",
                (*args, event_type),
            )
            return {row[0] for row in cur.fetchall()}

    def _starting_with(self, prefix: str) -> tuple[str, tuple[str, ...]]:
        """A condition (and its arguments) for the stream ids that start with ``prefix``, exactly.

        On SQLite it is a range of the (stream_id, stream_version) index, which holds exactly the
        ids that start with the prefix: LIKE is case-insensitive there, so it could not use that
        index and read every event (a campaign's start read a million-event store twice over,
        0.85 s). On PostgreSQL LIKE is exact already; a range there would follow the database's
        collation, not the bytes."""
        m = self._mark
        end = _prefix_end(prefix) if self.dialect == "sqlite" else None
        if end is None:
            return f"stream_id LIKE {m} ESCAPE '/'", (_like_prefix(prefix),)
        return f"stream_id >= {m} AND stream_id < {m}", (prefix, end)

    # -- integrity -------------------------------------------------------------------------
    def verify(  # noqa: C901 - one walk over the log checks both chains and every claim
        self,
        progress: Callable[[int], None] | None = None,
        stream_id: str | None = None,
        *,
        anchor: Anchor | None = None,
        verifier: signing.Verifier | signing.Keyring | None = None,
    ) -> VerifyReport:
        """Walk the log in global position order and check both chains, then what proves its head.

        Without ``anchor`` or ``verifier`` this finds any event changed, removed, moved or added
        inside the log, but cannot tell a log cut short at its end, or rewritten and re-hashed as a
        whole, from an honest one. An ``anchor`` proves the log up to its position; a ``verifier``
        checks the signed checkpoints in the store and proves the log up to the last one. With
        ``stream_id``, only that stream's chain is checked. ``verifier`` may be a keyring: each
        checkpoint is checked with the key that made it, and an event is covered by a signed log head
        at or after it, or by a signed head of its stream (an exported or imported episode)."""
        if stream_id is not None:
            return self._verify_stream(stream_id)
        keys = signing.Keyring.of(verifier)
        report = VerifyReport(0, 0, None)
        expect: dict[int, list[tuple[str, str]]] = {}  # global position -> [(who says so, log hash)]
        expect_stream: dict[tuple[str, int], list[tuple[str, str]]] = {}
        if anchor is not None:
            report.proof += ("anchor",)
            if anchor.signature and keys is not None:
                by = keys.get(anchor.key_id or "")
                if by is None or not by.verify(anchor.message(), anchor.signature):
                    report.first_problem = (None, None, "the anchor's signature does not match the given key")
                    return report
                report.notes.append(f"the anchor is signed by key {by.key_id}")
            expect.setdefault(anchor.position, []).append(("the anchor", anchor.log_hash))
        stream_signed: dict[str, int] = {}  # stream -> the highest version a signed stream head covers
        if keys is not None:
            report.proof += ("key",)
            problem = self._load_checkpoints(keys, expect, expect_stream, report.notes)
            if problem:
                report.first_problem = (None, None, problem)
                return report
            for sid, version in expect_stream:
                stream_signed[sid] = max(version, stream_signed.get(sid, 0))
        covered_to = max(expect, default=0)
        heads: dict[str, tuple[int, str]] = {}
        prev_log, last_pos = GENESIS_HASH, 0
        with self._scan(
            "SELECT global_position, stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
            "prev_hash, hash, log_hash FROM events ORDER BY global_position"
        ) as rows:
            for pos, sid, version, etype, sver, at, payload, prev_hash, digest, lhash in rows:
                problem = link_problem(
                    heads.get(sid, (0, GENESIS_HASH)), sid, version, etype, sver, at, payload, prev_hash, digest
                )
                if problem is None and log_hash(prev_log, pos, digest) != lhash:
                    problem = (
                        f"log hash does not match at global position {pos} (an event before it was removed, "
                        "inserted or moved, or this one was)"
                    )
                if problem is None:
                    if pos in expect:
                        problem = _against(expect.pop(pos), lhash, f"global position {pos}")
                    if expect_stream and (sid, version) in expect_stream:
                        claims = expect_stream.pop((sid, version))
                        problem = problem or _against(claims, digest, f"stream {sid!r} version {version}")
                report.events_checked += 1
                if sid not in heads:
                    report.streams_checked += 1
                if problem:
                    report.first_problem = (sid, version, problem)
                    return report
                heads[sid] = (version, digest)
                prev_log, last_pos = lhash, pos
                if report.proof and pos > covered_to:
                    if version > stream_signed.get(sid, 0) and sid.startswith(IMPORT_PREFIX):
                        report.unsigned_import_records += 1
                    elif version > stream_signed.get(sid, 0):
                        report.uncovered += 1
                    else:
                        report.stream_covered += 1
                if progress and report.events_checked % 100_000 == 0:
                    progress(report.events_checked)
        report.head_position, report.head_hash = last_pos, prev_log
        for pos, claims in sorted(expect.items()):
            who = " and ".join(w for w, _ in claims)
            report.first_problem = (
                None,
                None,
                f"{who} covers global position {pos}, but the log ends at position {last_pos}: "
                "events were removed from the end of the log",
            )
            return report
        for (sid, version), claims in expect_stream.items():
            who = " and ".join(w for w, _ in claims)
            report.first_problem = (sid, version, f"{who} covers this event, but the stream no longer has it")
            return report
        report.covered_to = covered_to
        return report

    @contextlib.contextmanager
    def _scan(self, sql: str) -> Iterator[Iterator[tuple[Any, ...]]]:
        """The rows of ``sql`` straight from the driver, fetched in batches (a server-side cursor on
        PostgreSQL), for walks over the whole log: SQLAlchemy's row objects cost more than the hashing."""
        raw = self._connect()
        try:
            driver: Any = getattr(raw, "driver_connection", raw)
            cur = driver.cursor(name="inquitree_scan") if self.dialect == "postgresql" else raw.cursor()
            cur.execute(sql)

            def rows() -> Iterator[tuple[Any, ...]]:
                while batch := cur.fetchmany(20_000):
                    yield from batch

            yield rows()
            cur.close()
        except Exception as exc:
            if _is_db_error(exc) and is_damage(exc):
                raise self._damage(exc) from exc
            raise
        finally:
            _rollback(raw)
            raw.close()

    def _load_checkpoints(
        self,
        keys: signing.Keyring,
        expect: dict[int, list[tuple[str, str]]],
        expect_stream: dict[tuple[str, int], list[tuple[str, str]]],
        notes: list[str],
    ) -> str | None:
        """Check every checkpoint's signature; those by a key of ``keys`` become claims to check
        against the log. A checkpoint that claims such a key and does not verify is a problem."""
        others: dict[str, int] = {}
        for cp in self.checkpoints():
            verifier = keys.get(cp["key_id"])
            if verifier is None:
                others[cp["key_id"]] = others.get(cp["key_id"], 0) + 1
                continue
            message = signing.checkpoint_message(cp["kind"], cp["subject"], cp["position"], cp["hash"], cp["signed_at"])
            if not verifier.verify(message, cp["signature"]):
                return (
                    f"checkpoint #{cp['seq']} ({cp['kind']} at {cp['position']}): "
                    "the signature does not match (forged or altered)"
                )
            claim = (f"checkpoint #{cp['seq']} signed {cp['signed_at']}", cp["hash"])
            if cp["kind"] == "log":
                expect.setdefault(cp["position"], []).append(claim)
            else:
                expect_stream.setdefault((cp["subject"], cp["position"]), []).append(claim)
        streams = sum(1 for claims in expect_stream.values() for _ in claims)
        if streams:
            notes.append(f"{streams} signed stream head(s) (episodes recorded, exported or imported) are checked too")
        for key_id, n in sorted(others.items()):
            notes.append(f"{n} checkpoint(s) signed by another key ({key_id}) were not checked")
        return None

    def _verify_stream(self, stream_id: str) -> VerifyReport:
        """One stream's chain (its content and order); the log chain needs the whole log."""
        report = VerifyReport(0, 0, None)
        last = (0, GENESIS_HASH)
        with self._cursor() as cur:
            cur.execute(
                "SELECT stream_version, event_type, schema_version, recorded_at, payload, prev_hash, hash FROM events "
                f"WHERE stream_id = {self._mark} ORDER BY stream_version",
                (stream_id,),
            )
            for version, etype, sver, at, payload, prev_hash, digest in cur.fetchall():
                report.events_checked += 1
                report.streams_checked = 1
                problem = link_problem(last, stream_id, version, etype, sver, at, payload, prev_hash, digest)
                if problem:
                    report.first_problem = (stream_id, version, problem)
                    return report
                last = (version, digest)
        return report


def _against(claims: list[tuple[str, str]], actual: str, where: str) -> str | None:
    """The first claim (who, hash) about ``where`` that ``actual`` contradicts, as a problem."""
    for who, claimed in claims:
        if claimed != actual:
            return (
                f"{who} says the hash at {where} is {claimed[:16]}..., the log has {actual[:16]}...: "
                "the log was rewritten"
            )
    return None


def _rows(
    stream_id: str, content: list[tuple[str, int, str, bytes]], stream_head: tuple[int, str], log_head: tuple[int, str]
) -> list[tuple[Any, ...]]:
    """Rows in ``INSERT_COLUMNS`` order, numbered after the heads and chained to them
    (``chain_hash`` and ``log_hash`` inlined over bytes: this loop is the append hot path)."""
    version, prev = stream_head
    position, prev_log = log_head
    rows = []
    for etype, sver, at, payload in content:
        version += 1
        position += 1
        digest = hashlib.sha256(
            f"{prev}\n{stream_id}\n{version}\n{etype}\n{sver}\n{at}\n".encode() + payload
        ).hexdigest()
        prev_log = hashlib.sha256(f"{prev_log}\n{position}\n{digest}".encode()).hexdigest()
        rows.append((position, stream_id, version, etype, sver, at, payload.decode(), prev, digest, prev_log))
        prev = digest
    return rows


def _check_stream_name(stream_id: str) -> None:
    """The last line of the id grammar (``events/names.py``): nothing InquiTree appends names an
    episode outside it, whichever way the id came in."""
    if stream_id.startswith(EPISODE_PREFIX):
        check_episode_id(stream_id.removeprefix(EPISODE_PREFIX), f"stream {shown(stream_id)}")
    elif len(stream_id) > 200 or not stream_id.isprintable():
        raise BadName(f"stream {shown(stream_id)}: a stream name is at most 200 printable characters")


def _schema_revision(cur: Any) -> str | None:
    """The store's schema revision as Alembic records it, or None (no table, or not one row)."""
    try:  # a failed statement ends the caller's transaction; its connection is rolled back right after
        cur.execute("SELECT version_num FROM alembic_version")
        rows = cur.fetchall()
    except Exception as exc:
        if not _is_db_error(exc):
            raise
        return None
    return rows[0][0] if len(rows) == 1 else None


def _prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, in code point (and so
    UTF-8 byte) order: its last character moved on by one; None where there is no such string
    to write (an empty prefix, or one ending in the last code point)."""
    if not prefix or prefix[-1] == "\U0010ffff":
        return None
    nxt = ord(prefix[-1]) + 1
    return prefix[:-1] + chr(0xE000 if 0xD800 <= nxt <= 0xDFFF else nxt)  # UTF-8 has no surrogates


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern (with ESCAPE '/') for the strings that start with ``prefix``."""
    return prefix.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"


def _rollback(raw: Any) -> None:
    with contextlib.suppress(Exception):
        raw.rollback()


def _recorded(row: tuple[Any, ...]) -> RecordedEvent:
    """A row of ``SELECT EVENT_COLUMNS`` as the event it records."""
    pos, sid, version, etype, sver, at, payload, prev_hash, digest, lhash = row
    return RecordedEvent(pos, sid, version, etype, sver, at, parse_json(payload), prev_hash, digest, lhash)


def _short(exc: BaseException) -> str:
    """The driver's own one-line reason, without SQLAlchemy's boilerplate."""
    orig = getattr(exc, "orig", None) or exc
    lines = [ln.strip() for ln in str(orig).strip().splitlines() if ln.strip()]
    return "; ".join(lines[:2]) if lines else type(orig).__name__
