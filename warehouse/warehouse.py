"""The warehouse: a DuckDB file that is a projection of the event store, and the analyses over it.

Opening it makes or checks its tables and views (``schema.py``, ``views.sql``) and registers the
interval functions the queries call (``intervals.py``); a read-only warehouse runs any SQL a user
writes in a sandbox (it reads the warehouse and nothing else). Filling it is ``sync.py``'s job
(:meth:`Warehouse.sync`); every analysis is a SQL file in ``queries/`` that anyone can read.
Eight of the eleven call the interval functions registered here (``boot_mean``, ``boot_ratio``,
``boot_change``, ``sign_flip_p``), and ``compare`` reads its two agents with ``getvariable``: with
the DuckDB command-line client alone, ``costs``, ``episode_summary`` and ``judge_agreement`` run
as they are, on the warehouse file opened read-only; the others run through ``inquitree query``
or :meth:`Warehouse.query`. The Python API returns Polars DataFrames.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import duckdb

from inquitree import __version__
from inquitree.boundary.files import output_folder, write_file
from inquitree.boundary.text import shown, warn
from inquitree.warehouse.errors import WarehouseError
from inquitree.warehouse.instrument import register as register_instrument
from inquitree.warehouse.intervals import Settings
from inquitree.warehouse.intervals import register as register_intervals
from inquitree.warehouse.schema import (
    FACT_MACROS,
    MEMORY_ENV,
    SCHEMA_HASH,
    TABLES_HASH,
    VIEWS_HASH,
    checkpoint,
    default_warehouse_path,
    memory_bytes,
    refresh_facts,
    table_statements,
    views_sql,
)

if TYPE_CHECKING:
    import polars as pl  # imported by the queries that return frames (a sync needs none)

    # the sync (SQLAlchemy, the store's readers) is imported where a sync is made
    from inquitree.warehouse.sync import SyncReport

QUERIES_DIR = Path(__file__).resolve().parent.parent / "queries"
# The columns of queries/compare.sql that list each row's pairs (ids, papers, differences): the
# terminal and the viewer show them under the table, not in it.
PAIR_COLUMNS = ("pairs", "pair_trees", "pair_differences")
# A query's variables that a caller may leave out: compare lists its pairs unless told not to (the
# viewer's table and a terminal table without --pairs drop them, and their memory with them).
QUERY_DEFAULTS: dict[str, Any] = {"compare_pairs": True}


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
        wh.close(publish=not made)
        if made:
            Path(path + ".lock").unlink(missing_ok=True)
            shutil.rmtree(path + ".tmp", ignore_errors=True)
        raise
    wh.close()


WAIT_ENV = "INQUITREE_WAREHOUSE_WAIT"
DEFAULT_WAIT = 600.0  # seconds a writer waits for another to finish


class _WriterLock:
    """One writer per warehouse at a time, across processes: an exclusive ``flock`` on
    ``PATH.lock``, held from a writer's open to its close (released by the system if the process
    dies). A second writer waits for it, saying so once, up to ``wait`` seconds, then refuses."""

    def __init__(self, path: str, wait: float | None):
        wait = float(os.environ.get(WAIT_ENV) or DEFAULT_WAIT) if wait is None else wait
        self.file = open(path + ".lock", "a+")  # noqa: SIM115 - held open for as long as the lock
        try:
            import fcntl
        except ImportError:  # not POSIX: one writer at a time is then the user's to keep
            return
        deadline, said = time.monotonic() + wait, False
        while True:
            try:
                fcntl.flock(self.file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self.file.close()
                    raise WarehouseError(
                        f"another process is writing the warehouse {path} (a sync) and did not finish within "
                        f"{wait:g} s: try again when it is done, or wait longer with ${WAIT_ENV}=SECONDS"
                    ) from None
                if not said:
                    warn(f"inquitree: waiting for another process's sync of {path} to finish")
                    said = True
                time.sleep(0.1)

    def release(self) -> None:
        self.file.close()  # closing the file releases its lock


# DuckDB's memory limit; a sync's staging and commit windows follow from it (``sync.sync_windows``).
# The peak RSS each setting gives is measured by bench/warehouse_memory.py (docs/performance.md).
DEFAULT_MEMORY = "320MB"
# A read-only connection's (queries, the report, the viewer): the leaderboard and fig3a over one
# campaign of 5M events need more than 320 MB of DuckDB's memory and failed there (bench/scale.py);
# the memory a query takes still grows with what it reads.
READ_MEMORY = "640MB"


# Rows per row group of the warehouse's tables (DuckDB's default: 122,880). A sync's inserts
# then fill whole row groups, which DuckDB writes out during the insert rather than at commit,
# and a full sync is faster from either store (measured alternated against the default in
# bench/results/warehouse_*.json).
ROW_GROUP_SIZE = 16_384


class Warehouse:
    """One warehouse file: open, fill (:meth:`sync`, ``sync.py``'s work on this warehouse), query."""

    def __init__(
        self,
        path: str | None = None,
        read_only: bool = False,
        settings: Settings | None = None,
        memory: str | None = None,
        wait: float | None = None,
        fresh: bool = False,
    ):
        """``memory`` (default ``$INQUITREE_WAREHOUSE_MEMORY``, else DEFAULT_MEMORY for a writer and
        READ_MEMORY for a reader) bounds what DuckDB keeps
        in memory, spilling the rest to ``PATH.tmp/``, and sets how many events a sync stages
        and commits at a time, so that a sync's peak memory follows the setting, not the log.

        A read-only warehouse reads the file as it was last published, whoever writes meanwhile. A
        writer (one per warehouse at a time, across processes: it waits up to ``wait`` seconds,
        default ``$INQUITREE_WAREHOUSE_WAIT`` or 600, for another to finish, then refuses) works on
        a copy, ``PATH.next`` (``fresh``: an empty one), and publishes it over ``PATH`` when it
        closes: readers never hold a writer up and never see a sync half done."""
        self.path = path or default_warehouse_path()
        self.memory_given = bool(memory or os.environ.get(MEMORY_ENV))
        self.memory = memory_bytes(
            memory or os.environ.get(MEMORY_ENV) or (READ_MEMORY if read_only else DEFAULT_MEMORY)
        )
        self.read_only = read_only
        self._lock: _WriterLock | None = None
        self._fresh = fresh
        self.file = self.path
        if not read_only:
            self._lock = _WriterLock(self.path, wait)
            self.file = self.path + ".next"
            try:
                for leftover in (self.file, self.file + ".wal"):  # a writer that died before it published
                    Path(leftover).unlink(missing_ok=True)
                if not fresh and Path(self.path).exists():
                    shutil.copyfile(self.path, self.file)
            except OSError as exc:
                self._lock.release()
                raise WarehouseError(f"cannot prepare the warehouse {self.path} for writing: {exc}") from exc
        quoted = self.file.replace("'", "''")  # ATTACH takes no parameter for its path
        options = "READ_ONLY" if read_only else f"ROW_GROUP_SIZE {ROW_GROUP_SIZE}"
        self.con = duckdb.connect()
        try:
            self.con.execute(f"ATTACH '{quoted}' AS warehouse ({options})")
            self.con.execute("USE warehouse")
        except duckdb.Error as exc:
            self._give_up()
            raise WarehouseError(f"cannot open the warehouse {self.path}: {exc}") from exc
        self.con.execute(f"SET memory_limit = '{self.memory // 2**20}MiB'")
        self.con.execute("SET temp_directory = ?", [self.path + ".tmp"])
        try:
            self.settings = settings or Settings.from_env()
        except ValueError as exc:
            self._give_up()
            raise WarehouseError(str(exc)) from None
        register_intervals(self.con, self.settings)  # the interval functions queries/*.sql call
        register_instrument(self.con)  # what is known of how the matcher and the judge read
        if read_only:
            # A read-only warehouse runs SQL that users (and the viewer's visitors) write: it reads
            # the warehouse and nothing else. No file, no ATTACH, no COPY TO or EXPORT, no extension;
            # and the settings are locked, so a statement cannot turn this back on.
            self.con.execute("SET enable_external_access = false")
            self.con.execute("SET lock_configuration = true")
        try:  # another version's tables are refused, to a reader as to a writer
            if read_only:
                self._read_through_this_codes_views()
            else:
                self._take_this_codes_schema()
                # Nothing from the file's catalogue runs with file access: the views and macros are
                # this code's now, and a writer needs no file but its own (every file it writes,
                # Parquet included, is written from Python). Once off, SQL cannot turn it back on.
                self.con.execute("SET enable_external_access = false")
        except BaseException:
            self._give_up()
            raise

    def _give_up(self) -> None:
        """Close the connection and let another writer in: an open that failed part way."""
        self.con.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _take_this_codes_schema(self) -> None:
        """A writer's warehouse: a new one gets this code's tables, views and stamp; one with this
        code's tables gets this code's views, whatever its stamp says (views hold no data, and a
        file from someone else may carry views or macros of its own under this code's stamp):
        every view and macro in the file is dropped first."""
        stamp = self._schema_stamp()
        con = self.con
        con.execute("BEGIN TRANSACTION")  # the tables, the views and the stamp, all or nothing
        if stamp is None:
            for statement in table_statements():
                con.execute(statement)
        else:
            for (view,) in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal AND database_name = 'warehouse'"
            ).fetchall():
                con.execute(f'DROP VIEW "{_quoted(view)}"')
            for name, kind in con.execute(
                "SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
                "WHERE NOT internal AND database_name = 'warehouse' AND function_type IN ('macro', 'table_macro')"
            ).fetchall():
                con.execute(f'DROP {"MACRO TABLE" if kind == "table_macro" else "MACRO"} "{_quoted(name)}"')
            con.execute("DELETE FROM warehouse_schema")
        con.execute(views_sql())
        if stamp is not None and stamp.partition(":")[2] != VIEWS_HASH:
            refresh_facts(con, everything=True)  # the facts kept are the old views' (schema.FACTS)
        con.execute("INSERT INTO warehouse_schema VALUES (?)", [SCHEMA_HASH])
        con.execute("COMMIT")

    def _read_through_this_codes_views(self) -> None:
        """On a reader's connection: this code's views, as temporary views of this connection, which
        DuckDB looks up before the file's, whatever the file's stamp says (an upgrade no writer has
        opened since, or a file from someone else whose views claim this code's stamp). Every query
        then means what this code's queries and docs say; where the file's views were other than
        this code's, so may be the facts it keeps (``schema.FACTS``), and they are computed instead."""
        stamp = self._schema_stamp(create=False)
        if stamp is not None:
            self.con.execute(views_sql(temporary=True))
            if stamp.partition(":")[2] != VIEWS_HASH:  # facts kept by other views: computed here instead
                for table, macro in FACT_MACROS.items():
                    self.con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT * FROM {macro}(0, true)")

    def _schema_stamp(self, create: bool = True) -> str | None:
        """The warehouse's schema stamp: None for a new warehouse, else ``TABLES_HASH:VIEWS_HASH``
        (this code's tables, whatever its views). A warehouse built by code with other tables must
        be rebuilt, not mixed. ``create``: make the stamp's table in a new warehouse (a writer)."""
        if create:
            self.con.execute("CREATE TABLE IF NOT EXISTS warehouse_schema (schema_hash VARCHAR)")
        elif not self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'warehouse' AND table_name = 'warehouse_schema'"
        ).fetchall()[0][0]:
            return None
        rows = self.con.execute("SELECT schema_hash FROM warehouse_schema").fetchall()
        if not rows:
            return None
        stamp = rows[0][0]
        if stamp.partition(":")[0] != TABLES_HASH:
            raise WarehouseError(
                f"the warehouse {self.path} was built by another InquiTree version, with other tables (schema "
                f"{stamp[:12]}; inquitree {__version__} has {SCHEMA_HASH[:12]}): run `inquitree warehouse rebuild`"
            )
        return stamp

    def close(self, publish: bool = True) -> None:
        """Close; a writer publishes its work over ``PATH`` (atomically: a reader opening the
        warehouse meanwhile gets the old file or the new one, never a part), unless ``publish``
        is False (a command that failed before it filled anything)."""
        if self._lock is None:
            self.con.close()
            return
        try:
            if publish:
                self.con.execute("CHECKPOINT")
            self.con.close()
            if publish:
                os.replace(self.file, self.path)
            else:
                Path(self.file).unlink(missing_ok=True)
            Path(self.file + ".wal").unlink(missing_ok=True)
        finally:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> "Warehouse":
        return self

    def __exit__(self, *exc) -> None:
        # A sync that failed part way has committed whole batches: publish them (the next sync goes on
        # from there), except for a rebuild, which must not replace a whole warehouse with a part.
        self.close(publish=exc[0] is None or not self._fresh)

    def for_analyses(self) -> None:
        """A writer that goes on to analyses (``report``, after its sync) takes a reader's memory
        (READ_MEMORY) unless one was given: at 320 MB fig3a over one campaign of 5M events failed."""
        wanted = memory_bytes(READ_MEMORY)
        if not self.memory_given and self.memory < wanted:
            self.memory = wanted
            self.con.execute(f"SET memory_limit = '{wanted // 2**20}MiB'")

    # -- filling -------------------------------------------------------------------------------
    def sync(self, store_url: str | None = None, **options: Any) -> SyncReport:
        """Load every event recorded after the checkpoint (:func:`inquitree.warehouse.sync.sync`)."""
        from inquitree.warehouse.sync import sync

        return sync(self, store_url, **options)

    def checkpoint(self) -> tuple[str | None, int]:
        """(the store this warehouse was filled from, the last global position loaded)."""
        return checkpoint(self.con)

    def bind(self, store_url: str | None = None) -> None:
        """Belong to the store at ``store_url`` with nothing loaded yet (a new warehouse)."""
        from inquitree.warehouse.sync import bind

        bind(self.con, store_url)

    # -- analyses --------------------------------------------------------------------------------
    def scope(self, suites: list[str] | tuple[str, ...] = (), one_off: bool = False) -> str:
        """Which episodes this connection's analyses speak about (the ``episodes`` view): the named
        campaigns, or with ``one_off`` the episodes played outside a suite; with neither, every
        campaign's episodes, or the one-off ones when the warehouse holds no campaign. Campaigns and
        one-off episodes are never mixed (DECISIONS #28). Returns one line that says what was left
        out ('' when nothing was)."""
        if suites and one_off:
            raise WarehouseError("name suites or ask for one-off episodes, not both")
        con = self.con
        con.execute("RESET VARIABLE episode_scope")
        rows = con.execute(
            "SELECT episode_suite(episode_id, tree_id) AS suite, count(*) FROM ev_episode_started "
            "GROUP BY ALL ORDER BY 1"
        ).fetchall()
        counts = {name: n for name, n in rows}
        campaigns = sorted(name for name in counts if name)
        loose = counts.get("", 0)
        if suites:
            unknown = [name for name in suites if name not in counts or not name]
            if unknown:
                raise WarehouseError(
                    f"no campaign {', '.join(shown(n) for n in unknown)} in the warehouse; campaigns: "
                    + (", ".join(shown(n) for n in campaigns) or "(none)")
                )
            con.execute("SET VARIABLE episode_scope = 'suites'")
            con.execute("SET VARIABLE scope_suites = ?", [list(dict.fromkeys(suites))])
            left = [n for n in campaigns if n not in suites]
            parts = [f"{len(left)} other campaign(s)"] if left else []
            parts += [f"{loose:,} one-off episode(s)"] if loose else []
            return f"campaign(s) {', '.join(suites)}; left out: {', '.join(parts)}" if parts else ""
        if one_off or not campaigns:
            con.execute("SET VARIABLE episode_scope = 'one-off'")
            if campaigns:
                return f"episodes played outside a suite; left out: campaign(s) {', '.join(campaigns)} (--suite NAME)"
            return ""
        con.execute("SET VARIABLE episode_scope = 'suites'")
        con.execute("SET VARIABLE scope_suites = NULL")
        if loose:
            return f"campaign(s) {', '.join(campaigns)}; left out: {loose:,} one-off episode(s) (--one-off shows them)"
        return ""

    def sql(self, text: str, one_statement: bool = False) -> pl.DataFrame:
        """Run ``text``; with ``one_statement`` (``inquitree sql``), anything but one statement is refused."""
        try:
            if one_statement:
                count = len(duckdb.extract_statements(text))
                if count != 1:
                    raise WarehouseError(f"`inquitree sql` runs one SQL statement; this text holds {count}")
            rel = self.con.sql(text)
            if rel is None:
                import polars as pl

                return pl.DataFrame()
            return rel.pl()  # a relation runs here, when it is read
        except duckdb.Error as exc:
            raise self._failed("SQL error", exc) from exc

    def query(self, name: str, variables: dict[str, Any] | None = None) -> pl.DataFrame:
        """Run ``queries/NAME.sql``, with ``variables`` for the ones it reads by ``getvariable``.
        ``name`` is a query's name (one of :func:`query_names`), never a path."""
        if name not in query_names():
            raise WarehouseError(f"no query {shown(name)}; available: {', '.join(query_names())}")
        path = QUERIES_DIR / f"{name}.sql"
        text = path.read_text()
        needed = sorted(set(re.findall(r"getvariable\('([a-z_]+)'\)", text)))
        variables = {**{k: v for k, v in QUERY_DEFAULTS.items() if k in needed}, **(variables or {})}
        missing = [v for v in needed if v not in variables]
        if missing:
            raise WarehouseError(
                f"{path.name} needs {', '.join(missing)}"
                + (": run `inquitree compare AGENT_A AGENT_B`" if name == "compare" else "")
            )
        try:
            for key in needed:
                self.con.execute(f"SET VARIABLE {key} = ?", [variables[key]])
            return self.con.sql(text).pl()
        except duckdb.Error as exc:
            raise self._failed(path.name, exc) from exc

    def _failed(self, what: str, exc: duckdb.Error) -> WarehouseError:
        """A query's DuckDB error as one message; running out of memory says which setting to raise
        (DuckDB's own advice names SQL settings a command's user cannot set)."""
        if isinstance(exc, duckdb.OutOfMemoryException):
            return WarehouseError(
                f"{what}: the query needs more memory than the warehouse's limit ({self.memory // 10**6} MB, "
                f"${MEMORY_ENV}): set it higher for this command, for example {MEMORY_ENV}=1GB"
            )
        return WarehouseError(f"{what}: {str(exc).strip()}")

    def export_parquet(self, out_dir: str | Path) -> list[Path]:
        """Every table as ``out_dir/TABLE.parquet``, written from Python (``boundary/files.py``: never
        through a link), not by DuckDB's COPY, which would need file access on this connection."""
        import io

        import pyarrow.parquet as pq

        out = output_folder(out_dir, what="--parquet")
        written = []
        tables = [
            r[0]
            for r in self.con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT temporary ORDER BY table_name"
            ).fetchall()
        ]
        for t in tables:
            buffer = io.BytesIO()
            pq.write_table(self.con.sql(f'SELECT * FROM "{_quoted(t)}"').to_arrow_table(), buffer)
            written.append(write_file(out / f"{t}.parquet", buffer.getvalue()))
        return written


def _quoted(name: str) -> str:
    """An identifier from the catalogue inside double quotes."""
    return name.replace('"', '""')


def query_names() -> list[str]:
    return sorted(p.stem for p in QUERIES_DIR.glob("*.sql"))


def rebuild(path: str, store_url: str | None = None, **options: Any) -> SyncReport:
    """Sync a new, empty warehouse from the first event, and publish it over ``path`` (readers of
    the old one go on reading it until they open it again)."""
    with Warehouse(path, fresh=True) as wh:
        return wh.sync(store_url, **options)
