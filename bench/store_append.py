"""Event-store append benchmark.

Measures, in one process so the ratio is immune to a noisy machine:
  1. batched appends through EventStore.append (serialization + hash chain + insert),
  2. the baseline: raw driver executemany of the *same* rows, already serialized and
     hashed, with the same batch size and a commit per batch (on PostgreSQL also raw COPY,
     which the store's multi-row appends use there),
  3. one-event appends with a commit each (the engine's pattern): p50 / p99 latency.

    python bench/store_append.py                       # SQLite, 1M events
    python bench/store_append.py --db postgresql+psycopg://postgres@127.0.0.1:5432/db --events 200000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from needs import code_commit, keep_run  # bench/needs.py

from inquitree.events.database import INSERT_COLUMNS
from inquitree.events.store import EventStore
from inquitree.events.types import MatchScored

# Every column the store writes, so the baseline inserts the same bytes (the log chain's too).
COLUMNS = INSERT_COLUMNS


def make_event(i: int) -> MatchScored:
    """A realistic payload: a Topic-state match over seven subtopics."""
    cands = [{"id": f"s{j}", "cosine": round(((i * 7 + j * 13) % 100) / 100, 6)} for j in range(1, 8)]
    return MatchScored(
        step=i % 77, state="topic", candidates=cands, best="s3", best_cosine=0.71, tau=0.5, accepted=True
    )


def fresh_store(db: str | None, tmp: Path, name: str) -> EventStore:
    if db:
        admin = sa.create_engine(db, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}"')
            c.exec_driver_sql(f'CREATE DATABASE "{name}"')
        admin.dispose()
        return EventStore(sa.make_url(db).set(database=name).render_as_string(hide_password=False))
    return EventStore(f"sqlite:///{tmp / (name + '.sqlite')}")


def bench_batched(store: EventStore, n: int, batch: int) -> tuple[float, list[dict]]:
    events = [make_event(i) for i in range(batch)]
    rows: list[dict] = []
    t0 = time.perf_counter()
    for b in range(n // batch):
        store.append(f"bench-{b}", events, 0)
    elapsed = time.perf_counter() - t0
    # Capture the exact stored rows (pre-serialized, hashed) for the raw baseline.
    with store.engine.connect() as conn:
        rows = [
            dict(r._mapping)
            for r in conn.execute(sa.text(f"SELECT {', '.join(COLUMNS)} FROM events ORDER BY global_position"))
        ]
    return elapsed, rows


def bench_raw(store: EventStore, rows: list[dict], batch: int) -> float:
    """The same rows through the bare DBAPI cursor.executemany, commit per batch."""
    tuples = [tuple(r[c] for c in COLUMNS) for r in rows]
    placeholder = "?" if store.dialect == "sqlite" else "%s"
    sql = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join([placeholder] * len(COLUMNS))})"
    raw = store.engine.raw_connection()
    try:
        dbapi = raw.driver_connection
        if store.dialect == "sqlite":
            dbapi.isolation_level = None
        t0 = time.perf_counter()
        for b in range(0, len(tuples), batch):
            cur = dbapi.cursor()
            if store.dialect == "sqlite":
                cur.execute("BEGIN IMMEDIATE")
            cur.executemany(sql, tuples[b : b + batch])
            dbapi.commit() if store.dialect != "sqlite" else cur.execute("COMMIT")
            cur.close()
        return time.perf_counter() - t0
    finally:
        raw.close()


def bench_copy(store: EventStore, rows: list[dict], batch: int) -> float:
    """PostgreSQL: the same rows through the bare psycopg COPY, commit per batch (what the store's
    multi-row appends use there)."""
    tuples = [tuple(r[c] for c in COLUMNS) for r in rows]
    raw = store.engine.raw_connection()
    try:
        dbapi = raw.driver_connection
        t0 = time.perf_counter()
        for b in range(0, len(tuples), batch):
            with dbapi.cursor() as cur, cur.copy(f"COPY events ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in tuples[b : b + batch]:
                    copy.write_row(row)
            dbapi.commit()
        return time.perf_counter() - t0
    finally:
        raw.close()


def bench_single(store: EventStore, count: int) -> list[float]:
    ev = make_event(1)
    lat = []
    for i in range(count):
        t0 = time.perf_counter()
        store.append("single", [ev], i)
        lat.append((time.perf_counter() - t0) * 1000)
    return lat


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="PostgreSQL admin URL (a database per run is created); default: SQLite files")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--single", type=int, default=2000)
    ap.add_argument("--out", help="add the results to this JSON file's runs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        store = fresh_store(args.db, tmp, "bench_store")
        store_s, rows = bench_batched(store, args.events, args.batch)
        base = fresh_store(args.db, tmp, "bench_raw")
        raw_s = bench_raw(base, rows, args.batch)
        copy_s = None
        if store.dialect == "postgresql":
            copied = fresh_store(args.db, tmp, "bench_copy")
            copy_s = bench_copy(copied, rows, args.batch)
            copied.close()
        single = fresh_store(args.db, tmp, "bench_single")
        lat = bench_single(single, args.single)
        result = {
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": code_commit(),
            "backend": store.dialect,
            "events": len(rows),
            "batch": args.batch,
            "store_events_per_s": round(len(rows) / store_s),
            "raw_events_per_s": round(len(rows) / raw_s),
            "ratio_store_to_raw": round(raw_s / store_s, 3),
            **(
                {
                    "raw_copy_events_per_s": round(len(rows) / copy_s),
                    "ratio_store_to_raw_copy": round(copy_s / store_s, 3),
                }
                if copy_s
                else {}
            ),
            "single_append_ms": {
                "n": len(lat),
                "p50": round(statistics.median(lat), 3),
                "p99": round(pct(lat, 0.99), 3),
                "max": round(max(lat), 3),
            },
        }
        for s in (store, base, single):
            s.close()
    print(json.dumps(result, indent=2))
    if args.out:
        keep_run(args.out, result)


if __name__ == "__main__":
    sys.exit(main())
