"""A child process that reads a SQLite event store's rows in a position range into Arrow IPC files.

Used by ``Warehouse.sync`` for large backlogs. The ADBC SQLite driver reads straight into
Arrow (about 3x faster than sqlite3 + pyarrow); in a process of its own, its private copy of
SQLite cannot disturb the WAL locks of the copy the parent may have open; and it reads on the
other core while the parent loads DuckDB.

    python -m inquitree.warehouse.reader PATH AFTER LAST BATCH_ROWS SPOOL_DIR

The events with ``AFTER < global_position <= LAST`` are split into ranges of ``2 * BATCH_ROWS``
positions, which ``READERS`` threads, each with its own connection, read side by side: a
million events took 0.80 s with two against 1.39 s with one, here. Each chunk is written to an
Arrow IPC file in the spool directory as it is read, and the paths are printed on stdout one per
line in position order: the parent memory-maps each file, deletes it, and acknowledges it with
one byte on stdin. At most ``WINDOW`` chunks are announced ahead of the acknowledgements and a
thread starts a range at most ``AHEAD`` ranges past the one being announced, so the spool holds
a bounded number of events however long the backlog; the child stops when the parent's end of
stdin closes (the parent is done or died). The spool directory is in shared memory where there
is one (``/dev/shm``): the parent then reads the rows without copying them, where a pipe cost it
about 0.3 CPU-seconds per million events. The first chunk is an eighth of ``BATCH_ROWS`` so that
the parent starts loading early.

The driver is used through ``adbc_driver_manager``'s low-level API: its DB-API module imports
polars and pyarrow.dataset, which took 0.3 s of the child's start-up here.
"""

from __future__ import annotations

import os
import sys
import threading
from functools import partial

from inquitree.events import notifications_sql

WINDOW = 3  # chunks announced and not yet acknowledged
READERS = 2  # threads reading ranges side by side
AHEAD = 1  # ranges a thread may start past the one being announced
_SQL = notifications_sql("?", upto="?")


class _Ranges:
    """The ranges, the chunk files read of each so far, and the hand-over between threads."""

    def __init__(self, bounds: list[tuple[int, int]]):
        self.bounds = bounds
        self.files: list[list[str]] = [[] for _ in bounds]
        self.finished = [False] * len(bounds)
        self.next_range = 0  # the next range a reader thread takes
        self.announcing = 0  # the range whose chunks are being announced
        self.error: BaseException | None = None
        self.stopped = False
        self.cond = threading.Condition()


def _chunk_or_end(ranges: _Ranges, i: int, k: int) -> bool:
    """Whether range ``i`` has its chunk ``k`` (or has ended), or a reader failed."""
    return bool(ranges.error or len(ranges.files[i]) > k or ranges.finished[i])


def _may_read(ranges: _Ranges, i: int) -> bool:
    """Whether range ``i`` is near enough to the one being announced to be read now."""
    return bool(ranges.stopped or i <= ranges.announcing + AHEAD)


def main() -> None:
    path, after, last, batch_rows, spool = (
        sys.argv[1],
        int(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
        sys.argv[5],
    )
    span = 2 * batch_rows
    ranges = _Ranges([(lo, min(lo + span, last)) for lo in range(after, last, span)])
    threads = [
        threading.Thread(target=_read_ranges, args=(path, batch_rows, spool, ranges), daemon=True)
        for _ in range(min(READERS, len(ranges.bounds)))
    ]
    for t in threads:
        t.start()
    announced = 0
    try:
        for i in range(len(ranges.bounds)):
            k = 0
            while True:
                with ranges.cond:
                    ranges.cond.wait_for(partial(_chunk_or_end, ranges, i, k))
                    if ranges.error:
                        raise ranges.error
                    if len(ranges.files[i]) <= k:
                        break  # range i is done and every chunk of it announced
                    chunk = ranges.files[i][k]
                if announced >= WINDOW and not sys.stdin.buffer.read(1):  # wait for an acknowledgement
                    return  # the parent has gone
                sys.stdout.write(chunk + "\n")
                sys.stdout.flush()
                announced += 1
                k += 1
            with ranges.cond:
                ranges.announcing = i + 1
                ranges.cond.notify_all()
    finally:
        with ranges.cond:
            ranges.stopped = True  # a thread waiting for its turn, or between chunks, stops
            ranges.cond.notify_all()
        for t in threads:  # before the interpreter exits: a reader thread still inside the driver
            t.join()  # at shutdown ended the process in std::terminate (seen once in 4 test runs)


def _read_ranges(path: str, batch_rows: int, spool: str, ranges: _Ranges) -> None:
    """A reader thread: take the next range, read it chunk by chunk into spool files, repeat."""
    import adbc_driver_manager as adbc
    import adbc_driver_sqlite
    import pyarrow as pa

    chunk_rows = max(1, batch_rows // 8)
    db = adbc_driver_sqlite.connect(f"file:{path}?mode=ro")
    conn = adbc.AdbcConnection(db)
    try:
        # Two connections opening a WAL file at once can find it busy (one rebuilds the index):
        # wait for the lock as the store itself does, instead of failing at once.
        busy = adbc.AdbcStatement(conn)
        busy.set_sql_query("PRAGMA busy_timeout = 30000")
        handle, _ = busy.execute_query()
        pa.RecordBatchReader._import_from_c(handle.address).read_all()
        busy.close()
        while True:
            with ranges.cond:
                i = ranges.next_range
                if i >= len(ranges.bounds):
                    return
                ranges.next_range += 1
                ranges.cond.wait_for(partial(_may_read, ranges, i))
                if ranges.stopped:
                    return
            stmt = adbc.AdbcStatement(conn)
            try:
                stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(chunk_rows)})
                stmt.set_sql_query(_SQL)
                lo, hi = ranges.bounds[i]
                stmt.bind(pa.record_batch([pa.array([lo], pa.int64()), pa.array([hi], pa.int64())], names=["lo", "hi"]))
                handle, _ = stmt.execute_query()
                with pa.RecordBatchReader._import_from_c(handle.address) as reader:
                    pending, rows, target, n = [], 0, chunk_rows if i == 0 else batch_rows, 0
                    for batch in reader:
                        if ranges.stopped:
                            return
                        pending.append(batch)
                        rows += batch.num_rows
                        if rows >= target:
                            _write(spool, i, n, reader.schema, pending, ranges)
                            pending, rows, target, n = [], 0, batch_rows, n + 1
                    if pending:
                        _write(spool, i, n, reader.schema, pending, ranges)
            finally:
                stmt.close()
            with ranges.cond:
                ranges.finished[i] = True
                ranges.cond.notify_all()
    except BaseException as exc:  # handed to the announcing thread
        with ranges.cond:
            ranges.error = ranges.error or exc
            ranges.cond.notify_all()
    finally:
        conn.close()
        db.close()


def _write(spool: str, i: int, n: int, schema, batches: list, ranges: _Ranges) -> None:
    """One IPC file, complete before it is listed for announcing."""
    import pyarrow as pa

    path = os.path.join(spool, f"{i:06d}-{n:06d}.arrow")
    with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, schema) as w:
        for b in batches:
            w.write_batch(b)
    with ranges.cond:
        ranges.files[i].append(path)
        ranges.cond.notify_all()


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # one line for the parent's error message
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.exit(1)
