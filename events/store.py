"""The event store: an append-only log in SQLite or PostgreSQL, in plain SQL over the drivers.

Its jobs live in one module each: the database (``events/database.py``, which the store holds as
``store.db``, with each backend in ``events/backends/``), appending and reading (here), signed
checkpoints (``events/checkpoints.py``, an object the store holds) and verification
(``events/verify.py``, a function over the database). Every backend runs the same store tests
(``tests/test_store.py``, through the ``store_url`` fixture).

A plain SQLite file is opened with sqlite3 itself; PostgreSQL (and SQLite URLs with options)
through SQLAlchemy's connection pool (the backends' ``Connections``). SQLAlchemy and Alembic make and upgrade the schema
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

import dataclasses
import hashlib
from typing import Any, Callable, Iterator, Sequence

from inquitree.boundary.errors import BadName
from inquitree.boundary.text import shown, warn
from inquitree.events import revisions, signing
from inquitree.events.backends import MAX_PAYLOAD_BYTES
from inquitree.events.base import Event, decode, frozen_from_dict, parse_json
from inquitree.events.chain import GENESIS_HASH, chain_hash
from inquitree.events.checkpoints import FROM_ENV, Checkpoints, FromEnv, SignResult
from inquitree.events.database import (
    EVENT_COLUMNS,
    INSERT_COLUMNS,
    LAST_POSITION_SQL,
    Database,
    _is_db_error,
    _rollback,
    _schema_revision,
    _short,
    notifications_sql,
    redact,
    utc_now,
)
from inquitree.events.errors import (
    ConcurrencyError,
    StoreError,
    UnknownEventType,
    UnknownEventVersion,
    is_damage,
)
from inquitree.events.names import EPISODE_PREFIX, check_episode_id
from inquitree.events.verify import Anchor, VerifyReport, verify

__all__ = [
    "MAX_EVENT_BYTES",
    "EventStore",
    "RecordedEvent",
    "StreamInfo",
]


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


# The largest event the log takes: far above any real one (a reply is cut at 20,000 characters, a
# tree file at 5 MB is refused before it is played), far below what stops the warehouse's loader.
# The database holds every writer to it too (the size guard, migration 0003).
MAX_EVENT_BYTES = MAX_PAYLOAD_BYTES


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
        create = create and not read_only
        if not create:
            auto_upgrade = False
        if isinstance(signer, FromEnv):
            signer = signing.signer_from_env() if create else None
        self.db = Database(url, read_only, create)
        self.url, self.dialect, self.read_only = self.db.url, self.db.dialect, read_only
        # (global position, log hash) after this store's last append: dropped with the appends' connection
        self._log_head: tuple[int, str] | None = None
        self.clock = clock
        # What this store appended and its key has not yet vouched for (a signer signs only what it accounts for).
        self.signing = Checkpoints(self.db, signer, clock)
        self._heads: dict[str, tuple[int, str]] = {}  # stream id -> (version, hash) after our last append to it
        marks = ", ".join([self.db.mark] * len(INSERT_COLUMNS))
        self._insert_one = f"INSERT INTO events ({', '.join(INSERT_COLUMNS)}) VALUES ({marks})"
        try:
            with self.db.cursor() as cur:  # an unreachable database fails here, not as "no schema" below
                cur.execute("SELECT 1")
                cur.fetchall()
                revision = _schema_revision(cur)
                foreign = _not_tables(cur, self.dialect) if revision is not None else []
        except Exception as exc:
            if not _is_db_error(exc):
                raise
            self.db.close()
            if is_damage(exc):
                raise self.db.damage(exc) from exc
            raise StoreError(f"cannot open the event store {redact(self.url)}: {_short(exc)}") from exc
        if foreign:
            self.db.close()
            raise StoreError(
                f"cannot open the event store {redact(self.url)}: its {' and its '.join(foreign)}, not the table "
                "InquiTree made: a store whose tables were replaced is not read (it could answer anything, or never)"
            )
        if revision != revisions.head():
            # Alembic (slow to import, in every worker process) only when the
            # schema is not at head: to make it, or to say why it cannot be used.
            from inquitree.events import migrate

            migrate.ensure_schema(self.db.engine, redact(self.url), auto_upgrade=auto_upgrade)
        if create and revision is not None:  # a writer into an existing store: are its guards in place?
            missing = self.missing_guards()
            if missing and not self.declared_guards():
                warn(f"inquitree: warning: {redact(self.url)}: {missing[0]}")
            elif missing:
                warn(
                    f"inquitree: warning: {redact(self.url)} no longer enforces immutability ({'; '.join(missing)}); "
                    "`inquitree db upgrade`, as the store's owner, restores it"
                )

    def close(self) -> None:
        """Sign the head if this store appended since its last checkpoint (with a signer), and close."""
        try:
            if self.signing.pending:
                self.signing.sign_recorded()
        finally:
            self.db.close()

    def __repr__(self) -> str:
        return f"EventStore({redact(self.url)!r})"

    @property
    def engine(self) -> Any:
        """The database's SQLAlchemy engine (made on first use): migrations, roles, the warehouse's loader."""
        return self.db.engine

    def missing_guards(self) -> list[str]:
        """The immutability guards (triggers; on PostgreSQL also grants) that are not in force."""
        return self.db.missing_guards()

    def declared_guards(self) -> list[str]:
        """The immutability guards this store's database has, one phrase each (``db verify``)."""
        return self.db.declared_guards()

    def __enter__(self) -> "EventStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        dbapi = self.db.dbapi
        with self.db.write_lock:
            for _attempt in range(3):
                raw, cur = self.db.writer()
                try:
                    self.db.backend.begin_append(cur)
                    stream_head = self._heads.get(stream_id)
                    if stream_head is None or stream_head[0] != expected_version:
                        stream_head = (expected_version, self._dbapi_hash_at(cur, stream_id, expected_version))
                    if self._log_head is None:
                        self._log_head = self.db.read_log_head(cur)
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
                    self.db.drop_writer()
                    self._log_head = None
                    if is_damage(exc):
                        raise self.db.damage(exc) from exc
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
                self.signing.recorded(rows[0][0], last[0], stream_id, rows[0][2])
                return int(last[2])
        raise StoreError(f"append to {stream_id!r} in {redact(self.url)}: the log head kept moving (3 attempts)")

    def _insert(self, cur: Any, rows: list[tuple[Any, ...]]) -> None:
        self.db.backend.insert_rows(cur, self._insert_one, len(INSERT_COLUMNS), rows)

    def _dbapi_hash_at(self, cur: Any, stream_id: str, version: int) -> str:
        found = self.db.hash_on(cur, stream_id, version)
        if found is None:
            raise ConcurrencyError(stream_id, version, self._version_on(cur, stream_id))
        return found

    def _version_on(self, cur: Any, stream_id: str) -> int:
        """The stream's version as ``cur`` sees it (0: no such stream)."""
        cur.execute(f"SELECT max(stream_version) FROM events WHERE stream_id = {self.db.mark}", (stream_id,))
        return (cur.fetchone() or (0,))[0] or 0

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

    # -- reading ---------------------------------------------------------------------------
    def current_version(self, stream_id: str) -> int:
        with self.db.cursor() as cur:
            return self._version_on(cur, stream_id)

    def read_stream(self, stream_id: str, from_version: int = 1) -> list[RecordedEvent]:
        """Every event of ``stream_id`` from ``from_version`` on, in version order."""
        m = self.db.mark
        with self.db.cursor() as cur:
            cur.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE stream_id = {m} AND stream_version >= {m} "
                "ORDER BY stream_version",
                (stream_id, from_version),
            )
            return [_recorded(r) for r in cur.fetchall()]

    def read_streams(self, stream_ids: Sequence[str], event_types: Sequence[str]) -> dict[str, list[RecordedEvent]]:
        """The events of ``event_types`` in each of ``stream_ids``, in version order, in one query
        (a listing's page asks for a few types of fifty episodes; reading and decoding every event
        of each was most of its time)."""
        out: dict[str, list[RecordedEvent]] = {sid: [] for sid in stream_ids}
        if not event_types:
            return out
        m = self.db.mark
        types = ", ".join([m] * len(event_types))
        wanted = list(out)
        for start in range(0, len(wanted), 500):  # a query's parameters are bounded (SQLite: 32,766)
            chunk = wanted[start : start + 500]
            with self.db.cursor() as cur:
                cur.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE stream_id IN ({', '.join([m] * len(chunk))}) "
                    f"AND event_type IN ({types}) ORDER BY stream_id, stream_version",
                    (*chunk, *event_types),
                )
                for row in cur.fetchall():
                    out[row[1]].append(_recorded(row))
        return out

    def read_all(self, after_position: int = 0, limit: int = 10_000) -> list[RecordedEvent]:
        """Up to ``limit`` events of every stream with global position > ``after_position``."""
        m = self.db.mark
        with self.db.cursor() as cur:
            cur.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE global_position > {m} ORDER BY global_position LIMIT {m}",
                (after_position, limit),
            )
            return [_recorded(r) for r in cur.fetchall()]

    def read_after(
        self, after_position: int, event_types: Sequence[str], through_position: int, batch: int = 10_000
    ) -> Iterator[list[RecordedEvent]]:
        """The events of ``event_types`` with ``after_position`` < global position <=
        ``through_position``, in log order, a batch (a list) at a time: a fold that needs a few
        types reads and parses only those."""
        m = self.db.mark
        types = ", ".join([m] * len(event_types))
        while after_position < through_position:
            with self.db.cursor() as cur:
                cur.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE global_position > {m} AND global_position <= {m} "
                    f"AND event_type IN ({types}) ORDER BY global_position LIMIT {m}",
                    (after_position, through_position, *event_types, batch),
                )
                rows = cur.fetchall()
            if not rows:
                return
            yield [_recorded(r) for r in rows]
            if len(rows) < batch:
                return
            after_position = rows[-1][0]

    def read_prefix(
        self, prefix: str, event_types: Sequence[str], through_position: int, batch: int = 10_000
    ) -> Iterator[RecordedEvent]:
        """The events of ``event_types`` in the streams starting with ``prefix``, up to
        ``through_position``, stream by stream (the stream index's order: a campaign's own events,
        not the whole log's)."""
        where, args = self.db.starting_with(prefix)
        m = self.db.mark
        types = ", ".join([m] * len(event_types))
        after: tuple[str, int] = ("", 0)
        while True:
            # Each batch starts where the last one ended. On SQLite the prefix is an index range
            # (stream_id >= ? AND stream_id < ?), and the planner takes its lower bound from there:
            # it is moved up to the last stream read, or every batch read the range from its start
            # again (a 4M-event campaign's first fold took 65 s, growing with the square of it).
            bounds = (after[0], args[1]) if len(args) == 2 and after[0] else args
            with self.db.cursor() as cur:
                cur.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} AND event_type IN ({types}) "
                    f"AND global_position <= {m} AND (stream_id, stream_version) > ({m}, {m}) "
                    f"ORDER BY stream_id, stream_version LIMIT {batch}",
                    (*bounds, *event_types, through_position, after[0], after[1]),
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

    def log_hash_at(self, position: int) -> str | None:
        """The log hash of the event at global ``position`` (None: no such event, or one recorded
        before log hashes): it names the whole log up to there, so a fold saved at ``position``
        can tell the store it was made from, as far as it read."""
        with self.db.cursor() as cur:
            cur.execute(f"SELECT log_hash FROM events WHERE global_position = {self.db.mark}", (position,))
            row = cur.fetchone()
            return row[0] if row else None

    def last_position(self) -> int:
        with self.db.cursor() as cur:
            cur.execute(LAST_POSITION_SQL)
            return (cur.fetchone() or (0,))[0] or 0

    def notifications(self, after: int, limit: int) -> list[tuple[Any, ...]]:
        """At most ``limit`` events after global position ``after``, in order, as a projection reads
        them: rows of ``NOTIFICATION_COLUMNS`` (no hashes: verification checks those)."""
        m = self.db.mark
        with self.db.cursor() as cur:
            cur.execute(notifications_sql(m, limit=m), (after, limit))
            rows: list[tuple[Any, ...]] = cur.fetchall()
            return rows

    def streams(self, prefix: str | None = None) -> list[StreamInfo]:
        """Every stream with its version and first/last timestamps, in stream id order."""
        where = ""  # every stream
        args: tuple[str, ...] = ()
        if prefix:
            condition, args = self.db.starting_with(prefix)
            where = f"WHERE {condition} "
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT stream_id, max(stream_version), min(recorded_at), max(recorded_at) FROM events "
                f"{where}GROUP BY stream_id ORDER BY stream_id",
                args,
            )
            return [StreamInfo(*row) for row in cur.fetchall()]

    def newest_streams(self, prefix: str, limit: int, offset: int = 0) -> list[StreamInfo]:
        """A page of the streams starting with ``prefix``, newest first (by their first event),
        read from the primary key backwards: the time grows with how deep the page is, not with the
        log (``streams`` groups every event). On SQLite the stream index is ruled out: its planner
        took the prefix's range of it, every event of every episode, and sorted them (0.1 s at 1M
        events quiet, 0.8 s loaded, for the first page that a backwards scan reads in 1-2 ms).
        ``version`` and ``last_recorded_at`` are of the first event; read the stream for the rest."""
        where, args = self.db.starting_with(prefix)
        m = self.db.mark
        table = self.db.backend.newest_table
        with self.db.cursor() as cur:
            cur.execute(
                f"SELECT stream_id, stream_version, recorded_at, recorded_at FROM {table} WHERE stream_version = 1 "
                f"AND {where} ORDER BY global_position DESC LIMIT {m} OFFSET {m}",
                (*args, limit, offset),
            )
            return [StreamInfo(*row) for row in cur.fetchall()]

    def streams_with_event(self, prefix: str, event_type: str) -> set[str]:
        """The ids of streams starting with ``prefix`` that hold at least one ``event_type`` event."""
        where, args = self.db.starting_with(prefix)
        with self.db.cursor() as cur:
            cur.execute(
                f"SELECT DISTINCT stream_id FROM events WHERE {where} AND event_type = {self.db.mark}",
                (*args, event_type),
            )
            return {row[0] for row in cur.fetchall()}

    # -- proving the log: a Checkpoints object over this database, and verify() ------------------
    @property
    def signer(self) -> signing.Signer | None:
        return self.signing.signer

    def head(self) -> tuple[int, str]:
        """The log's head: the last event's global position and log hash ((0, zeros) when empty)."""
        return self.signing.head()

    def checkpoint(
        self, signer: signing.Signer | None = None, note: str | None = None, *, adopt: bool = False
    ) -> SignResult:
        """Sign what the key can vouch for (:meth:`Checkpoints.checkpoint`)."""
        return self.signing.checkpoint(signer, note, adopt=adopt)

    def sign_recorded(self) -> SignResult:
        return self.signing.sign_recorded()

    def add_signature(self, signature: dict[str, Any], note: str | None = None) -> None:
        """Keep a stream signature made elsewhere (an imported episode's provenance)."""
        self.signing.add_signature(signature, note)

    def checkpoints(self) -> list[dict[str, Any]]:
        return self.signing.rows()

    def verify(
        self,
        progress: Callable[[int], None] | None = None,
        stream_id: str | None = None,
        *,
        anchor: Anchor | None = None,
        verifier: signing.Verifier | signing.Keyring | None = None,
    ) -> VerifyReport:
        """Both chains and what proves the head (:func:`inquitree.events.verify.verify`)."""
        return verify(self.db, progress, stream_id, anchor=anchor, verifier=verifier)


STORE_TABLES = ("events", "checkpoints")


def _not_tables(cur: Any, dialect: str) -> list[str]:
    """The store's tables (``STORE_TABLES``) that are something else (a view), as ``events is a
    view``, read from the database's catalogue before anything reads the tables themselves."""
    if dialect == "sqlite":
        cur.execute("SELECT name, type FROM sqlite_master WHERE name IN ('events', 'checkpoints')")
        kinds = {name: kind for name, kind in cur.fetchall()}
        return [f"{t} is a {kinds[t]}" for t in STORE_TABLES if t in kinds and kinds[t] != "table"]
    cur.execute(
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = current_schema() AND table_name IN ('events', 'checkpoints')"
    )
    kinds = {name: kind for name, kind in cur.fetchall()}
    return [
        f"{t} is a {'view' if 'VIEW' in kinds[t] else kinds[t].lower()}"
        for t in STORE_TABLES
        if t in kinds and kinds[t] != "BASE TABLE"
    ]


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


def _recorded(row: tuple[Any, ...]) -> RecordedEvent:
    """A row of ``SELECT EVENT_COLUMNS`` as the event it records."""
    pos, sid, version, etype, sver, at, payload, prev_hash, digest, lhash = row
    values = {
        "global_position": pos,
        "stream_id": sid,
        "stream_version": version,
        "event_type": etype,
        "schema_version": sver,
        "recorded_at": at,
        "payload": parse_json(payload),
        "prev_hash": prev_hash,
        "hash": digest,
        "log_hash": lhash,
    }
    return frozen_from_dict(RecordedEvent, values)  # every field: a frozen dataclass's __init__ is slow
