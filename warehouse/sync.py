"""The warehouse: a DuckDB file kept in step with the event store, and the analyses over it.

``sync`` is a checkpointed projection, in stages, one module each: it reads the events
after the stored global position as Arrow (``sources.py``: sqlite3 or psycopg for small
backlogs, ADBC drivers for large ones), reads the dimension rows beside it
(``dimensions.py``), then here stages the events, parses them into ``raw_events`` and the
typed ``ev_*`` tables (``schema.py``), and moves the checkpoint in the same DuckDB
transaction (one per ``COMMIT_ROWS`` events).
Re-running loads only new events; ``rebuild`` starts from an empty file and
gives identical tables.

The Python API returns Polars DataFrames; every analysis is a SQL file in ``queries/`` that
anyone can read. Eight of the eleven call interval functions that InquiTree registers from Python
on its own connections (``boot_mean``, ``boot_ratio``, ``boot_change``, ``sign_flip_p``:
``warehouse/bootstrap.py``), and ``compare`` reads its two agents with ``getvariable``. With the
DuckDB command-line client alone, ``costs``, ``episode_summary`` and ``judge_agreement`` run as
they are, on the warehouse file opened read-only; the others need those functions, so run them
through ``inquitree query`` or ``Warehouse.query``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import re
import shutil
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import polars as pl
import pyarrow as pa

from inquitree.events.names import EPISODE_ID_PATTERN, shown
from inquitree.events.store import default_url, redact
from inquitree.warehouse.bootstrap import Bootstrap
from inquitree.warehouse.bootstrap import register as register_bootstrap
from inquitree.warehouse.dimensions import DimensionRows, dimension_rows
from inquitree.warehouse.errors import WarehouseError
from inquitree.warehouse.schema import (
    BASE,
    DIMENSIONS,
    RAW_COLUMNS,
    TYPED,
    column_list,
    create_typed,
    insert_typed,
)
from inquitree.warehouse.sources import LARGE_BACKLOG, open_source, upcast_old

WAREHOUSE_ENV = "INQUITREE_WAREHOUSE"
QUERIES_DIR = Path(__file__).resolve().parent.parent / "queries"
VIEWS_PATH = Path(__file__).resolve().parent / "views.sql"
SCHEMA_HASH = hashlib.sha256(
    (json.dumps(TYPED, sort_keys=True) + BASE + DIMENSIONS + VIEWS_PATH.read_text()).encode()
).hexdigest()


def default_warehouse_path() -> str:
    return os.environ.get(WAREHOUSE_ENV) or "inquitree.duckdb"


@contextlib.contextmanager
def kept_only_if_used(path: str | None = None, **options) -> Iterator["Warehouse"]:
    """A :class:`Warehouse` for a command that fills it (``warehouse sync``, ``report``): a warehouse
    file this made is removed again when the command fails before its first sync (no store, a bad
    registry), so that a mistake leaves nothing behind that later reads as an empty warehouse."""
    path = path or default_warehouse_path()
    existed = Path(path).exists()
    wh = Warehouse(path, **options)
    try:
        yield wh
    except BaseException:
        made = not existed and not wh.con.execute("SELECT count(*) FROM sync_state").fetchall()[0][0]
        wh.close()
        if made:
            for leftover in (Path(path), Path(path + ".wal")):
                leftover.unlink(missing_ok=True)
            shutil.rmtree(path + ".tmp", ignore_errors=True)
        raise
    wh.close()


@dataclass
class SyncReport:
    events: int
    last_position: int
    seconds: float


FLUSH_ROWS = 1_000_000  # staged events parsed into the typed tables at a time (~0.5 GB staged)
COMMIT_ROWS = 2_000_000  # events per warehouse commit in a long sync (a few seconds of work)
MEMORY_ENV = "INQUITREE_WAREHOUSE_MEMORY"
# DuckDB's memory limit; a sync's staging and commit windows follow from it (sync_windows). A
# full sync's peak RSS at 1M and 4M events (bench/warehouse_memory.py,
# bench/results/warehouse_memory.json): 256MB -> 0.70 / 0.71 GB, 320MB -> 0.80 / 0.81 GB,
# 384MB -> 0.90 / 0.92 GB, 512MB -> 1.10 / 1.16 GB, where the fixed 1M/2M windows with no limit
# grew from 1.10 to 2.00 GB. The ADBC reader child (~0.2 GB) is a process of its own.
DEFAULT_MEMORY = "320MB"
BYTES_PER_STAGED_EVENT = 1_000  # staged payload and its parse, per event, with room to spare


def sync_windows(memory: int) -> tuple[int, int]:
    """(events staged before they are parsed, events per commit) for a memory setting in bytes:
    staged events and their parse take about BYTES_PER_STAGED_EVENT each, and a commit holds two
    flushes; never more than FLUSH_ROWS and COMMIT_ROWS, never fewer than 10,000 staged."""
    flush = max(10_000, min(FLUSH_ROWS, memory // BYTES_PER_STAGED_EVENT))
    return flush, min(COMMIT_ROWS, 2 * flush)


def memory_bytes(text: str) -> int:
    """'512MB', '2GB', '1.5GiB' -> bytes; a clear error for anything else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(KB|MB|GB|KiB|MiB|GiB)\s*", text, flags=re.I)
    if not m:
        raise WarehouseError(f"${MEMORY_ENV}={text!r}: expected a size such as 512MB or 2GB")
    unit = m.group(2).lower()
    scale = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}[unit]
    value = int(float(m.group(1)) * scale)
    if value < 64 * 10**6:
        raise WarehouseError(f"${MEMORY_ENV}={text!r}: at least 64MB")
    return value


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


# Rows per row group of the warehouse's tables (DuckDB's default: 122,880). A sync's inserts
# then fill whole row groups, which DuckDB writes out during the insert rather than at commit,
# and a full sync is faster from either store (measured alternated against the default in
# bench/results/warehouse_*.json).
ROW_GROUP_SIZE = 16_384


class Warehouse:
    def __init__(
        self,
        path: str | None = None,
        read_only: bool = False,
        bootstrap: Bootstrap | None = None,
        memory: str | None = None,
    ):
        """``memory`` (default ``$INQUITREE_WAREHOUSE_MEMORY`` or DEFAULT_MEMORY) bounds what DuckDB keeps
        in memory, spilling the rest to ``PATH.tmp/``, and sets how many events a sync stages
        and commits at a time, so that a sync's peak memory follows the setting, not the log."""
        self.path = path or default_warehouse_path()
        self.memory = memory_bytes(memory or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY)
        quoted = self.path.replace("'", "''")  # ATTACH takes no parameter for its path
        options = "READ_ONLY" if read_only else f"ROW_GROUP_SIZE {ROW_GROUP_SIZE}"
        self.con = duckdb.connect()
        try:
            self.con.execute(f"ATTACH '{quoted}' AS warehouse ({options})")
            self.con.execute("USE warehouse")
        except duckdb.Error as exc:
            self.con.close()
            raise WarehouseError(f"cannot open the warehouse {self.path}: {exc}") from exc
        self.con.execute(f"SET memory_limit = '{self.memory // 2**20}MiB'")
        self.con.execute("SET temp_directory = ?", [self.path + ".tmp"])
        try:
            self.bootstrap = bootstrap or Bootstrap.from_env()
        except ValueError as exc:
            self.con.close()
            raise WarehouseError(str(exc)) from None
        register_bootstrap(self.con, self.bootstrap)  # the interval functions queries/*.sql call
        if read_only:
            # A read-only warehouse runs SQL that users (and the viewer's visitors) write: it reads
            # the warehouse and nothing else. No file, no ATTACH, no COPY TO or EXPORT, no extension;
            # and the settings are locked, so a statement cannot turn this back on.
            self.con.execute("SET enable_external_access = false")
            self.con.execute("SET lock_configuration = true")
        if not read_only and not self._schema_is_current():
            con = self.con
            con.execute("BEGIN TRANSACTION")  # the tables, the views and the stamp, all or nothing
            con.execute(BASE)
            con.execute(DIMENSIONS)
            for table, cols in TYPED.values():
                con.execute(create_typed(table, cols))
            con.execute(VIEWS_PATH.read_text())
            con.execute("INSERT INTO warehouse_schema VALUES (?)", [SCHEMA_HASH])
            con.execute("COMMIT")

    def _schema_is_current(self) -> bool:
        """True for a warehouse stamped with this code's schema (its tables and views exist, so the
        DDL is not run again on every open); False for a new one. A warehouse built by code with
        other typed tables or views must be rebuilt, not mixed."""
        self.con.execute("CREATE TABLE IF NOT EXISTS warehouse_schema (schema_hash VARCHAR)")
        rows = self.con.execute("SELECT schema_hash FROM warehouse_schema").fetchall()
        if rows and rows[0][0] != SCHEMA_HASH:
            raise WarehouseError(
                f"the warehouse {self.path} was built by another InquiTree version (schema "
                f"{rows[0][0][:12]}, this one {SCHEMA_HASH[:12]}): run `inquitree warehouse rebuild`"
            )
        return bool(rows)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Warehouse":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sync ------------------------------------------------------------------------------------
    def checkpoint(self) -> tuple[str | None, int]:
        rows = self.con.execute("SELECT source, last_position FROM sync_state").fetchall()
        return (rows[0][0], rows[0][1]) if rows else (None, 0)

    def sync(  # noqa: C901 - one transaction stages, loads and checkpoints; its error paths must roll back together
        self,
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
        default_flush, default_commit = sync_windows(self.memory)
        flush_rows, commit_rows = flush_rows or default_flush, commit_rows or default_commit
        recorded_source, position = self.checkpoint()
        since = position
        if recorded_source is not None and recorded_source != source_id:
            raise WarehouseError(
                f"the warehouse {self.path} holds events of {recorded_source}, not {source_id}: "
                "use another --warehouse, or `inquitree warehouse rebuild`"
            )
        t0 = time.perf_counter()
        threads = int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0])  # see _stage
        loaded = 0
        # A reader thread fetches the next batch while this one loads (DuckDB and the drivers
        # release the GIL while they work); the queue holds at most two batches in memory.
        batches: queue.Queue = queue.Queue(maxsize=2)
        stop = threading.Event()

        def read() -> None:
            try:
                src = open_source(url, position, batch_size)
            except Exception as exc:  # handed to the loading thread
                batches.put(exc)
                return
            try:
                for batch in src.batches(position, batch_size):
                    if stop.is_set():
                        break
                    batches.put(batch)
            except Exception as exc:
                batches.put(exc)
            finally:
                try:
                    src.close()
                finally:
                    batches.put(None)  # always: the loading thread waits for it

        reader = threading.Thread(target=read, name="warehouse-reader", daemon=True)
        reader.start()
        # The dimension rows are read (every tree file validated) in a thread beside the
        # loading, and written in the first commit: a bad price table still stops the sync
        # before it commits any event, and the first batch is staged without waiting for them.
        dims_pool = ThreadPoolExecutor(1, thread_name_prefix="warehouse-dimensions")
        dims = dims_pool.submit(dimension_rows, self._dimension_fingerprint(), trees_dirs, prices, registry)
        con = self.con
        pending = staged = 0  # events loaded since the last commit; of those, not yet parsed
        try:
            while (item := batches.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                if item.num_rows == 0:
                    continue
                if pending == 0:
                    con.execute("BEGIN TRANSACTION")
                    # raw_events' columns plus the payload, which _flush parses and leaves behind.
                    # Spelled out, not `AS SELECT ... LIMIT 0`: in DuckDB 2.0.0 a table made that
                    # way inside a transaction loses a single insert of ~120k rows or more to
                    # every later scan (tests/test_warehouse.py has the case).
                    con.execute(f"CREATE OR REPLACE TEMP TABLE staged ({column_list(RAW_COLUMNS)}, payload VARCHAR)")
                self._stage(upcast_old(item), threads)
                position = item.column("global_position")[-1].as_py()
                loaded += item.num_rows
                pending += item.num_rows
                staged += item.num_rows
                if staged >= flush_rows or pending >= commit_rows:
                    self._flush()
                    staged = 0
                if pending >= commit_rows:
                    self._commit(source_id, position, dims)
                    pending = 0
                if progress:
                    progress(loaded, position)
            if pending:
                if staged:
                    self._flush()
                self._commit(source_id, position, dims)
                pending = 0
            elif dims.result() is not None:  # nothing left to load: the dimensions, if not written yet
                con.execute("BEGIN TRANSACTION")  # (their error, if any, came before it opened)
                self._commit(None, 0, dims)
        except BaseException:
            # Whether or not an event was loaded: a failure staging the first batch, or writing
            # the dimensions alone, leaves a transaction open too (aborted, refusing every
            # statement until it is rolled back).
            with contextlib.suppress(duckdb.Error):  # none open: a failed COMMIT ended it, or none was begun
                con.execute("ROLLBACK")
            raise
        finally:
            stop.set()
            while reader.is_alive():  # let the reader finish its current batch and exit
                with contextlib.suppress(queue.Empty):
                    batches.get(timeout=0.1)
            reader.join()
            dims_pool.shutdown(wait=True)
            con.execute(f"SET threads = {threads}")  # if a failed _stage left one
            con.execute("DROP TABLE IF EXISTS staged")
        if loaded >= LARGE_BACKLOG:
            # Fold the write-ahead log into the file now, inside the time a sync reports. With
            # 16k-row row groups a large sync leaves a write-ahead log below DuckDB's automatic
            # threshold, which closing the warehouse would otherwise checkpoint, outside that time.
            con.execute("CHECKPOINT")
        if loaded:
            self._warn_foreign_ids(since)
        if recorded_source is None and loaded == 0:  # bind an empty warehouse to its store too
            con.execute(
                "INSERT INTO sync_state VALUES (?, 0, 0, ?)",
                [source_id, datetime.now(timezone.utc).replace(tzinfo=None)],
            )
        return SyncReport(loaded, position, time.perf_counter() - t0)

    def _warn_foreign_ids(self, after: int) -> None:
        """Say which episodes just loaded have ids outside the grammar (``events/names.py``): only a
        writer other than InquiTree puts them there (a PostgreSQL writer role may INSERT). They are
        kept, as the log is, and shown escaped; no file is ever named after them (``report``)."""
        rows = self.con.execute(
            "SELECT DISTINCT stream_id[9:] FROM raw_events WHERE global_position > ? "
            "AND starts_with(stream_id, 'episode/') AND NOT regexp_full_match(stream_id[9:], ?) LIMIT 6",
            [after, EPISODE_ID_PATTERN],
        ).fetchall()
        if rows:
            names = ", ".join(shown(r[0]) for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
            print(
                f"inquitree: warning: the store holds episode ids outside InquiTree's grammar (written by "
                f"something other than InquiTree): {names}",
                file=sys.stderr,
            )

    def _stage(self, batch: pa.Table, threads: int) -> None:
        """Copy one Arrow batch into the ``staged`` table (the caller's transaction), then give
        DuckDB back its ``threads``.

        With one DuckDB thread: on a 2-core machine the copy takes about half the time it takes
        with two, the SQLite reader being busy beside it, and the whole sync is no slower and
        uses less CPU (``bench/warehouse.py``, alternated). The parsing in ``_flush`` keeps every
        thread: with one, the sync was clearly slower."""
        self.con.execute("SET threads = 1")
        _insert_arrow(self.con, batch, f"INSERT INTO staged {_STAGE_SELECT}")
        # After a failed insert sync() sets the threads back, once it has rolled back.
        self.con.execute(f"SET threads = {threads}")

    def _flush(self) -> None:
        """Parse the staged events into ``raw_events`` and the typed tables, and empty ``staged``."""
        con = self.con
        con.execute("INSERT INTO raw_events SELECT * EXCLUDE (payload) FROM staged")
        present = {t for (t,) in con.execute("SELECT DISTINCT event_type FROM staged").fetchall()}
        for event_type, (table, cols) in TYPED.items():
            if event_type in present:  # an INSERT costs even with nothing to insert
                con.execute(insert_typed(event_type, table, cols, "staged"))
        con.execute("DELETE FROM staged")

    def _commit(self, source_id: str | None, position: int, dims: Future) -> None:
        """Move the checkpoint to ``position`` (unless ``source_id`` is None), write the dimension
        rows if they have not been yet, and commit the open transaction."""
        con = self.con
        rows = dims.result()
        if rows is not None and rows.fingerprint != self._dimension_fingerprint():
            self._write_dimensions(rows)
        if source_id is not None:
            con.execute("DELETE FROM sync_state")
            con.execute(
                "INSERT INTO sync_state VALUES (?, ?, (SELECT count(*) FROM raw_events), ?)",
                [source_id, position, datetime.now(timezone.utc).replace(tzinfo=None)],
            )
        con.execute("COMMIT")

    def _dimension_fingerprint(self) -> str | None:
        rows = self.con.execute("SELECT fingerprint FROM dimension_state").fetchall()
        return rows[0][0] if rows else None

    def _write_dimensions(self, rows: "DimensionRows") -> None:
        """Replace the dimension tables (in the caller's transaction)."""
        con = self.con
        for table, values in rows.tables.items():
            con.execute(f"DELETE FROM {table}")
            if values:  # as one Arrow table: executemany took ~70 ms for these few hundred rows
                columns = pa.table(
                    [pa.array(c) for c in zip(*values, strict=False)], names=[f"c{i}" for i in range(len(values[0]))]
                )
                _insert_arrow(con, columns, f"INSERT INTO {table} SELECT * FROM incoming")
        con.execute("DELETE FROM dimension_state")
        con.execute("INSERT INTO dimension_state VALUES (?)", [rows.fingerprint])

    # -- analyses --------------------------------------------------------------------------------
    def sql(self, text: str, one_statement: bool = False) -> pl.DataFrame:
        """Run ``text``; with ``one_statement`` (``inquitree sql``), anything but one statement is refused."""
        try:
            if one_statement:
                count = len(duckdb.extract_statements(text))
                if count != 1:
                    raise WarehouseError(f"`inquitree sql` runs one SQL statement; this text holds {count}")
            rel = self.con.sql(text)
            return rel.pl() if rel is not None else pl.DataFrame()  # a relation runs here, when it is read
        except duckdb.Error as exc:
            raise WarehouseError(f"SQL error: {str(exc).strip()}") from exc

    def query(self, name: str, variables: dict[str, str] | None = None) -> pl.DataFrame:
        """Run ``queries/NAME.sql``, with ``variables`` for the ones it reads by ``getvariable``.
        ``name`` is a query's name (one of :func:`query_names`), never a path."""
        if name not in query_names():
            raise WarehouseError(f"no query {shown(name)}; available: {', '.join(query_names())}")
        path = QUERIES_DIR / f"{name}.sql"
        text = path.read_text()
        needed = sorted(set(re.findall(r"getvariable\('([a-z_]+)'\)", text)))
        missing = [v for v in needed if v not in (variables or {})]
        if missing:
            raise WarehouseError(
                f"{path.name} needs {', '.join(missing)}"
                + (": run `inquitree compare AGENT_A AGENT_B`" if name == "compare" else "")
            )
        try:
            for key in needed:
                self.con.execute(f"SET VARIABLE {key} = ?", [(variables or {})[key]])
            return self.con.sql(text).pl()
        except duckdb.Error as exc:
            raise WarehouseError(f"{path.name}: {exc}") from exc

    def export_parquet(self, out_dir: str | Path) -> list[Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        tables = [
            r[0]
            for r in self.con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT temporary ORDER BY table_name"
            ).fetchall()
        ]
        for t in tables:
            path = out / f"{t}.parquet"
            quoted = str(path).replace("'", "''")  # COPY takes no parameter for its target
            self.con.execute(f"COPY \"{t}\" TO '{quoted}' (FORMAT parquet)")
            written.append(path)
        return written


def query_names() -> list[str]:
    return sorted(p.stem for p in QUERIES_DIR.glob("*.sql"))


def rebuild(path: str, store_url: str | None = None, **kw) -> SyncReport:
    """Delete the warehouse file and sync from the first event."""
    for suffix in ("", ".wal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    with Warehouse(path) as wh:
        return wh.sync(store_url, **kw)
