"""Stage 1 of a sync: reading the store's events after a position, as Arrow tables.

Small backlogs are read in-process through the store's reading interface (``_Source``); large
ones from PostgreSQL by two ADBC connections side by side (``_AdbcPostgresSource``), and from
SQLite by the ADBC driver in a child process that hands chunks over in shared memory
(``_ChildSource``, ``reader.py``).
Payloads stored at an older schema version are brought forward here (``upcast_old``).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from inquitree.events import (
    NOTIFICATION_COLUMNS,
    EventStore,
    StoreError,
    adds_only_from,
    canonical_json,
    notifications_sql,
    redact,
    registered_types,
    upcast,
)
from inquitree.warehouse.errors import WarehouseError

LARGE_BACKLOG = 100_000  # events; below this, a sync reads row by row in-process

# The store's notification columns (events/database.py, the one description of what a projection
# reads) as Arrow types: the integers are positions and versions, the rest text.
_ARROW_SCHEMA = pa.schema(
    [(c, pa.int64() if c.endswith(("_position", "_version")) else pa.string()) for c in NOTIFICATION_COLUMNS]
)


class _Source:
    """Reads events after a position as Arrow tables, through the store's own reading interface
    (``EventStore.notifications``, on a read-only store): for small backlogs. Opening it checks
    the URL, the file and the schema revision as every command does; large backlogs go to
    ``_AdbcPostgresSource`` or ``_ChildSource``, which read the same columns with drivers of
    their own straight into Arrow."""

    def __init__(self, url: str):
        self.url = url
        try:
            self.store = EventStore(url, read_only=True)
        except StoreError as exc:
            raise WarehouseError(str(exc)) from None
        self.backend = self.store.dialect

    def last_position(self) -> int:
        return self.store.last_position()

    def batches(self, after: int, limit: int) -> Iterator[pa.Table]:
        """Tables of at most ``limit`` events each, in position order, until the store's end."""
        while True:
            batch = self._batch(after, limit)
            if batch.num_rows:
                yield batch
            if batch.num_rows < limit:
                return
            after = batch.column("global_position")[-1].as_py()

    def _batch(self, after: int, limit: int) -> pa.Table:
        rows = self.store.notifications(after, limit)
        columns = list(zip(*rows, strict=False)) if rows else [()] * len(_ARROW_SCHEMA)
        return pa.table(
            [pa.array(c, f.type) for c, f in zip(columns, _ARROW_SCHEMA, strict=False)], schema=_ARROW_SCHEMA
        )

    def close(self) -> None:
        self.store.close()


def _libpq_uri(url: str) -> str:
    import sqlalchemy as sa  # here: a sync of a SQLite store never needs it

    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class _AdbcPostgresSource:
    """A large PostgreSQL backlog, read by the ADBC driver straight into Arrow: ``READERS``
    connections, each in a thread of its own, read ranges of positions side by side, and the
    tables are handed over in position order. The driver releases the GIL while it reads, and
    one connection left a core idle: two connections stream and sync clearly faster than one on
    2 cores, and three were no faster (alternated in one process; docs/performance.md)."""

    READERS = 2
    AHEAD = 1  # ranges read past the one being handed over, beyond one per reader

    def __init__(self, url: str, after: int, last: int):
        import adbc_driver_postgresql.dbapi as adbc

        self.url, self.last = url, last
        self._adbc = adbc
        # The connections not reading now: all of them once batches() has ended, since its
        # pool's threads each put theirs back and are joined before it returns.
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        self._idle.put(self._connect())  # here: a bad URL or a server that is down is reported at once
        self.sql = notifications_sql("$1", upto="$2")

    def _connect(self):
        try:
            conn = self._adbc.connect(_libpq_uri(self.url))
        except Exception as exc:  # the driver's own error types
            raise WarehouseError(f"cannot read the event store {redact(self.url)}: {exc}") from exc
        return conn

    def _range(self, lo: int, hi: int) -> pa.Table:
        """The events with ``lo < position <= hi``, on a connection no other thread is using."""
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._connect()
        try:
            cur = conn.cursor()
            try:
                cur.execute(self.sql, parameters=(lo, hi))
                return cur.fetch_arrow_table()
            finally:
                cur.close()
        finally:
            self._idle.put(conn)

    def batches(self, after: int, limit: int) -> Iterator[pa.Table]:
        """Tables of the events in ranges of ``limit`` positions up to the last one there was
        when the sync began, in position order (a range may hold fewer events: positions can
        have gaps)."""
        bounds = deque((lo, min(lo + limit, self.last)) for lo in range(after, self.last, limit))
        with ThreadPoolExecutor(self.READERS, thread_name_prefix="warehouse-pg") as pool:
            reading: deque[Future] = deque()
            try:
                while bounds or reading:
                    while bounds and len(reading) < self.READERS + self.AHEAD:
                        reading.append(pool.submit(self._range, *bounds.popleft()))
                    table = reading.popleft().result()
                    if table.num_rows:
                        yield table
            finally:
                for f in reading:  # stopped early: the ranges not started are not read
                    f.cancel()

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class _ChildSource:
    """A SQLite backlog read by ``python -m inquitree.warehouse.reader`` (see that module) into
    Arrow IPC files in a spool directory, which this memory-maps without copying."""

    def __init__(self, path: str, after: int, last: int, batch_rows: int):
        import tempfile

        shm = Path("/dev/shm")
        where = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
        _remove_stale_spools(where)
        self.spool = tempfile.mkdtemp(prefix=f"inquitree-sync-{os.getpid()}-", dir=where)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inquitree.warehouse.reader",
                path,
                str(after),
                str(last),
                str(batch_rows),
                self.spool,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def batches(self, after: int, limit: int) -> Iterator[pa.Table]:
        """The child's chunks in order (``after`` and ``limit`` were fixed when it started)."""
        stdout, stdin = self.proc.stdout, self.proc.stdin
        assert stdout is not None and stdin is not None  # both are pipes (Popen above)
        for line in stdout:
            chunk = line.decode().rstrip("\n")
            with pa.memory_map(chunk) as source:
                table = pa.ipc.open_file(source).read_all()
            os.unlink(chunk)  # the mapping keeps the pages until the table is dropped
            # one acknowledgement: the child may write one more (unbuffered, so nothing is left to
            # flush); a broken pipe: the child has written its last chunk and exited
            with contextlib.suppress(BrokenPipeError):
                os.write(stdin.fileno(), b".")
            yield table
        if self.proc.wait() != 0:
            err = (self.proc.stderr.read() if self.proc.stderr else b"").decode(errors="replace").strip().splitlines()
            raise WarehouseError(f"the store reader failed: {err[-1] if err else f'exit {self.proc.returncode}'}")

    def close(self) -> None:
        import shutil

        if self.proc.stdin:
            self.proc.stdin.close()  # a child waiting for an acknowledgement stops
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.spool, ignore_errors=True)


def _remove_stale_spools(where: Path) -> None:
    """Spool directories left by a sync whose process was killed (shared memory is RAM)."""
    import shutil

    for d in where.glob("inquitree-sync-*-*"):
        pid = d.name.split("-")[2]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)  # signal 0: is there such a process?
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass  # it exists (another user's): leave its spool alone


def open_source(url: str, after: int, batch_size: int) -> "_Source | _AdbcPostgresSource | _ChildSource":
    """Row by row in-process for small backlogs (no start-up cost); Arrow-native for large ones:
    the ADBC driver for PostgreSQL, a child process running the ADBC driver for SQLite. A store of
    any other backend is read through the store's own interface, whatever its size: no driver of
    another database is pointed at it."""
    src = _Source(url)
    last = src.last_position()
    if last - after < LARGE_BACKLOG or src.backend not in ("postgresql", "sqlite"):
        return src
    src.close()
    if src.backend == "postgresql":
        return _AdbcPostgresSource(url, after, last)
    import sqlalchemy as sa

    return _ChildSource(str(Path(sa.make_url(url).database or "").resolve()), after, last, batch_size)


def upcast_old(batch: pa.Table) -> pa.Table:
    """Bring payloads stored at an older schema version to the current one (in Python). A payload
    whose upcasts only add "not recorded" fields is loaded as stored, with its stored version:
    the typed tables read a missing field as NULL, which is what those fields would say (a 1M
    store recorded before AgentReplied v3 spent 7 of a sync's 12 s upcasting 272k events)."""
    current = {name: cls.VERSION for name, cls in registered_types().items()}
    # The distinct (type, version) pairs first: listing a million rows in Python is slow.
    pairs = batch.select(["event_type", "schema_version"]).group_by(["event_type", "schema_version"]).aggregate([])
    redo = {
        (t, v)
        for t, v in zip(*(pairs.column(c).to_pylist() for c in pairs.column_names), strict=False)
        if current.get(t, v) != v and not adds_only_from(t, v)
    }
    if not redo:
        return batch
    types = batch.column("event_type").to_pylist()
    versions = batch.column("schema_version").to_pylist()
    stale = [i for i, tv in enumerate(zip(types, versions, strict=False)) if tv in redo]
    payloads = batch.column("payload").to_pylist()
    for i in stale:
        payloads[i] = canonical_json(upcast(types[i], versions[i], json.loads(payloads[i])))
        versions[i] = current[types[i]]
    batch = batch.set_column(batch.schema.get_field_index("payload"), "payload", pa.array(payloads, pa.string()))
    return batch.set_column(
        batch.schema.get_field_index("schema_version"), "schema_version", pa.array(versions, pa.int64())
    )
