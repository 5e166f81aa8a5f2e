"""Filling the warehouse (``warehouse.py``) from the event store: ``Warehouse.sync``.

A sync is a checkpointed projection, in stages, one module each: it reads the events
after the stored global position as Arrow (``sources.py``: sqlite3 or psycopg for small
backlogs, ADBC drivers for large ones), reads the dimension rows beside it
(``dimensions.py``), then here stages the events, parses them into ``raw_events`` and the
typed ``ev_*`` tables (``schema.py``), and moves the checkpoint in the same DuckDB
transaction (one per ``COMMIT_ROWS`` events).
Re-running loads only new events; ``rebuild`` starts from an empty file and
gives identical tables.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Protocol

import duckdb
import pyarrow as pa

from inquitree.boundary.text import shown, warn
from inquitree.events import EPISODE_ID_PATTERN, default_url, redact
from inquitree.warehouse.dimensions import DimensionRows, dimension_rows
from inquitree.warehouse.errors import WarehouseError
from inquitree.warehouse.schema import (
    RAW_COLUMNS,
    TYPED,
    checkpoint,
    column_list,
    insert_typed,
    refresh_facts,
)
from inquitree.warehouse.sources import LARGE_BACKLOG, open_source, upcast_old


@dataclass
class SyncReport:
    events: int
    last_position: int
    seconds: float


FLUSH_ROWS = 1_000_000  # staged events parsed into the typed tables at a time (~0.5 GB staged)
COMMIT_ROWS = 2_000_000  # events per warehouse commit in a long sync (a few seconds of work)
BYTES_PER_STAGED_EVENT = 1_000  # staged payload and its parse, per event, with room to spare


def sync_windows(memory: int) -> tuple[int, int]:
    """(events staged before they are parsed, events per commit) for a memory setting in bytes:
    staged events and their parse take about BYTES_PER_STAGED_EVENT each, and a commit holds two
    flushes; never more than FLUSH_ROWS and COMMIT_ROWS, never fewer than 10,000 staged."""
    flush = max(10_000, min(FLUSH_ROWS, memory // BYTES_PER_STAGED_EVENT))
    return flush, min(COMMIT_ROWS, 2 * flush)


_STAGE_SELECT = """SELECT global_position, stream_id, CAST(stream_version AS INTEGER) AS stream_version, event_type,
       CAST(schema_version AS INTEGER) AS schema_version, strptime(recorded_at, '%Y-%m-%dT%H:%M:%S.%fZ') AS recorded_at,
       payload FROM incoming"""


def _insert_arrow(con: duckdb.DuckDBPyConnection, rows: pa.Table, sql: str) -> None:
    """Run ``sql``, an INSERT reading the Arrow table ``rows`` as ``incoming``, in the open
    transaction. Not unregistered in a ``finally``: a failed insert aborts the transaction, where
    unregistering fails as well and its error would hide the insert's; the rollback drops it."""
    con.register("incoming", rows)
    con.execute(sql)
    con.unregister("incoming")


class SyncTarget(Protocol):
    """What a sync fills: a warehouse's DuckDB connection, its path and its memory setting in bytes
    (:class:`~inquitree.warehouse.warehouse.Warehouse` is one)."""

    con: duckdb.DuckDBPyConnection
    path: str
    memory: int


def sync(  # noqa: C901 - one transaction stages, loads and checkpoints; its error paths must roll back together
    wh: "SyncTarget",
    store_url: str | None = None,
    batch_size: int = 100_000,
    flush_rows: int | None = None,
    commit_rows: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    trees_dirs: list[Path] | None = None,
    prices: Path | None = None,
    registry: Path | None = None,
) -> SyncReport:
    """Load every event after the checkpoint; refresh the dimensions.

    Batches of ``batch_size`` events arrive from a reader (a thread, or for a large SQLite
    backlog a child process, see ``reader.py``) and are staged in a temporary table while the
    reader fetches the next. Every ``flush_rows`` staged events the JSON is parsed into the
    typed tables, whose row groups (``ROW_GROUP_SIZE``) those inserts fill, so that DuckDB
    writes them as it goes. All of it happens in one transaction, committed with the
    checkpoint every ``commit_rows`` events and at the end: a run that dies loses only the
    uncommitted part, and the next sync resumes from the checkpoint. The dimension rows are
    read from the tree files in a thread meanwhile and written with the first commit.
    (Parsing and committing every batch instead was slower, measured alternately with
    ``bench/warehouse.py``.)
    """
    url = store_url or default_url()
    source_id = redact(url)
    default_flush, default_commit = sync_windows(wh.memory)
    flush_rows, commit_rows = flush_rows or default_flush, commit_rows or default_commit
    recorded_source, position = checkpoint(wh.con)
    since = position
    if recorded_source is not None and recorded_source != source_id:
        raise WarehouseError(
            f"the warehouse {wh.path} holds events of {recorded_source}, not {source_id}: "
            "use another --warehouse, or `inquitree warehouse rebuild`"
        )
    t0 = time.perf_counter()
    threads = int(wh.con.execute("SELECT current_setting('threads')").fetchall()[0][0])  # see _stage
    loaded = 0
    reader = _Reader(url, position, batch_size)
    # The dimension rows are read (every tree file validated) in a thread beside the
    # loading, and written in the first commit: a bad price table still stops the sync
    # before it commits any event, and the first batch is staged without waiting for them.
    dims_pool = ThreadPoolExecutor(1, thread_name_prefix="warehouse-dimensions")
    dims = dims_pool.submit(dimension_rows, _dimension_fingerprint(wh.con), trees_dirs, prices, registry)
    con = wh.con
    pending = staged = 0  # events loaded since the last commit; of those, not yet parsed
    try:
        for item in reader:
            if item.num_rows == 0:
                continue
            if pending == 0:
                con.execute("BEGIN TRANSACTION")
                # raw_events' columns plus the payload, which _flush parses and leaves behind.
                # Spelled out, not `AS SELECT ... LIMIT 0`: in DuckDB 2.0.0 a table made that
                # way inside a transaction loses a single insert of ~120k rows or more to
                # every later scan (tests/test_warehouse.py has the case).
                con.execute(f"CREATE OR REPLACE TEMP TABLE staged ({column_list(RAW_COLUMNS)}, payload VARCHAR)")
            _stage(wh.con, upcast_old(item), threads)
            position = item.column("global_position")[-1].as_py()
            loaded += item.num_rows
            pending += item.num_rows
            staged += item.num_rows
            if staged >= flush_rows or pending >= commit_rows:
                _flush(wh.con)
                staged = 0
            if pending >= commit_rows:
                _commit(wh.con, source_id, position, dims)
                pending = 0
            if progress:
                progress(loaded, position)
        if pending:
            if staged:
                _flush(wh.con)
            _commit(wh.con, source_id, position, dims)
            pending = 0
        elif dims.result() is not None:  # nothing left to load: the dimensions, if not written yet
            con.execute("BEGIN TRANSACTION")  # (their error, if any, came before it opened)
            _commit(wh.con, None, 0, dims)
    except BaseException:
        # Whether or not an event was loaded: a failure staging the first batch, or writing
        # the dimensions alone, leaves a transaction open too (aborted, refusing every
        # statement until it is rolled back).
        with contextlib.suppress(duckdb.Error):  # none open: a failed COMMIT ended it, or none was begun
            con.execute("ROLLBACK")
        raise
    finally:
        reader.close()
        dims_pool.shutdown(wait=True)
        con.execute(f"SET threads = {threads}")  # if a failed _stage left one
        con.execute("DROP TABLE IF EXISTS staged")
    if loaded >= LARGE_BACKLOG:
        # Fold the write-ahead log into the file now, inside the time a sync reports. With
        # 16k-row row groups a large sync leaves a write-ahead log below DuckDB's automatic
        # threshold, which closing the warehouse would otherwise checkpoint, outside that time.
        con.execute("CHECKPOINT")
    if loaded:
        _warn_foreign_ids(wh.con, since)
    if recorded_source is None and loaded == 0:  # bind an empty warehouse to its store too
        con.execute(
            "INSERT INTO sync_state VALUES (?, 0, 0, ?)",
            [source_id, datetime.now(timezone.utc).replace(tzinfo=None)],
        )
    return SyncReport(loaded, position, time.perf_counter() - t0)


class _Reader:
    """A thread that reads the events after ``position`` in batches while the sync loads them
    (DuckDB and the drivers release the GIL while they work): at most two batches wait in memory.
    Iterating gives the batches, then raises what the reader met, if anything; ``close`` lets the
    reader finish its current batch and exit, taking what it still puts."""

    def __init__(self, url: str, position: int, batch_size: int):
        self._batches: queue.Queue = queue.Queue(maxsize=2)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._read, args=(url, position, batch_size), name="warehouse-reader", daemon=True
        )
        self._thread.start()

    def _read(self, url: str, position: int, batch_size: int) -> None:
        src = None
        try:
            src = open_source(url, position, batch_size)
            for batch in src.batches(position, batch_size):
                if self._stop.is_set():
                    break
                self._batches.put(batch)
        except Exception as exc:  # handed to the loading thread
            self._batches.put(exc)
        finally:
            try:
                if src is not None:
                    src.close()
            finally:
                self._batches.put(None)  # always: the loading thread waits for it

    def __iter__(self) -> Iterator[pa.Table]:
        while (item := self._batches.get()) is not None:
            if isinstance(item, Exception):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._batches.get(timeout=0.1)
        self._thread.join()


def _warn_foreign_ids(con: duckdb.DuckDBPyConnection, after: int) -> None:
    """Say which episodes just loaded have ids outside the grammar (``events/names.py``): only a
    writer other than InquiTree puts them there (a PostgreSQL writer role may INSERT). They are
    kept, as the log is, and shown escaped; no file is ever named after them (``report``)."""
    rows = con.execute(
        # each new stream once (its first event), not every event of it
        "SELECT stream_id[9:] FROM raw_events WHERE global_position > ? AND stream_version = 1 "
        "AND starts_with(stream_id, 'episode/') AND NOT regexp_full_match(stream_id[9:], ?) LIMIT 6",
        [after, EPISODE_ID_PATTERN],
    ).fetchall()
    if rows:
        names = ", ".join(shown(r[0]) for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
        warn(
            f"inquitree: warning: the store holds episode ids outside InquiTree's grammar (written by "
            f"something other than InquiTree): {names}"
        )


def _refuse_oversized(batch: pa.Table) -> None:
    """Refuse a batch holding an event larger than the store ever writes (``MAX_EVENT_BYTES``):
    such a row was put there behind the store's back, and one of 200 MB ended every sync in
    DuckDB's out-of-memory traceback. The error names its position and size, in one line."""
    import pyarrow.compute as pc

    from inquitree.events import MAX_EVENT_BYTES

    lengths = pc.binary_length(pc.cast(batch.column("payload"), pa.binary()))
    if not len(lengths) or (pc.max(lengths).as_py() or 0) <= MAX_EVENT_BYTES:
        return
    at = int(pc.index(pc.greater(lengths, MAX_EVENT_BYTES), True).as_py())
    position, size = batch.column("global_position")[at].as_py(), lengths[at].as_py()
    raise WarehouseError(
        f"event {position} is {size:,} bytes, over the {MAX_EVENT_BYTES:,} this code writes: the store holds a row "
        "it did not write this way; nothing was synced (`inquitree db verify` checks the store)"
    )


def _stage(con: duckdb.DuckDBPyConnection, batch: pa.Table, threads: int) -> None:
    """Copy one Arrow batch into the ``staged`` table (the caller's transaction), then give
    DuckDB back its ``threads``.

    With one DuckDB thread: on a 2-core machine the copy takes about half the time it takes
    with two, the SQLite reader being busy beside it, and the whole sync is no slower and
    uses less CPU (``bench/warehouse.py``, alternated). The parsing in ``_flush`` keeps every
    thread: with one, the sync was clearly slower."""
    _refuse_oversized(batch)
    con.execute("SET threads = 1")
    _insert_arrow(con, batch, f"INSERT INTO staged {_STAGE_SELECT}")
    # After a failed insert sync() sets the threads back, once it has rolled back.
    con.execute(f"SET threads = {threads}")


def _flush(con: duckdb.DuckDBPyConnection) -> None:
    """Parse the staged events into ``raw_events`` and the typed tables, and empty ``staged``."""
    con.execute("INSERT INTO raw_events SELECT * EXCLUDE (payload) FROM staged")
    con.execute(  # the episodes whose facts the commit recomputes (schema.refresh_facts)
        "INSERT INTO touched_episodes SELECT stream_id[9:], min(global_position) FROM staged "
        "WHERE starts_with(stream_id, 'episode/') GROUP BY ALL"
    )
    present = {t for (t,) in con.execute("SELECT DISTINCT event_type FROM staged").fetchall()}
    for event_type, (table, cols) in TYPED.items():
        if event_type in present:  # an INSERT costs even with nothing to insert
            con.execute(insert_typed(event_type, table, cols, "staged"))
    con.execute("DELETE FROM staged")


def _commit(con: duckdb.DuckDBPyConnection, source_id: str | None, position: int, dims: Future) -> None:
    """Move the checkpoint to ``position`` (unless ``source_id`` is None), write the dimension
    rows if they have not been yet, bring the episodes' facts up to date (all of them when the
    dimensions they read changed), and commit the open transaction."""
    rows = dims.result()
    rewritten = rows is not None and rows.fingerprint != _dimension_fingerprint(con)
    if rewritten:
        _write_dimensions(con, rows)
    refresh_facts(con, everything=rewritten)
    if source_id is not None:
        con.execute("DELETE FROM sync_state")
        con.execute(
            "INSERT INTO sync_state VALUES (?, ?, (SELECT count(*) FROM raw_events), ?)",
            [source_id, position, datetime.now(timezone.utc).replace(tzinfo=None)],
        )
    con.execute("COMMIT")


def _dimension_fingerprint(con: duckdb.DuckDBPyConnection) -> str | None:
    rows = con.execute("SELECT fingerprint FROM dimension_state").fetchall()
    return rows[0][0] if rows else None


def _write_dimensions(con: duckdb.DuckDBPyConnection, rows: "DimensionRows") -> None:
    """Replace the dimension tables (in the caller's transaction)."""
    for table, values in rows.tables.items():
        con.execute(f"DELETE FROM {table}")
        if values:  # as one Arrow table: executemany took ~70 ms for these few hundred rows
            columns = pa.table(
                [pa.array(c) for c in zip(*values, strict=False)], names=[f"c{i}" for i in range(len(values[0]))]
            )
            _insert_arrow(con, columns, f"INSERT INTO {table} SELECT * FROM incoming")
    con.execute("DELETE FROM dimension_state")
    con.execute("INSERT INTO dimension_state VALUES (?)", [rows.fingerprint])


def bind(con: duckdb.DuckDBPyConnection, store_url: str | None = None) -> None:
    """Record which store an empty warehouse belongs to, with nothing loaded yet (its first sync
    loads from position 0); a warehouse already bound is left as it is."""
    if checkpoint(con)[0] is None:
        con.execute(
            "INSERT INTO sync_state VALUES (?, 0, 0, ?)",
            [redact(store_url or default_url()), datetime.now(timezone.utc).replace(tzinfo=None)],
        )
