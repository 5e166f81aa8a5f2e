"""A damaged store is reported, never a traceback (issue: the first hour, second pass).

`db verify` is the command a user runs when a store is damaged: it reports SQLite's own check,
what can still be read, the prefix of the log whose chains hold and the episodes that are intact
(and so can be exported with their hashes), and exits 1 (tampered or damaged). Every other command
says the store is damaged and points to `db verify`, exit 2. The same for a file cut short and a
file that is not a database at all."""

from __future__ import annotations

import random
import shutil

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore

from enginekit import RandomAgent, play


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("damage")
    tree = resolve_tree("synthetic-chain-7")
    with EventStore(f"sqlite:///{d / 'good.sqlite'}") as s:
        for seed in range(40):
            play(tree, RandomAgent(tree, seed), store=s, seed=seed, randomness=3)
    return d / "good.sqlite"


def _overwrite(path, offset: int, size: int) -> None:
    noise = random.Random(7).randbytes(size)  # the same damage every run
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(noise)


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_8_kib_of_noise_inside_the_file_is_reported_and_what_is_left_named(store, tmp_path):
    damaged = tmp_path / "h.sqlite"
    shutil.copy(store, damaged)
    _overwrite(damaged, 600 * 1024, 8 * 1024)  # the dd, deep in the file: one table page
    url = f"sqlite:///{damaged}"
    out = run("db", "verify", "--db", url)
    assert out.exit_code == 1 and out.output.startswith("DAMAGED: "), out.output
    assert "SQLite's integrity check:" in out.output and "unreadable:" in out.output
    assert "Traceback" not in out.output
    intact = [ln for ln in out.output.splitlines() if "readable with their chains intact" in ln]
    assert intact and "damaged: episode/" in out.output
    first = intact[0].split(": ", 1)[1].split(", ")[0]
    exported = run("episodes", "export", first, "--db", url, "--out", tmp_path / "ep.jsonl")
    assert exported.exit_code == 0, exported.output  # an intact episode still leaves with its hashes
    for cmd in (["episodes", "list"], ["replay", "last"], ["warehouse", "sync", "--warehouse", tmp_path / "w.duckdb"]):
        said = run(*cmd, "--db", url)
        assert said.exit_code == 2 and "damaged" in said.output and "db verify" in said.output, (cmd, said.output)
        assert "Traceback" not in said.output


@pytest.mark.parametrize("how", ["cut short", "not a database"])
def test_a_file_cut_short_or_not_a_database(store, tmp_path, how):
    path = tmp_path / "h.sqlite"
    if how == "cut short":
        path.write_bytes(store.read_bytes()[: store.stat().st_size // 2])
    else:
        path.write_bytes(random.Random(3).randbytes(5000))
    url = f"sqlite:///{path}"
    out = run("db", "verify", "--db", url)
    assert out.exit_code == 1 and out.output.startswith("DAMAGED: ") and "nothing can be read" in out.output
    for cmd in (["episodes", "list"], ["replay", "last"]):
        said = run(*cmd, "--db", url)
        assert said.exit_code == 2 and "is damaged" in said.output and "db verify" in said.output, said.output


@pytest.mark.parametrize("table", ["events", "checkpoints"])
def test_a_store_whose_tables_are_views_is_refused_before_anything_reads_them(store, tmp_path, table):
    """A SQLite store whose ``events`` was a view over an endless CTE hung `db verify`, `warehouse
    sync` and `episodes list` for ever: a store whose tables are not the tables this code made is
    refused when it is opened, beside the revision check, naming the table."""
    import sqlite3

    path = tmp_path / "views.sqlite"
    shutil.copy(store, path)
    with sqlite3.connect(path) as con:
        con.execute(f"ALTER TABLE {table} RENAME TO {table}_kept")
        con.execute(
            f"CREATE VIEW {table} AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            f"SELECT k.* FROM {table}_kept k, n"
        )
    for args in (["db", "verify", "--db"], ["episodes", "list", "--db"]):
        out = run(*args, f"sqlite:///{path}")
        assert out.exit_code != 0
        said = " ".join(out.output.split())
        assert f"its {table} is a view, not the table InquiTree made" in said, said


def test_a_row_over_the_event_limit_is_named_by_the_sync_not_a_traceback(store, tmp_path):
    """One 200 MB row (written behind the store's back; the store never writes one over
    MAX_EVENT_BYTES) stopped every warehouse sync with DuckDB's out-of-memory traceback: the sync
    names its position and size in one line and loads nothing."""
    import sqlite3

    from inquitree.events.store import MAX_EVENT_BYTES

    path = tmp_path / "big.sqlite"
    shutil.copy(store, path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TRIGGER IF EXISTS events_no_update")
        triggers = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
        for name in triggers:
            con.execute(f'DROP TRIGGER "{name}"')
        (position,) = con.execute("SELECT max(global_position) FROM events").fetchone()
        big = '{"pad": "' + "x" * (MAX_EVENT_BYTES + 10) + '"}'
        con.execute("UPDATE events SET payload = ? WHERE global_position = ?", (big, position))
    out = run("warehouse", "sync", "--db", f"sqlite:///{path}", "--warehouse", tmp_path / "w.duckdb")
    said = " ".join(out.output.split())
    assert out.exit_code != 0 and "Traceback" not in out.output
    assert f"event {position} is {len(big):,} bytes, over the {MAX_EVENT_BYTES:,} this code writes" in said, said
