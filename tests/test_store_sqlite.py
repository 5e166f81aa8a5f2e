"""SQLite-specific behaviour: the default file, auto-upgrade, the CLI's messages."""

from __future__ import annotations

import shutil

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.events import StoreError, migrate
from inquitree.events.chain import GENESIS_HASH, chain_hash
from inquitree.events.store import EventStore

from tests_support import Noted


def test_new_sqlite_file_is_brought_to_head_and_uses_wal(tmp_path):
    path = tmp_path / "new.sqlite"
    store = EventStore(f"sqlite:///{path}")
    assert path.exists()
    assert migrate.current_revision(store.engine) == migrate.head_revision()
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()


def test_a_new_file_gets_8k_pages_and_an_existing_store_keeps_its_own(tmp_path):
    import sqlite3

    new = tmp_path / "new.sqlite"
    with EventStore(f"sqlite:///{new}") as store:
        store.append("s", [Noted(n=1, text="x" * 5000)], 0)
    old = tmp_path / "old.sqlite"  # a store made before 8 KiB pages: SQLite's default size
    con = sqlite3.connect(old)
    con.execute("PRAGMA page_size=4096")
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    with EventStore(f"sqlite:///{old}") as store:
        store.append("s", [Noted(n=1, text="y" * 5000)], 0)
    for path, size in ((new, 8192), (old, 4096)):
        con = sqlite3.connect(path)
        assert con.execute("PRAGMA page_size").fetchone()[0] == size
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        with EventStore(f"sqlite:///{path}", create=False) as store:
            assert [r.event.text[0] for r in store.read_stream("s")] == ["x" if path == new else "y"]
            assert store.verify().ok


def test_default_url_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("INQUITREE_DB", f"sqlite:///{tmp_path / 'env.sqlite'}")
    with EventStore() as store:
        assert store.url.endswith("env.sqlite")


def _store_at_0001(path, tamper: bool = False) -> str:
    """A store as schema 0001 left it: stream chains only, three streams interleaved."""
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url)
    migrate.upgrade_schema(engine, target="0001_events")
    heads: dict[str, str] = {}
    at = "2026-11-01T00:00:00.000000Z"
    with engine.begin() as conn:
        for i in range(12):
            sid, version = f"s{i % 3}", i // 3 + 1
            payload = f'{{"n":{i},"text":""}}'
            prev = heads.get(sid, GENESIS_HASH)
            digest = chain_hash(prev, sid, version, "TestNoted", 1, at, payload)
            conn.exec_driver_sql(
                "INSERT INTO events (stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
                "prev_hash, hash) VALUES (?, ?, 'TestNoted', 1, ?, ?, ?, ?)",
                (sid, version, at, payload, prev, digest),
            )
            heads[sid] = digest
        if tamper:
            conn.exec_driver_sql("DROP TRIGGER events_no_update")
            conn.exec_driver_sql("""UPDATE events SET payload = '{"n":99,"text":""}' WHERE global_position = 5""")
    engine.dispose()
    return url


def test_a_store_at_0001_asks_for_db_upgrade_which_adds_the_log_chain(tmp_path):
    url = _store_at_0001(tmp_path / "old.sqlite")
    try:
        EventStore(url)
        raise AssertionError("expected StoreError")
    except StoreError as exc:
        assert "older than '0003_payload_size'" in str(exc) and "inquitree db upgrade" in str(exc)
    out = CliRunner().invoke(main, ["db", "upgrade", "--db", url])
    assert out.exit_code == 0 and "0001_events -> 0003_payload_size" in out.output, out.output
    with EventStore(url) as store:
        report = store.verify()
        assert report.ok and report.events_checked == 12 and report.head_position == 12
        store.append("s0", [Noted(n=12)], 4)  # recording goes on, chained to the upgraded log
        assert store.verify().ok and [e.event.n for e in store.read_stream("s0")][-2:] == [9, 12]
        with (
            pytest.raises(sa.exc.DatabaseError, match="immutable"),
            store.engine.begin() as conn,
        ):  # the trigger is back
            conn.exec_driver_sql("UPDATE events SET payload = '{}'")


def test_a_store_at_0002_is_upgraded_to_the_size_guard_and_keeps_its_proof(tmp_path):
    """Every store made before the size guard is at 0002: `db upgrade` adds the trigger and nothing else."""
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with EventStore(url) as store:
        store.append("s", [Noted(n=1), Noted(n=2)], 0)
        before = [r.hash for r in store.read_stream("s")]
    engine = sa.create_engine(url)
    migrate.upgrade_schema(engine)  # at head already: nothing to do
    with engine.begin() as conn:  # as it was at 0002: no size guard
        conn.exec_driver_sql("DROP TRIGGER events_payload_size")
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0002_log_chain'")
    engine.dispose()
    with pytest.raises(StoreError, match="older than '0003_payload_size'"):
        EventStore(url)
    out = CliRunner().invoke(main, ["db", "upgrade", "--db", url])
    assert out.exit_code == 0 and "0002_log_chain -> 0003_payload_size" in out.output, out.output
    with EventStore(url) as store:
        assert store.verify().ok and [r.hash for r in store.read_stream("s")] == before
        with pytest.raises(sa.exc.DatabaseError, match="payload over"), store.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO events (stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
                f"prev_hash, hash) VALUES ('s', 3, 'Note', 1, 'x', '{'x' * (5 * 1024 * 1024)}', 'h', 'h')"
            )


def test_the_upgrade_refuses_a_log_changed_before_it(tmp_path):
    url = _store_at_0001(tmp_path / "old.sqlite", tamper=True)
    out = CliRunner().invoke(main, ["db", "upgrade", "--db", url])
    assert out.exit_code == 2 and "stream 's1' version 2 (global position 5) does not match" in out.output
    assert migrate.current_revision(sa.create_engine(url)) == "0001_events"


def test_cli_verify_reports_tampering_with_exit_1(tmp_path):
    url = f"sqlite:///{tmp_path / 'log.sqlite'}"
    with EventStore(url) as store:
        store.append("ep", [Noted(n=1), Noted(n=2)], 0)
    runner = CliRunner()
    ok = runner.invoke(main, ["db", "verify", "--db", url])
    assert ok.exit_code == 0 and "ok: 2 events in 1 streams" in ok.output
    copy = tmp_path / "copy.sqlite"
    shutil.copy(tmp_path / "log.sqlite", copy)
    engine = sa.create_engine(f"sqlite:///{copy}")
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER events_no_update")
        conn.exec_driver_sql("""UPDATE events SET payload = '{"n":5,"text":""}' WHERE stream_version = 2""")
    engine.dispose()
    bad = runner.invoke(main, ["db", "verify", "--db", f"sqlite:///{copy}"])
    assert bad.exit_code == 1
    assert "TAMPERED: stream 'ep' version 2: content does not match its hash" in bad.output


def test_cli_unreachable_database_is_one_line_exit_2():
    result = CliRunner().invoke(main, ["db", "verify", "--db", "postgresql+psycopg://u@127.0.0.1:9/none"])
    assert result.exit_code == 2
    assert result.output.startswith(
        "inquitree: error: cannot open the event store postgresql+psycopg://u@127.0.0.1:9/none"
    )
    assert "Traceback" not in result.output and result.output.count("\n") == 1


def test_a_store_at_head_is_opened_read_and_appended_without_sqlalchemy(tmp_path):
    """SQLAlchemy is a third of a second to import: a SQLite file at the head revision is opened
    with sqlite3 itself (every command that reads or records, every campaign worker), and
    SQLAlchemy and Alembic load only to make or upgrade a schema."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    EventStore(url).close()  # made here, with Alembic
    script = f"""
import sys
from inquitree.core.players.agents import RandomAgent
from inquitree.core.players.embed import HashEmbedder
from inquitree.core.game.engine import Params
from inquitree.core.run.runner import run_episode, stream_id
from inquitree.core.run.setup import EpisodeSetup, Recording
from inquitree.core.game.prompts import TemplateSet
from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore

tree, emb, templates = resolve_tree("synthetic-diamond-4"), HashEmbedder(), TemplateSet()
p = Params(0.5, 4, 50, 0, 1, emb.id, templates.name, templates.hash)
with EventStore({url!r}) as store:
    run_episode(EpisodeSetup(templates, emb), tree, p, RandomAgent(tree, 1), None, Recording(store, "x"))
    assert store.verify().ok and store.read_stream(stream_id("x")) and store.streams("episode/")
loaded = sorted(m for m in ("sqlalchemy", "alembic") if m in sys.modules)
print("loaded:", loaded)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "loaded: []" in out, out
    with EventStore(url) as store:  # what it wrote, read here as well
        events = store.read_stream("episode/x")
        assert events[0].event_type == "EpisodeStarted" and store.current_version("episode/x") == len(events)
        assert store.verify().ok


@pytest.mark.parametrize("options", ["", "?timeout=5"])
def test_a_reader_never_creates_a_missing_file(tmp_path, options):
    """Opened with sqlite3 itself (a plain file) or through SQLAlchemy (a URL with options)."""
    path = tmp_path / "missing.sqlite"
    with pytest.raises(StoreError, match="no event store at .*missing.sqlite"):
        EventStore(f"sqlite:///{path}{options}", create=False)
    assert not path.exists()
