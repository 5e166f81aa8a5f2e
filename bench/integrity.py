"""What the log chain and signed checkpoints cost (issue: a log that proves itself).

In one process, so the ratios hold on a busy machine, on SQLite files with the store's settings:

1. One-event appends with a commit each (the engine's pattern), in interleaved rounds:
   - ``raw``: bare sqlite3, a prepared row, BEGIN IMMEDIATE / INSERT / COMMIT;
   - ``before``: the append as it was before the log chain (a SQLAlchemy SELECT of the stream's
     last hash, then the insert; reproduced here from the previous commit);
   - ``now``: ``EventStore.append`` (stream and log chains, heads remembered, nothing read back);
   - ``now+signed``: the same with an Ed25519 checkpoint after every 100 appends (an episode).
2. ``db verify`` over 1M events: as it was before (stream chains through SQLAlchemy rows), the
   chains now, and with a key (one checkpoint at the head).

    python bench/integrity.py                 # 1M events for verify
    python bench/integrity.py --events 200000 --out bench/results/integrity.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa
from store_append import make_event

from inquitree.events.chain import GENESIS_HASH
from inquitree.events.database import INSERT_COLUMNS
from inquitree.events.schema import events as events_table
from inquitree.events.signing import generate, load_signer
from inquitree.events.store import EventStore

OLD_COLUMNS = INSERT_COLUMNS[1:-1]  # before the log chain: no position given, no log hash


class Before:
    """The append path before this change (stream chain only, the previous hash read back by a
    SQLAlchemy SELECT on every append), on the same store and table."""

    def __init__(self, store: EventStore):
        self.store = store
        self.sql = f"INSERT INTO events ({', '.join(OLD_COLUMNS)}) VALUES ({', '.join('?' * len(OLD_COLUMNS))})"

    def append(self, stream_id: str, events, expected: int) -> int:
        store = self.store
        with store.db.write_lock, store.engine.connect() as conn, conn.begin():
            if expected == 0:
                prev = GENESIS_HASH
            else:
                prev = conn.execute(
                    sa.select(events_table.c.hash).where(
                        events_table.c.stream_id == stream_id, events_table.c.stream_version == expected
                    )
                ).scalar_one()
            now = store.clock()
            rows = []
            for i, ev in enumerate(events, start=1):
                payload = ev.to_json()
                version = expected + i
                head = f"{prev}\n{stream_id}\n{version}\n{ev.TYPE}\n{ev.VERSION}\n{now}\n".encode()
                digest = hashlib.sha256(head + payload).hexdigest()
                rows.append((stream_id, version, ev.TYPE, ev.VERSION, now, payload.decode(), prev, digest))
                prev = digest
            conn.exec_driver_sql(self.sql, rows)
        return expected + len(events)


class Raw:
    """Bare sqlite3 with the store's pragmas: a prepared row per append, one transaction each."""

    def __init__(self, path: Path):
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(
            "CREATE TABLE events (global_position INTEGER PRIMARY KEY, stream_id TEXT, stream_version INTEGER, "
            "event_type TEXT, schema_version INTEGER, recorded_at TEXT, payload TEXT, prev_hash TEXT, hash TEXT, "
            "UNIQUE (stream_id, stream_version))"
        )
        ev = make_event(1)
        self.row = [
            "raw",
            0,
            ev.TYPE,
            ev.VERSION,
            "2026-11-23T00:00:00.000000Z",
            ev.to_json().decode(),
            "0" * 64,
            "1" * 64,
        ]
        self.sql = f"INSERT INTO events ({', '.join(OLD_COLUMNS)}) VALUES ({', '.join('?' * len(OLD_COLUMNS))})"

    def append(self, stream_id: str, events, expected: int) -> int:
        self.row[1] = expected + 1
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(self.sql, self.row)
        self.conn.execute("COMMIT")
        return expected + 1


def single_appends(tmp: Path, rounds: int, per_round: int) -> dict:
    private, _ = generate(tmp / "bench")
    stores = {
        "raw": Raw(tmp / "raw.sqlite"),
        "before": Before(EventStore(f"sqlite:///{tmp / 'before.sqlite'}", signer=None)),
        "now": EventStore(f"sqlite:///{tmp / 'now.sqlite'}", signer=None),
        "now+signed": EventStore(f"sqlite:///{tmp / 'signed.sqlite'}", signer=load_signer(private)),
    }
    ev = [make_event(1)]
    versions = dict.fromkeys(stores, 0)
    lat: dict[str, list[float]] = {k: [] for k in stores}
    for _ in range(rounds):
        for name, store in stores.items():
            for _ in range(per_round):
                t0 = time.perf_counter()
                versions[name] = store.append(name, ev, versions[name])
                if name == "now+signed" and versions[name] % 100 == 0:
                    store.checkpoint()
                lat[name].append((time.perf_counter() - t0) * 1e6)
    out = {}
    for name, values in lat.items():
        values.sort()
        out[name] = {
            "n": len(values),
            "p50_us": round(statistics.median(values), 1),
            "p99_us": round(values[int(len(values) * 0.99) - 1], 1),
            "mean_us": round(statistics.fmean(values), 1),
        }
    for name in ("before", "now", "now+signed"):
        out[name]["p50_vs_raw"] = round(out[name]["p50_us"] / out["raw"]["p50_us"], 2)
        out[name]["mean_vs_before"] = round(out[name]["mean_us"] / out["before"]["mean_us"], 3)
    return out


def verify_before(store: EventStore) -> int:
    """``verify`` as it was before the log chain: each stream's chain, read through SQLAlchemy."""
    from inquitree.events.chain import chain_hash

    c = events_table.c
    q = sa.select(
        c.stream_id, c.stream_version, c.event_type, c.schema_version, c.recorded_at, c.payload, c.prev_hash, c.hash
    ).order_by(c.stream_id, c.stream_version)
    checked, current, prev = 0, None, GENESIS_HASH
    with store.engine.connect() as conn:
        for sid, version, etype, sver, at, payload, prev_hash, digest in conn.execution_options(
            yield_per=20_000
        ).execute(q):
            if sid != current:
                current, prev = sid, GENESIS_HASH
            assert prev_hash == prev and chain_hash(prev, sid, version, etype, sver, at, payload) == digest
            prev, checked = digest, checked + 1
    return checked


def verify_cost(tmp: Path, n: int) -> dict:
    private, public = generate(tmp / "verify")
    store = EventStore(f"sqlite:///{tmp / 'verify.sqlite'}", signer=None)
    events = [make_event(i) for i in range(1000)]
    t0 = time.perf_counter()
    for b in range(n // 1000):
        store.append(f"s{b}", events, 0)
    append_s = time.perf_counter() - t0
    store.checkpoint(load_signer(private))
    t0 = time.perf_counter()
    verify_before(store)
    before_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    plain = store.verify()
    plain_s = time.perf_counter() - t0
    from inquitree.events.signing import load_verifier

    t0 = time.perf_counter()
    keyed = store.verify(verifier=load_verifier(public))
    keyed_s = time.perf_counter() - t0
    assert plain.first_problem is None and keyed.ok, (plain, keyed)
    store.close()
    return {
        "events": plain.events_checked,
        "batched_append_events_per_s": round(plain.events_checked / append_s),
        "verify_before_s": round(before_s, 2),
        "verify_s": round(plain_s, 2),
        "verify_vs_before": round(plain_s / before_s, 2),
        "verify_with_key_s": round(keyed_s, 2),
        "verify_s_per_1M": round(plain_s * 1e6 / plain.events_checked, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="events in the store that verify walks")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=500)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        result = {
            "backend": "sqlite",
            "single_append": single_appends(Path(d), args.rounds, args.per_round),
            "verify": verify_cost(Path(d), args.events),
        }
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
