"""SQLite as an event store's database: a plain file is opened with sqlite3 itself (SQLAlchemy,
slow to import, only makes or upgrades its schema), every connection in WAL mode with a busy
wait; appends start with BEGIN IMMEDIATE, which serializes them across processes; a stream-id
prefix is a range of the stream index (LIKE is case-insensitive here and cannot use it); the
immutability guards are triggers."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inquitree.events.backends import MAX_PAYLOAD_BYTES, SIZE_GUARD, Backend, Connections
from inquitree.events.errors import StoreError

if TYPE_CHECKING:
    import sqlalchemy as sa

SQLITE_PAGE_SIZE = 8192  # a new SQLite store's page size (see _sqlite_setup)


def check_parent(database: str, shown: str) -> None:
    if database and database != ":memory:":
        parent = Path(database).expanduser().resolve().parent
        if not parent.is_dir():
            raise StoreError(f"cannot open the event store {shown}: directory {parent} does not exist")


def _busy_ms() -> int:
    return int(os.environ.get("INQUITREE_SQLITE_BUSY_MS", "30000"))


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


def plain_file(url: str) -> str | None:
    """The file of a plain ``sqlite:///PATH`` URL, which the store opens with sqlite3 itself; None
    for any other URL (PostgreSQL, memory, options), opened through SQLAlchemy."""
    return None if "?" in url else sqlite_database(url)


def connect(path: str, read_only: bool = False) -> sqlite3.Connection:
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


def engine(url: sa.URL, read_only: bool = False) -> sa.Engine:
    """A SQLAlchemy engine for a SQLite URL with options (a plain file is opened without one)."""
    import sqlalchemy as sa
    from sqlalchemy import event as sa_event

    check_parent(url.database or "", str(url))
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


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, in code point (and so
    UTF-8 byte) order: its last character moved on by one; None where there is no such string
    to write (an empty prefix, or one ending in the last code point)."""
    if not prefix or prefix[-1] == "\U0010ffff":
        return None
    nxt = ord(prefix[-1]) + 1
    return prefix[:-1] + chr(0xE000 if 0xD800 <= nxt <= 0xDFFF else nxt)  # UTF-8 has no surrogates


_GUARDS = {
    "events_no_update": ("events", "UPDATE"),
    "events_no_delete": ("events", "DELETE"),
    "checkpoints_no_update": ("checkpoints", "UPDATE"),
    "checkpoints_no_delete": ("checkpoints", "DELETE"),
    SIZE_GUARD[0]: SIZE_GUARD[1:],
}
# Each guard's trigger as `db upgrade` puts it back (the migrations made them the same way).
_CREATE = {
    name: f"CREATE TRIGGER {name} BEFORE {what} ON {table} "
    f"BEGIN SELECT RAISE(ABORT, '{table} are immutable: {what} is not allowed'); END"
    for name, (table, what) in _GUARDS.items()
    if name != SIZE_GUARD[0]
} | {
    SIZE_GUARD[0]: f"""CREATE TRIGGER {SIZE_GUARD[0]} BEFORE INSERT ON events
       WHEN length(CAST(NEW.payload AS BLOB)) > {MAX_PAYLOAD_BYTES}
       BEGIN SELECT RAISE(ABORT, 'an event payload over {MAX_PAYLOAD_BYTES} bytes is refused'); END"""
}


class SQLite(Backend):
    name = "sqlite"
    mark = "?"
    # A newest-first page of streams reads the primary key backwards: with the stream index the
    # planner took the prefix's range of it, every event of every episode, and sorted them.
    newest_table = "events NOT INDEXED"
    guards = _GUARDS

    def engine(self, url: sa.URL, read_only: bool, shown: str) -> sa.Engine:
        return engine(url, read_only)

    def begin_append(self, cur: Any) -> None:
        cur.execute("BEGIN IMMEDIATE")

    def begin_write(self, cur: Any) -> None:
        cur.execute("BEGIN IMMEDIATE")

    def hold_off_appends(self, cur: Any) -> None:
        """BEGIN IMMEDIATE holds every other writer off already."""

    def insert_rows(self, cur: Any, insert_one: str, columns: int, rows: list[tuple[Any, ...]]) -> None:
        if len(rows) == 1:
            cur.execute(insert_one, rows[0])
        else:
            cur.executemany(insert_one, rows)

    def prefix_range(self, prefix: str) -> str | None:
        return prefix_end(prefix)

    def guard_state(self, cur: Any) -> tuple[set[str], set[str], list[tuple[str, str, str]]]:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {r[0] for r in cur.fetchall()}, set(), []

    def restore_guards(
        self, cur: Any, present: set[str], disabled: set[str], grants: list[tuple[str, str, str]]
    ) -> list[str]:
        done = []
        for name in _GUARDS:
            if name not in present:
                cur.execute(_CREATE[name])
                done.append(f"created trigger {name}")
        return done


class FileConnections(Connections):
    """A plain SQLite file's connections, opened with sqlite3 itself; a read's connection is kept
    for the next one (up to ``KEEP``) unless it was left inside a transaction."""

    KEEP = 8
    dbapi = sqlite3

    def __init__(self, path: str, read_only: bool):
        self.path, self.read_only = path, read_only
        self.backend = SQLite()
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def connect(self) -> sqlite3.Connection:
        return connect(self.path, self.read_only)

    def take(self) -> sqlite3.Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self.connect()

    def give_back(self, conn: Any) -> None:
        if not conn.in_transaction:
            with self._lock:
                if len(self._idle) < self.KEEP:
                    self._idle.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
