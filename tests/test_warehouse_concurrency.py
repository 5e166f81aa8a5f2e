"""One lab, many processes: readers of the warehouse (the viewer, `query`, `sql`, `report`) never hold
up a sync, a sync never shows a reader half its work, and two syncs at once wait or refuse clearly
(warehouse/warehouse.py: a writer works on PATH.next and publishes it whole over PATH)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore
from inquitree.warehouse.errors import WarehouseError
from inquitree.warehouse.warehouse import Warehouse

from enginekit import OracleAgent, RandomAgent, play


def record(url: str, n: int, start: int = 0) -> None:
    tree = resolve_tree("synthetic-chain-7")
    with EventStore(url) as store:
        for i in range(start, start + n):
            play(tree, RandomAgent(tree, i) if i % 2 else OracleAgent(tree), store=store, seed=i)


def episodes(wh: Warehouse) -> int:
    return int(wh.con.execute("SELECT count(*) FROM episodes").fetchall()[0][0])


def test_a_reader_keeps_its_snapshot_while_a_sync_writes_the_next(tmp_path):
    db, path = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    record(db, 2)
    with Warehouse(path) as wh:
        wh.sync(db)
    record(db, 3, start=2)
    reader = Warehouse(path, read_only=True)  # held open, as the viewer holds it
    try:
        with Warehouse(path) as writer:  # used to fail: the reader held the file's lock
            writer.sync(db)
            assert episodes(writer) == 5 and episodes(reader) == 2  # nothing published yet
        assert episodes(reader) == 2  # its snapshot, whole, until it opens the warehouse again
    finally:
        reader.close()
    with Warehouse(path, read_only=True) as again:
        assert episodes(again) == 5
    assert not (tmp_path / "w.duckdb.next").exists()


def test_two_writers_wait_or_refuse_clearly(tmp_path):
    db, path = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    record(db, 1)
    first = Warehouse(path)
    try:
        with pytest.raises(
            WarehouseError, match=r"another process is writing the warehouse .*INQUITREE_WAREHOUSE_WAIT"
        ):
            Warehouse(path, wait=0.2)
        threading.Timer(0.5, first.close).start()  # the first writer finishes while the second waits
        t0 = time.perf_counter()
        with Warehouse(path, wait=30) as second:
            assert time.perf_counter() - t0 >= 0.4
            second.sync(db)
    finally:
        if first._lock is not None:
            first.close()
    with Warehouse(path, read_only=True) as wh:
        assert episodes(wh) == 1


def test_a_failed_rebuild_leaves_the_published_warehouse_alone(tmp_path):
    from inquitree.warehouse.warehouse import rebuild

    db, path = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    record(db, 2)
    rebuild(path, db)
    with pytest.raises(WarehouseError):
        rebuild(path, f"sqlite:///{tmp_path / 'other.sqlite'}")  # no such store: fails before anything
    with Warehouse(path, read_only=True) as wh:
        assert episodes(wh) == 2


def test_sync_query_and_report_run_beside_an_open_viewer(tmp_path):
    """The README's `sync && query && report` beside `inquitree view`, each in its own process: the
    viewer used to lock the warehouse against all three (a raw DuckDB lock error)."""
    pytest.importorskip("starlette")
    from tests_support import viewer_process

    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    record(db, 2)
    with viewer_process(db, wh) as base:
        record(db, 2, start=2)
        for args in (
            ["warehouse", "sync", "--db", db, "--warehouse", wh],
            ["query", "table2_leaderboard", "--warehouse", wh, "--format", "csv"],
            ["sql", "SELECT count(*) AS n FROM episodes", "--warehouse", wh, "--format", "csv"],
            ["report", "--out", str(tmp_path / "report"), "--db", db, "--warehouse", wh],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "inquitree", *args], capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, (args, done.stdout[-1500:], done.stderr[-1500:])
            if args[0] == "sql":
                assert done.stdout.split()[1] == "4"
        page = urllib.request.urlopen(base + "/", timeout=60).read().decode()
        assert page.count('href="/episodes/') >= 4  # the viewer took up the published snapshot
    assert (tmp_path / "report" / "index.html").exists()


def test_the_cli_says_a_sync_is_busy_in_one_line(tmp_path, monkeypatch):
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    record(db, 1)
    holder = Warehouse(wh)
    try:
        monkeypatch.setenv("INQUITREE_WAREHOUSE_WAIT", "0.2")
        out = CliRunner().invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh])
        last = out.output.strip().splitlines()[-1]
        assert out.exit_code == 2 and last.startswith("inquitree: error: another process is writing"), out.output
    finally:
        holder.close()
