"""One store test suite, run against SQLite and PostgreSQL (the ``store_url`` fixture)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import as_admin

from inquitree.events import ConcurrencyError, StoreError, migrate
from inquitree.events.chain import GENESIS_HASH, chain_hash
from inquitree.events.store import EventStore

from tests_support import Noted

ROOT = Path(__file__).resolve().parent.parent


def notes(*ns: int) -> list[Noted]:
    return [Noted(n=n, text=f"note {n}") for n in ns]


@pytest.fixture
def store(store_url):
    s = EventStore(store_url)
    yield s
    s.close()


def test_append_then_read_stream_in_version_order(store):
    assert store.append("ep-1", notes(1, 2, 3), expected_version=0) == 3
    assert store.append("ep-1", notes(4), expected_version=3) == 4
    got = store.read_stream("ep-1")
    assert [e.stream_version for e in got] == [1, 2, 3, 4]
    assert [e.event.n for e in got] == [1, 2, 3, 4]
    assert [e.payload for e in store.read_stream("ep-1", from_version=3)] == [
        {"n": 3, "text": "note 3"},
        {"n": 4, "text": "note 4"},
    ]
    assert all(e.recorded_at.endswith("Z") and e.event_type == "TestNoted" for e in got)
    assert got[0].prev_hash == GENESIS_HASH and got[1].prev_hash == got[0].hash


def test_global_positions_increase_across_streams(store):
    store.append("a", notes(1, 2), 0)
    store.append("b", notes(3), 0)
    store.append("a", notes(4), 2)
    everything = store.read_all()
    assert [(e.stream_id, e.event.n) for e in everything] == [("a", 1), ("a", 2), ("b", 3), ("a", 4)]
    positions = [e.global_position for e in everything]
    assert positions == sorted(positions) and len(set(positions)) == 4
    assert [e.event.n for e in store.read_all(after_position=positions[1])] == [3, 4]
    assert [e.event.n for e in store.read_all(after_position=0, limit=2)] == [1, 2]
    assert [e.event.n for e in store.iter_all(0, batch=1)] == [1, 2, 3, 4]
    assert store.last_position() == positions[-1]


def test_streams_lists_versions_and_filters_by_prefix(store):
    store.append("episode/x", notes(1, 2), 0)
    store.append("episode/y", notes(1), 0)
    store.append("control/z", notes(1), 0)
    assert [(s.stream_id, s.version) for s in store.streams()] == [("control/z", 1), ("episode/x", 2), ("episode/y", 1)]
    assert [s.stream_id for s in store.streams(prefix="episode/")] == ["episode/x", "episode/y"]
    assert store.current_version("episode/x") == 2 and store.current_version("nope") == 0


def test_read_streams_gives_each_stream_its_events_of_the_types_asked_in_version_order(store):
    store.append("episode/x", notes(1, 2), 0)
    store.append("episode/y", notes(3), 0)
    store.append("episode/x", notes(4), 2)
    got = store.read_streams(["episode/y", "episode/x", "episode/none"], ["TestNoted"])
    assert {sid: [e.event.n for e in evs] for sid, evs in got.items()} == {
        "episode/y": [3],
        "episode/x": [1, 2, 4],
        "episode/none": [],
    }
    assert store.read_streams(["episode/x"], ["Other"]) == {"episode/x": []}
    assert store.read_streams([], ["TestNoted"]) == {}
    many = [f"episode/n{i}" for i in range(1_200)]  # more ids than one query takes at a time
    for sid in many[::400]:
        store.append(sid, notes(7), 0)
    got = store.read_streams(many, ["TestNoted"])
    assert len(got) == 1_200 and [sid for sid, evs in got.items() if evs] == many[::400]


def test_a_prefix_matches_exactly_on_both_backends(store):
    """Stream ids that start with the prefix, case and all; LIKE's wildcards in a prefix are
    plain characters. SQLite's LIKE alone ignored case (and so could not use the index)."""
    ids = ["notes/a.x", "notes/A.x", "notes/a_x", "notes/a%x", "notes/ab", "notes/a.", "notes/a/"]
    for sid in ids:
        store.append(sid, notes(1), 0)
    store.append("notes/a.y", notes(1, 2), 0)
    assert [s.stream_id for s in store.streams(prefix="notes/a.")] == ["notes/a.", "notes/a.x", "notes/a.y"]
    assert [s.stream_id for s in store.streams(prefix="notes/a_")] == ["notes/a_x"]
    assert [s.stream_id for s in store.streams(prefix="notes/a%")] == ["notes/a%x"]
    assert [s.stream_id for s in store.streams(prefix="notes/A")] == ["notes/A.x"]
    assert store.streams_with_event("notes/a.", "TestNoted") == {"notes/a.", "notes/a.x", "notes/a.y"}
    assert store.streams_with_event("notes/a.", "Other") == set()
    assert store.streams_with_event("notes/b", "TestNoted") == set()


def test_a_prefix_is_an_index_range_on_sqlite(sqlite_url):
    from inquitree.events.backends.sqlite import prefix_end as _prefix_end

    assert _prefix_end("episode/a.") == "episode/a/"
    assert _prefix_end("x\ud7ff") == "x\ue000"  # past the surrogates, which UTF-8 cannot hold
    assert _prefix_end("") is None and _prefix_end("x\U0010ffff") is None
    with EventStore(sqlite_url) as store:
        store.append("episode/a.x", notes(1), 0)
        where, args = store.db.starting_with("episode/a.")
        with store.db.cursor() as cur:
            cur.execute(f"EXPLAIN QUERY PLAN SELECT DISTINCT stream_id FROM events WHERE {where}", args)
            plan = " ".join(str(row[-1]) for row in cur.fetchall())
    assert "SEARCH events USING" in plan and "INDEX sqlite_autoindex_events_1 (stream_id>? AND stream_id<?)" in plan


@pytest.mark.parametrize("expected", [0, 1, 3, 7])
def test_wrong_expected_version_raises_and_writes_nothing(store, expected):
    store.append("s", notes(1, 2), 0)
    with pytest.raises(ConcurrencyError) as info:
        store.append("s", notes(99), expected_version=expected)
    assert info.value.stream_id == "s" and info.value.actual == 2
    assert [e.event.n for e in store.read_stream("s")] == [1, 2]


def test_append_is_atomic_when_one_event_cannot_be_serialized(store):
    store.append("s", notes(1), 0)
    with pytest.raises(TypeError):
        store.append("s", [Noted(n=2), Noted(n=object())], 1)
    assert [e.event.n for e in store.read_stream("s")] == [1]
    assert store.append("s", notes(2), 1) == 2


def test_empty_append_is_a_no_op(store):
    assert store.append("s", [], 0) == 0
    assert store.streams() == []


def _admin_engine(store):
    """An engine with the database's own keys: the SQLite file itself, PostgreSQL's administrator."""
    return store.engine if store.dialect == "sqlite" else sa.create_engine(as_admin(store.url))


def test_update_delete_truncate_are_refused_by_the_database(store):
    store.append("s", notes(1, 2), 0)
    statements = ["UPDATE events SET payload = '{}'", "DELETE FROM events WHERE stream_version = 1"]
    if store.dialect == "postgresql":
        statements.append("TRUNCATE events")
    # The triggers refuse even the administrator; on PostgreSQL the writer is refused before that.
    engines = [_admin_engine(store)] + ([store.engine] if store.dialect == "postgresql" else [])
    for engine in engines:
        for sql in statements:
            with pytest.raises(sa.exc.DatabaseError, match="immutable|permission denied"), engine.begin() as conn:
                conn.exec_driver_sql(sql)
    assert [e.event.n for e in store.read_stream("s")] == [1, 2]


def test_an_oversized_payload_is_refused_by_the_database_from_any_writer(store):
    """The store refuses an event over MAX_EVENT_BYTES before it writes; a client that writes rows
    itself (PostgreSQL's writer role may INSERT) could add one of any size, and a 200 MB row stopped
    every warehouse sync. The database's size guard refuses it too, and db upgrade puts it back."""
    import importlib.util

    from inquitree.events import guards
    from inquitree.events.backends import SIZE_GUARD
    from inquitree.events.store import MAX_EVENT_BYTES

    spec = importlib.util.spec_from_file_location("m0003", ROOT / "migrations" / "versions" / "0003_payload_size.py")
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    assert migration.MAX_PAYLOAD_BYTES == MAX_EVENT_BYTES  # the store's limit and the database's are one

    store.append("s", notes(1), 0)
    row = store.read_stream("s")[0]
    insert = (
        "INSERT INTO events (stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
        "prev_hash, hash) VALUES ('s', 2, 'Note', 1, '2026-12-03T00:00:00.000000Z', :p, :h, :h)"
    )
    big = '{"n":2,"text":"' + "x" * MAX_EVENT_BYTES + '"}'
    writers = [_admin_engine(store)] + ([store.engine] if store.dialect == "postgresql" else [])
    for engine in writers:
        with pytest.raises(sa.exc.DatabaseError, match="payload over 4194304 bytes is refused"), engine.begin() as c:
            c.execute(sa.text(insert), {"p": big, "h": row.hash})
    assert [e.event.n for e in store.read_stream("s")] == [1]
    with _admin_engine(store).begin() as conn:
        conn.exec_driver_sql(
            "DROP TRIGGER events_payload_size" + (" ON events" if store.dialect == "postgresql" else "")
        )
        cur = conn.connection.cursor()
        said = guards.missing(cur, store.db.backend)
        assert said == [f"trigger events_payload_size is missing ({SIZE_GUARD[2]} on events is not refused)"]
        assert guards.restore_guards(conn.connection, store.db.backend) == ["created trigger events_payload_size"]
        assert guards.missing(conn.connection.cursor(), store.db.backend) == []
    with pytest.raises(sa.exc.DatabaseError, match="payload over"), _admin_engine(store).begin() as c:
        c.execute(sa.text(insert), {"p": big, "h": row.hash})


def _drop_immutability(store):
    with _admin_engine(store).begin() as conn:
        if store.dialect == "sqlite":
            conn.exec_driver_sql("DROP TRIGGER events_no_update")
        else:
            conn.exec_driver_sql("DROP TRIGGER events_no_update_delete ON events")


def test_verify_finds_the_first_tampered_event(store):
    store.append("a", notes(1, 2, 3), 0)
    store.append("b", notes(1, 2, 3, 4), 0)
    assert store.verify().ok and store.verify().events_checked == 7
    _drop_immutability(store)
    with _admin_engine(store).begin() as conn:
        conn.exec_driver_sql("""UPDATE events SET payload = '{"n":30,"text":"note 3"}'
                                WHERE stream_id = 'b' AND stream_version = 3""")
    report = store.verify()
    assert report.first_problem == ("b", 3, "content does not match its hash (the event was changed)")


def test_verify_catches_a_rehashed_event_at_the_next_version(store):
    store.append("a", notes(1, 2, 3), 0)
    row = store.read_stream("a")[1]
    forged_payload = '{"n":20,"text":"note 2"}'
    forged = chain_hash(row.prev_hash, "a", 2, row.event_type, 1, row.recorded_at, forged_payload)
    _drop_immutability(store)
    with _admin_engine(store).begin() as conn:
        conn.execute(
            sa.text("UPDATE events SET payload = :p, hash = :h WHERE stream_id = 'a' AND stream_version = 2"),
            {"p": forged_payload, "h": forged},
        )
    # The stream chain only notices at the next version; the log chain, which covers the stream
    # hash, notices at the rewritten event itself.
    sid, version, what = store.verify().first_problem
    assert (sid, version) == ("a", 2) and what.startswith("log hash does not match at global position 2")
    assert store.verify(stream_id="a").first_problem == ("a", 3, "prev_hash does not match the previous event's hash")


def test_two_writers_same_expected_version_exactly_one_wins(store_url):
    rounds, winners_seen = 8, []
    stores = [EventStore(store_url), EventStore(store_url)]
    try:
        for r in range(rounds):
            stream = f"race-{r}"
            stores[0].append(stream, notes(0), 0)
            barrier = threading.Barrier(2)
            outcome: dict[int, str] = {}

            def write(i: int, barrier=barrier, stream=stream, outcome=outcome) -> None:
                barrier.wait()
                try:
                    stores[i].append(stream, [Noted(n=100 + i, text="writer")], expected_version=1)
                    outcome[i] = "won"
                except ConcurrencyError:
                    outcome[i] = "conflict"

            threads = [threading.Thread(target=write, args=(i,)) for i in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(outcome.values()) == ["conflict", "won"]
            got = stores[0].read_stream(stream)
            winner = next(i for i, o in outcome.items() if o == "won")
            assert [e.event.n for e in got] == [0, 100 + winner]
            winners_seen.append(winner)
        assert stores[0].verify().ok
    finally:
        for s in stores:
            s.close()


def test_parallel_writers_on_many_streams_lose_and_duplicate_nothing(store_url):
    writers, per_writer = 4, 25
    stores = [EventStore(store_url) for _ in range(writers)]
    try:

        def write(i: int) -> None:
            for k in range(per_writer):
                stores[i].append(f"w{i}", notes(k), expected_version=k)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        everything = list(stores[0].iter_all())
        assert len(everything) == writers * per_writer
        assert len({e.global_position for e in everything}) == len(everything)
        for i in range(writers):
            assert [e.event.n for e in stores[0].read_stream(f"w{i}")] == list(range(per_writer))
    finally:
        for s in stores:
            s.close()


def test_models_and_migrations_do_not_drift(store):
    assert migrate.drift(store.engine) == []
    assert migrate.current_revision(store.engine) == migrate.head_revision()


def test_database_from_a_newer_schema_is_refused_with_the_revision(store_url):
    EventStore(store_url).close()
    engine = sa.create_engine(store_url if store_url.startswith("sqlite") else as_admin(store_url))
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    engine.dispose()
    with pytest.raises(StoreError, match="9999_from_the_future.*newer InquiTree"):
        EventStore(store_url)


def _store_as_written_elsewhere(store, stream, expected, event_type, schema_version, payload):
    """An event as another InquiTree version would have stored it: raw content, both chains intact."""
    store._append(stream, [(event_type, schema_version, "2026-01-01T00:00:00.000000Z", payload.encode())], expected)


def test_unknown_event_type_on_read_names_stream_and_version(store):
    store.append("s", notes(1), 0)
    _store_as_written_elsewhere(store, "s", 1, "NoSuchEvent", 1, "{}")
    bad = store.read_stream("s")[1]
    with pytest.raises(StoreError, match=r"unknown event type 'NoSuchEvent'.*stream 's', version 2"):
        _ = bad.event
    assert store.verify().ok  # the chains are intact; only this code cannot read the type


def test_stored_v1_agent_reply_is_upcast_to_the_current_version_on_read(store):
    """AgentReplied v1 kept one token total; v2 splits usage for cost accounting; v3 adds why the
    reply ended and the failed attempts, which a v1 reply did not record. v1 reaches v3 through both."""
    v1 = '{"action":"x","latency_ms":1.0,"model":"m","raw":"ACTION: x","state":"topic","step":1,"tokens":321}'
    _store_as_written_elsewhere(store, "old", 0, "AgentReplied", 1, v1)
    ev = store.read_stream("old")[0].event
    assert type(ev).__name__ == "AgentReplied" and ev.VERSION == 3
    assert ev.usage == {"input": None, "cached_input": None, "cache_write": None, "output": None, "total": 321}
    assert ev.raw == "ACTION: x" and ev.step == 1
    assert ev.finish_reason is None and ev.failed_attempts == []


def test_event_classes_compare_hash_and_print_as_frozen_dataclasses_would():
    """``Event`` writes equality, hash and repr once for every event class (events/base.py); they
    must mean what the dataclass module's own would, and no class may bring its own back."""
    import dataclasses

    from inquitree.events import Event, registered_types
    from inquitree.events.types import ObservationEmitted, TurnLimitReached

    mirror = dataclasses.dataclass(frozen=True, kw_only=True)(
        type("TurnLimitReached", (), {"__annotations__": {"step": int, "max_turns": int}, "__module__": __name__})
    )
    ev, twin = TurnLimitReached(step=3, max_turns=9), mirror(step=3, max_turns=9)
    assert repr(ev) == repr(twin) == "TurnLimitReached(step=3, max_turns=9)"
    assert hash(ev) == hash(twin) == hash(TurnLimitReached(step=3, max_turns=9))
    assert ev == TurnLimitReached(step=3, max_turns=9) and ev != TurnLimitReached(step=4, max_turns=9)
    assert ev != twin and ev != (3, 9)  # another class with the same fields is not equal
    shown = ObservationEmitted(step=1, state="topic", templates=["t"], text="x")
    assert shown == ObservationEmitted(step=1, state="topic", templates=["t"], text="x")
    with pytest.raises(TypeError):  # a list field: not hashable, as a frozen dataclass's is not
        hash(shown)
    with pytest.raises(dataclasses.FrozenInstanceError):
        shown.step = 2  # type: ignore[misc]
    for cls in [*registered_types().values(), Noted]:
        assert cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]
        assert all(f.kw_only for f in dataclasses.fields(cls)), cls
        assert (cls.__eq__, cls.__hash__, cls.__repr__) == (Event.__eq__, Event.__hash__, Event.__repr__), cls


def test_decoding_makes_the_event_the_class_would_from_every_golden_log():
    """``Event.from_payload`` builds events without calling ``__init__`` (events/base.py): for every
    event of the golden logs it gives what calling the class with the payload's fields gives; keys
    that are not fields are left out, a missing field takes its default (a fresh list or dict each
    time), one without a default is a TypeError, and a class with ``__post_init__`` is refused."""
    import dataclasses
    from pathlib import Path

    import orjson

    from inquitree.events import decode, event_type, registered_types
    from inquitree.events.base import Event
    from inquitree.events.store import RecordedEvent
    from inquitree.events.types import ObservationEmitted

    seen = set()
    for path in sorted((Path(__file__).parent / "golden").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = orjson.loads(line)
            if "type" not in row:
                continue
            ev = decode(row["type"], row["version"], row["payload"])
            cls = registered_types()[row["type"]]
            names = {f.name for f in dataclasses.fields(cls)}
            made = cls(**{k: v for k, v in ev.to_payload().items() if k in names})
            assert (ev, repr(ev), ev.to_json()) == (made, repr(made), made.to_json())
            seen.add(row["type"])
    assert len(seen) >= 10, seen
    payload = {"step": 1, "state": "topic", "templates": [], "text": "x"}
    ev = ObservationEmitted.from_payload({**payload, "unknown": 1})
    assert ev == ObservationEmitted(**payload) and not hasattr(ev, "unknown")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.step = 2  # type: ignore[misc]
    other = ObservationEmitted.from_payload(payload)
    assert ev.hidden == {} and ev.hidden is not other.hidden  # a default factory: a new dict for each event
    with pytest.raises(TypeError, match="ObservationEmitted needs the field 'text'"):
        ObservationEmitted.from_payload({"step": 1, "state": "topic", "templates": []})

    assert not hasattr(RecordedEvent, "__post_init__")  # a stored row is made the same way (store._recorded)
    with pytest.raises(TypeError, match="has no __post_init__"):

        @event_type
        class Checked(Event):
            TYPE = "TestChecked"
            x: int

            def __post_init__(self) -> None:
                pass


def test_event_newer_than_this_code_is_a_clear_error(store):
    _store_as_written_elsewhere(store, "new", 0, "AgentReplied", 7, "{}")
    with pytest.raises(StoreError, match="AgentReplied v7 is newer than this InquiTree knows"):
        _ = store.read_stream("new")[0].event


def test_utc_now_is_the_iso_instant_with_microseconds():
    """The append's timestamp is formatted once a second (events/store.py): it must still be the
    current instant, to the microsecond, in the format events have always carried."""
    import re
    from datetime import datetime, timezone

    from inquitree.events.database import utc_now

    for _ in range(3):
        before = datetime.now(timezone.utc)
        text = utc_now()
        after = datetime.now(timezone.utc)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", text), text
        assert before <= datetime.fromisoformat(text.replace("Z", "+00:00")) <= after
