"""Safe first use: any number of processes opening a brand-new store at once all succeed (10 at
a time, 20 new stores), on SQLite and on PostgreSQL; exactly one of them migrates."""

from __future__ import annotations

import multiprocessing

import pytest
import sqlalchemy as sa
from conftest import fresh_pg_database

from inquitree.events.store import EventStore

ROUNDS, PROCESSES = 20, 10


def _open(url: str, barrier, results) -> None:
    try:
        barrier.wait(timeout=60)
        EventStore(url).close()
        results.put("ok")
    except Exception as exc:  # reported to the test
        results.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_ten_processes_opening_a_new_store_at_once_all_succeed(backend, tmp_path):
    ctx = multiprocessing.get_context("fork")  # no re-import per child: the processes start together
    failures = []
    for k in range(ROUNDS):
        url = f"sqlite:///{tmp_path / f'new{k}.sqlite'}" if backend == "sqlite" else fresh_pg_database(role=None)
        barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
        procs = [ctx.Process(target=_open, args=(url, barrier, results)) for _ in range(PROCESSES)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        failures += [f"round {k}: {o}" for o in outcomes if o != "ok"]
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            versions = conn.exec_driver_sql("SELECT count(*) FROM alembic_version").scalar_one()
        engine.dispose()
        assert versions == 1
    assert failures == []
