"""The warehouse: sync semantics on both backends, metrics by hand, and agreement with the engine."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

from inquitree import __version__
from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.core.players.embed import HashEmbedder
from inquitree.core.players.judges import EmbeddingJudge
from inquitree.core.run.runner import stream_id
from inquitree.events.store import EventStore
from inquitree.events.types import (
    AgentReplied,
    ConclusionSubmitted,
    DecisionParsed,
    EpisodeStarted,
    JudgeVerdict,
    ResultDrawn,
    Transitioned,
)
from inquitree.warehouse.errors import WarehouseError
from inquitree.warehouse.schema import FACT_MACROS, TYPED
from inquitree.warehouse.warehouse import Warehouse, _WriterLock, rebuild

from enginekit import OracleAgent, RandomAgent, ScriptAgent, always_miss_script, play

# Loose thresholds so that simulated conclusions earn 1.0, 0.6 and 0.0 alike (a varied Q to compare).
LENIENT = EmbeddingJudge(HashEmbedder(), full=0.6, partial=0.35)
TABLES = [
    "raw_events",
    "ev_episode_started",
    "ev_agent_replied",
    "ev_match_scored",
    "ev_result_drawn",
    "ev_judge_verdict",
    "ev_episode_scored",
    "ev_transitioned",
    "ev_hint_issued",
]


FACT_TABLES = {"episode_facts": "episode_id", "episode_evidence": "episode_id, item_id"}


def snapshot(wh: Warehouse) -> dict[str, list]:
    tables = {t: wh.sql(f"SELECT * FROM {t} ORDER BY global_position").rows() for t in TABLES}
    return tables | {t: wh.sql(f"SELECT * FROM {t} ORDER BY {key}").rows() for t, key in FACT_TABLES.items()}


def facts_are_the_events(wh: Warehouse) -> None:
    """The facts a sync kept are what the events give now, row for row, and none is left touched."""
    for table, macro in FACT_MACROS.items():
        for a, b in ((table, f"{macro}(0, true)"), (f"{macro}(0, true)", table)):
            assert wh.sql(f"SELECT count(*) FROM (FROM {a} EXCEPT ALL FROM {b})").item() == 0, (a, b)
        assert wh.sql(f"SELECT count(*) FROM {table}").item() > 0
    assert wh.sql("SELECT count(*) FROM touched_episodes").item() == 0


def simulate(store: EventStore, count: int, tmp_path: Path) -> None:
    trees = [resolve_tree(t) for t in ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7")]
    k = 0
    for i in range(count):
        tree = trees[i % 3]
        a = (0, 3, 6)[(i // 3) % 3]
        kind = i % 4
        if kind == 0:
            agent = OracleAgent(tree)
        elif kind == 3:
            agent = ScriptAgent(always_miss_script(tree, 4, tmp_path / f"miss-{i}.txt"))
        else:
            agent = RandomAgent(tree, i)
        out = play(tree, agent, store=store, seed=i, randomness=a, judge=LENIENT)
        k += len(out.events)


def test_sync_is_incremental_idempotent_and_rebuild_is_identical(store_url, tmp_path):
    store = EventStore(store_url)
    simulate(store, 6, tmp_path)
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        first = wh.sync(store_url)
        assert first.events == store.last_position() and first.last_position == store.last_position()
        before = snapshot(wh)
        assert wh.sync(store_url).events == 0
        assert snapshot(wh) == before  # twice in a row changes nothing
    play(resolve_tree("synthetic-diamond-4"), OracleAgent(resolve_tree("synthetic-diamond-4")), store=store, seed=99)
    new = store.last_position() - first.last_position
    with Warehouse(path) as wh:
        r = wh.sync(store_url, batch_size=17, flush_rows=40, commit_rows=100)  # several flushes and commits
        assert r.events == new
        incremental = snapshot(wh)
        facts_are_the_events(wh)  # an episode cut by a commit is recomputed whole by the next
    rebuilt_path = str(tmp_path / "r.duckdb")
    rebuild(rebuilt_path, store_url)
    with Warehouse(rebuilt_path) as wh:
        assert snapshot(wh) == incremental
        assert wh.sql("SELECT count(*) FROM raw_events").item() == store.last_position()
    store.close()


def test_a_sync_that_dies_keeps_what_it_committed_and_the_next_one_resumes(sqlite_url, tmp_path):
    store = EventStore(sqlite_url)
    simulate(store, 6, tmp_path)
    total = store.last_position()
    store.close()
    path = str(tmp_path / "w.duckdb")
    seen = []

    def die_after_five_batches(n: int, pos: int) -> None:
        seen.append(pos)
        if len(seen) == 5:
            raise KeyboardInterrupt

    with Warehouse(path) as wh:
        with pytest.raises(KeyboardInterrupt):
            wh.sync(sqlite_url, batch_size=20, flush_rows=30, commit_rows=50, progress=die_after_five_batches)
        # The first commit came after batch 3 (60 events >= 50); batches 4 and 5 were loaded into
        # the open transaction and are rolled back, so 60 events are kept and nothing half-loaded.
        assert seen[4] == 100 and wh.checkpoint()[1] == 60
        assert wh.sql("SELECT count(*) AS n, max(global_position) AS m FROM raw_events").row(0) == (60, 60)
        for table, _ in TYPED.values():
            assert wh.sql(f"SELECT coalesce(max(global_position), 0) FROM {table}").item() <= 60
        assert wh.sql("SELECT count(*) FROM ev_observation_emitted").item() > 0
        assert wh.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'staged'").item() == 0
        r = wh.sync(sqlite_url, batch_size=20, flush_rows=30, commit_rows=50)
        assert r.events == total - 60 and r.last_position == total
        resumed = snapshot(wh)
    rebuild(str(tmp_path / "r.duckdb"), sqlite_url)
    with Warehouse(str(tmp_path / "r.duckdb")) as wh:
        assert snapshot(wh) == resumed


def test_a_sync_that_fails_mid_batch_rolls_back_to_the_last_commit(sqlite_url, tmp_path, monkeypatch):
    import inquitree.warehouse.sync as ws

    store = EventStore(sqlite_url)
    simulate(store, 3, tmp_path)
    store.close()
    calls = []
    real = ws._flush

    def flush_then_fail(con) -> None:
        calls.append(1)
        real(con)
        if len(calls) == 2:  # the second flush's rows are in the open transaction, not committed
            raise duckdb.IOException("disk full (simulated)")

    monkeypatch.setattr(ws, "_flush", flush_then_fail)
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        with pytest.raises(duckdb.IOException, match="simulated"):
            wh.sync(sqlite_url, batch_size=25, flush_rows=25, commit_rows=25)
        assert wh.checkpoint()[1] == 25
        assert wh.sql("SELECT count(*) FROM raw_events").item() == 25
        assert wh.sql("SELECT count(*) FROM ev_observation_emitted WHERE global_position > 25").item() == 0


def test_staging_on_one_thread_gives_the_threads_back(sqlite_url, tmp_path, monkeypatch):
    """Staging runs with one DuckDB thread; the parsing and the analyses after it get all of them.
    When staging the first batch fails, the sync raises that error (not the aborted transaction's
    complaint about the cleanup after it), and leaves no transaction open."""
    import inquitree.warehouse.sync as ws

    store = EventStore(sqlite_url)
    simulate(store, 2, tmp_path)
    store.close()
    seen = []
    real = ws._flush

    def flush_and_note_threads(con) -> None:
        seen.append(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        real(con)

    monkeypatch.setattr(ws, "_flush", flush_and_note_threads)
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.con.execute("SET threads = 3")
        assert wh.sync(sqlite_url, batch_size=30, flush_rows=30).events > 60
        assert len(seen) > 1 and set(seen) == {3}
        assert wh.sql("SELECT current_setting('threads')").item() == 3
    monkeypatch.setattr(ws, "_STAGE_SELECT", "SELECT no_such_column FROM incoming")
    with Warehouse(str(tmp_path / "failing.duckdb")) as wh:
        wh.con.execute("SET threads = 3")
        with pytest.raises(duckdb.BinderException, match="no_such_column"):
            wh.sync(sqlite_url)
        assert wh.sql("SELECT current_setting('threads')").item() == 3
        assert wh.sql("SELECT count(*) FROM raw_events").item() == 0 and wh.checkpoint()[1] == 0


def test_an_unreachable_store_is_named_without_its_password(tmp_path):
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        with pytest.raises(
            WarehouseError, match=r"cannot open the event store postgresql\+psycopg://u:\*\*\*@127.0.0.1:1/x"
        ):
            wh.sync("postgresql+psycopg://u:secret@127.0.0.1:1/x")
        with pytest.raises(WarehouseError, match="no event store at sqlite:///.*missing.sqlite"):
            wh.sync(f"sqlite:///{tmp_path / 'missing.sqlite'}")


def test_a_store_this_code_cannot_read_is_refused_before_anything_is_loaded(sqlite_url, tmp_path):
    """The sync opens the store read-only through the store itself: a database at a newer schema
    revision (or with none) is refused with the store's own words, and the warehouse loads nothing."""
    import sqlalchemy as sa

    with EventStore(sqlite_url) as store:
        play(resolve_tree("synthetic-diamond-4"), OracleAgent(resolve_tree("synthetic-diamond-4")), store=store)
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    engine.dispose()
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        with pytest.raises(WarehouseError, match="9999_from_the_future.*newer InquiTree"):
            wh.sync(sqlite_url)
        assert wh.sql("SELECT count(*) FROM raw_events").item() == 0 and wh.checkpoint()[1] == 0


def test_a_sync_with_nothing_to_do_leaves_the_warehouse_as_it_is(store_url, tmp_path):
    """`warehouse sync` with no new event and no changed dimension file takes no writer: the file
    is not copied, rewritten or published again (a writer copied a warehouse of any size to say
    "0 new events"); a new event, a changed tree file, another schema or another store is synced,
    or refused, by the sync itself."""
    import os
    import shutil

    from inquitree.core.game import shipped_tree_paths
    from inquitree.warehouse import up_to_date

    store = EventStore(store_url)
    simulate(store, 2, tmp_path)
    trees = tmp_path / "trees"
    trees.mkdir()
    shutil.copy(next(p for p in shipped_tree_paths() if p.stem == "synthetic-chain-7"), trees / "mine.json")
    path = str(tmp_path / "w.duckdb")

    def run(*more: str):
        return CliRunner().invoke(
            main, ["warehouse", "sync", "--db", store_url, "--warehouse", path, "--trees", str(trees), *more]
        )

    assert up_to_date(path, store_url, [trees]) is None  # no warehouse yet
    assert run().exit_code == 0
    head = store.last_position()
    assert up_to_date(path, store_url, [trees]) == head
    before = (Path(path).read_bytes(), os.stat(path).st_mtime_ns)
    again = run()
    assert again.exit_code == 0 and "0 new events in" in again.output and f"position {head:,}" in again.output
    assert (Path(path).read_bytes(), os.stat(path).st_mtime_ns) == before and not Path(path + ".next").exists()
    refused = run("--memory", "12MB")
    assert refused.exit_code != 0 and "at least 64MB" in refused.output  # as the sync refuses it
    assert up_to_date(path, store_url) is None  # the dimensions would change: a tree folder less
    os.utime(trees / "mine.json", ns=(1, 1))
    assert up_to_date(path, store_url, [trees]) is None
    assert run().exit_code == 0 and up_to_date(path, store_url, [trees]) == head
    play(resolve_tree("synthetic-diamond-4"), OracleAgent(resolve_tree("synthetic-diamond-4")), store=store, seed=7)
    assert up_to_date(path, store_url, [trees]) is None
    loaded = run()
    assert loaded.exit_code == 0 and f"{store.last_position() - head:,} new events" in loaded.output
    assert up_to_date(path, f"sqlite:///{tmp_path / 'other.sqlite'}", [trees]) is None
    # a file's own "table" that is a view over a file outside it reads nothing: it would match here
    stamp_file = tmp_path / "stamp.txt"
    with Warehouse(path) as wh:
        stamp_file.write_text(wh.sql("SELECT schema_hash FROM warehouse_schema").item())
    assert up_to_date(path, store_url, [trees]) == store.last_position()
    con = duckdb.connect(path)
    con.execute("DROP TABLE warehouse_schema")
    con.execute(f"CREATE VIEW warehouse_schema AS SELECT content AS schema_hash FROM read_text('{stamp_file}')")
    con.close()
    assert up_to_date(path, store_url, [trees]) is None
    con = duckdb.connect(path)
    con.execute("DROP VIEW warehouse_schema")
    con.execute("CREATE TABLE warehouse_schema AS SELECT 'other' AS schema_hash")
    con.close()
    assert up_to_date(path, store_url, [trees]) is None
    store.close()


def test_a_warehouse_belongs_to_one_store(sqlite_url, tmp_path):
    EventStore(sqlite_url).close()
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(sqlite_url)
        with pytest.raises(WarehouseError, match="holds events of sqlite:///.*use another --warehouse"):
            wh.sync(f"sqlite:///{tmp_path / 'other.sqlite'}")


def test_sql_metrics_equal_the_engines_recorded_scores(sqlite_url, tmp_path):
    store = EventStore(sqlite_url)
    simulate(store, 48, tmp_path)
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        summary = (Path(__file__).resolve().parent.parent / "queries" / "episode_summary.sql").read_text()
        df = wh.sql(f"""
            WITH s AS ({summary.strip().rstrip(";")})
            SELECT s.episode_id, s.coverage AS sql_coverage, s.q_sum AS sql_q_sum, s.q_norm AS sql_q_norm,
                   s.steps AS sql_steps, s.lower_bound AS sql_lo, s.upper_bound AS sql_hi,
                   s.within_bounds AS sql_within, s.hints_issued AS sql_hints, s.forced_transitions AS sql_forced,
                   e.coverage, e.q_sum, e.q_norm, e.steps, e.lower_bound, e.upper_bound, e.within_bounds,
                   e.hints_issued, e.forced_transitions
            FROM s JOIN ev_episode_scored e ON e.episode_id = s.episode_id AND e.judge_id = s.judge_id""")
    assert df.height == 48
    for row in df.iter_rows(named=True):
        for f in ("coverage", "q_sum", "q_norm"):
            assert math.isclose(row[f"sql_{f}"], row[f], abs_tol=1e-12), (row["episode_id"], f)
        assert (
            row["sql_steps"],
            row["sql_lo"],
            row["sql_hi"],
            row["sql_within"],
            row["sql_hints"],
            row["sql_forced"],
        ) == (
            row["steps"],
            row["lower_bound"],
            row["upper_bound"],
            row["within_bounds"],
            row["hints_issued"],
            row["forced_transitions"],
        )
    assert df["q_norm"].n_unique() > 3 and df["steps"].n_unique() > 5  # the episodes are not all alike
    store.close()


# --- a hand-built log: every number below is worked out by hand ------------------------------------


def _dated_trees(tmp_path: Path) -> Path:
    d = tmp_path / "trees"
    d.mkdir()
    src = json.loads(Path(resolve_tree("synthetic-diamond-4").source).read_text())
    for tid, date in (("hand-early", "2024-01-01"), ("hand-late", "2025-06-01")):
        doc = dict(src, id=tid, paper=dict(src["paper"], published=date))
        (d / f"{tid}.json").write_text(json.dumps(doc))
    return d


def _episode(store, tree_id, tree_hash, episode, model, a, visits, draws, decisions, verdicts):
    """visits: [(step, subtopic)] or [(step, subtopic, True)] for a forced entry; draws: [(step, result,
    fake)]; decisions: [(step, decision)]; verdicts: {judge: {item: score}}."""
    ev = [
        EpisodeStarted(
            episode_id=episode,
            tree_id=tree_id,
            tree_hash=tree_hash,
            tree_title="t",
            n_subtopics=4,
            params={
                "tau": 0.65,
                "max_hints": 4,
                "max_turns": 44,
                "randomness": a,
                "seed": 0,
                "embedder": "e",
                "template_set": "inquitree",
                "template_hash": "h",
            },
            agent={"kind": "openai", "model": model},
            judge={"kind": "openai"},
            code_version="test",
        )
    ]
    last = max([s for s, _, _ in draws] + [s for s, _ in decisions])
    for step in range(1, last + 1):
        ev.append(
            AgentReplied(
                step=step,
                state="x",
                raw="r",
                action="a",
                model=model,
                usage={"input": 100, "cached_input": 0, "cache_write": None, "output": 10},
            )
        )
        ev += [
            Transitioned(step=step, from_state="topic", to_state="subtopic", node=v[1], forced=v[2:] == (True,))
            for v in visits
            if v[0] == step
        ]
        ev += [
            ResultDrawn(
                step=step,
                study_id=r.replace("r", "s") + ".study",
                result_id=r,
                probability=a / 10,
                draw=0.5,
                fake=f,
                fake_index=0 if f else None,
                redo=False,
            )
            for s, r, f in draws
            if s == step
        ]
        ev += [DecisionParsed(step=step, decision=d, keywords=[d], valid=True) for s, d in decisions if s == step]
    ev.append(AgentReplied(step=last, state="conclusion", raw="(1) x", action="(1) x", model=model))
    ev.append(ConclusionSubmitted(items=["x"]))
    for judge, scores in verdicts.items():
        ev += [
            JudgeVerdict(
                judge_id=judge,
                judge={"kind": "openai"},
                prompt_version="v",
                item_id=i,
                score=s[0] if isinstance(s, tuple) else s,
                rationale=s[1] if isinstance(s, tuple) else "",
                raw_output="",
            )
            for i, s in scores.items()
        ]
    store.append(stream_id(episode), ev, 0)


@pytest.fixture
def hand_warehouse(sqlite_url, tmp_path):
    trees_dir = _dated_trees(tmp_path)
    early = json.loads((trees_dir / "hand-early.json").read_text())
    from inquitree.core.game.tree import load_tree_file

    h_early = load_tree_file(trees_dir / "hand-early.json").content_hash
    h_late = load_tree_file(trees_dir / "hand-late.json").content_hash
    assert [c["requires_results"] for c in early["conclusions"]] == [["r1"], ["r2"], ["r3", "r4"]]
    store = EventStore(sqlite_url)
    # A: level 0; visits s1, s2; r1 true; r2 fake -> redo -> r2 true; conclude at step 8.
    _episode(
        store,
        "hand-early",
        h_early,
        "A",
        "gpt-5",
        0,
        visits=[(1, "s1"), (4, "s2")],
        draws=[(2, "r1", False), (5, "r2", True), (7, "r2", False)],
        decisions=[(3, "explore_new_subtopic"), (6, "redo_study"), (8, "draw_conclusion")],
        verdicts={"j1": {"c1": 1.0, "c2": 0.6, "c3": 1.0}, "j2": {"c1": 1.0, "c2": 1.0, "c3": 1.0}},
    )
    # B: level 3; visits s1; r1 fake, not spotted (concludes at once).
    _episode(
        store,
        "hand-early",
        h_early,
        "B",
        "gpt-5",
        3,
        visits=[(1, "s1")],
        draws=[(2, "r1", True)],
        decisions=[(3, "draw_conclusion")],
        verdicts={"j1": {"c1": 1.0, "c2": 0.0, "c3": 0.0}},
    )
    # C: level 0 on the late paper; visits s1..s3 (s3 forced after the last hint); all true; a redo after
    # a true result (a false alarm).
    _episode(
        store,
        "hand-late",
        h_late,
        "C",
        "gpt-5",
        0,
        visits=[(1, "s1"), (4, "s2"), (9, "s3", True)],
        draws=[(2, "r1", False), (5, "r2", False), (7, "r2", False), (10, "r3", False)],
        decisions=[
            (3, "explore_new_subtopic"),
            (6, "redo_study"),
            (8, "explore_new_subtopic"),
            (11, "draw_conclusion"),
        ],
        verdicts={"j1": {"c1": 1.0, "c2": 1.0, "c3": 0.6}},
    )
    wh = Warehouse(str(tmp_path / "hand.duckdb"))
    wh.sync(sqlite_url, trees_dirs=[trees_dir])
    yield wh
    wh.close()
    store.close()


def rows(df: pl.DataFrame) -> list[dict]:
    return [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in df.iter_rows(named=True)]


def test_hand_built_episode_summary(hand_warehouse):
    df = hand_warehouse.query("episode_summary").filter(pl.col("judge_id") == "j1")
    got = {r["episode_id"]: r for r in rows(df)}
    # A: coverage 2/4; p = (1, 1, 0) -> Q = 1*1 + 1*0.6 + 0*1 = 1.6, q_norm = 1.6/3
    assert (got["A"]["coverage"], got["A"]["q_sum"], got["A"]["q_norm"], got["A"]["k"]) == (0.5, 1.6, 0.533333, 3)
    assert (got["A"]["steps"], got["A"]["lower_bound"], got["A"]["upper_bound"], got["A"]["within_bounds"]) == (
        8,
        12,
        44,
        False,
    )
    assert (got["A"]["result_observations"], got["A"]["fake_observations"], got["A"]["redo_decisions"]) == (3, 1, 1)
    # B: r1 was only seen as a fake -> p1 = 0 -> Q = 0
    assert (got["B"]["coverage"], got["B"]["q_sum"], got["B"]["q_norm"]) == (0.25, 0.0, 0.0)
    # C: p = (1, 1, 1/2) -> Q = 1 + 1 + 0.5*0.6 = 2.3; steps 11 < 12
    assert (got["C"]["coverage"], got["C"]["q_sum"], got["C"]["q_norm"], got["C"]["steps"]) == (0.75, 2.3, 0.766667, 11)
    # own_coverage: A and B entered their subtopics by their own moves; C's third was forced (2/4)
    assert [got[e]["own_coverage"] for e in "ABC"] == [0.5, 0.25, 0.5]


def test_hand_built_leaderboard_and_fig3(hand_warehouse):
    t2 = rows(hand_warehouse.query("table2_leaderboard").filter(pl.col("judge_id") == "j1"))
    # level 0: A (hand-early, 0.5333) and C (hand-late, 0.7667): mean over the two papers
    point = ["agent", "judge_id", "coverage", "own_coverage", "conclusion_score", "papers", "episodes"]
    assert [{k: r[k] for k in point} for r in t2] == [
        {
            "agent": "gpt-5",
            "judge_id": "j1",
            "coverage": 0.625,
            "own_coverage": 0.5,  # (2/4 + 2/4) / 2: C's forced entry into s3 is not the agent's
            "conclusion_score": 0.65,
            "papers": 2,
            "episodes": 2,
        }
    ]
    # Two papers: the standard error SE = sd(0.5333, 0.7667) / sqrt(2) = 0.116667, but no interval
    # (docs/statistics.md: below 3 papers none holds on a bounded metric), and a warning says why.
    assert (t2[0]["conclusion_score_ci_low"], t2[0]["conclusion_score_ci_high"]) == (None, None)
    assert abs(t2[0]["conclusion_score_se"] - 0.116667) < 1e-6
    assert t2[0]["interval_method"] == "no interval"
    assert t2[0]["interval_warning"].startswith("conclusion score: 2 papers: a 95% interval needs at least 3 papers")
    assert (t2[0]["rank"], t2[0]["rank_low"], t2[0]["rank_high"]) == (1, 1, 1)  # the only agent of judge j1
    f3b = {r["randomness"]: r for r in rows(hand_warehouse.query("fig3b_redo_frequency"))}
    # level 0: A 1/3, C 1/4 -> papers hand-early 1/3, hand-late 1/4 -> 0.291667; level 3: B 0/1
    assert f3b[0]["redo_frequency"] == 0.291667 and f3b[3]["redo_frequency"] == 0.0
    assert f3b[3]["relative_change_pct"] == -100.0 and f3b[0]["relative_change_pct"] == 0.0
    f3c = {r["randomness"]: r for r in rows(hand_warehouse.query("fig3c_fake_hit_rate"))}
    # level 0: one fake (A, spotted), true seen 2 (A) + 4 (C), one redo after a true result (C)
    assert (f3c[0]["fakes_seen"], f3c[0]["fakes_spotted"], f3c[0]["hit_rate"], f3c[0]["false_alarm_rate"]) == (
        1,
        1,
        1.0,
        0.166667,
    )
    assert (f3c[3]["fakes_seen"], f3c[3]["fakes_spotted"], f3c[3]["hit_rate"], f3c[3]["false_alarm_rate"]) == (
        1,
        0,
        0.0,
        None,
    )
    assert f3c[0]["control_accuracy"] is None  # no control run recorded


def test_hand_built_fig4_and_judge_agreement(hand_warehouse):
    f4 = {r["split"]: r for r in rows(hand_warehouse.query("fig4_cutoff").filter(pl.col("judge_id") == "j1"))}
    # gpt-5's cutoff is 2024-09-30: hand-early (2024-01-01) is pre, hand-late (2025-06-01) post
    assert f4["pre-cutoff"]["conclusion_score"] == 0.533333 and f4["post-cutoff"]["conclusion_score"] == 0.766667
    assert f4["pre-cutoff"]["registry_model"] == "gpt-5" and str(f4["pre-cutoff"]["cutoff"]) == "2024-09-30"
    ja = rows(hand_warehouse.query("judge_agreement"))
    # episode A: j1 (1, 0.6, 1) vs j2 (1, 1, 1): agreement 2/3, |diff| 0.4/3, p_e = 2/3 -> kappa 0
    assert ja == [
        {
            "judge_a": "j1",
            "judge_b": "j2",
            "items": 3,
            "agreement": 0.666667,
            "mean_abs_difference": 0.133333,
            "cohen_kappa": 0.0,
        }
    ]


def test_steps_bounds_query_on_the_extremes(sqlite_url, tmp_path):
    store = EventStore(sqlite_url)
    tree = resolve_tree("synthetic-chain-7")
    play(tree, OracleAgent(tree), store=store)
    play(tree, ScriptAgent(always_miss_script(tree, 4, tmp_path / "m.txt")), store=store)
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        got = {r["agent"]: r for r in rows(wh.query("steps_bounds"))}
    assert (got["oracle"]["min_steps"], got["oracle"]["share_at_lower_bound"]) == (21, 1.0)
    assert (got["script"]["max_steps"], got["script"]["share_at_upper_bound"], got["script"]["upper_bound"]) == (
        77,
        1.0,
        77,
    )
    store.close()


def test_cli_query_sql_and_export(sqlite_url, tmp_path):
    store = EventStore(sqlite_url)
    tree = resolve_tree("synthetic-diamond-4")
    play(tree, OracleAgent(tree), store=store)
    n_events = store.last_position()
    store.close()
    runner = CliRunner()
    w = str(tmp_path / "w.duckdb")
    synced = runner.invoke(main, ["warehouse", "sync", "--db", sqlite_url, "--warehouse", w])
    assert synced.exit_code == 0 and "new events" in synced.output
    csv = runner.invoke(main, ["query", "steps_bounds", "--warehouse", w, "--format", "csv"])
    row = "synthetic-diamond-4,oracle,4,4,12,44,1,12,12.0,,,,12,1,1.0,1.0,0.0,0,"
    assert csv.output.splitlines()[1].startswith(row)
    js = runner.invoke(main, ["query", "episode_summary", "--warehouse", w, "--format", "json"])
    assert json.loads(js.output)[0]["q_norm"] == 1.0
    pq = tmp_path / "t2.parquet"
    runner.invoke(main, ["query", "table2_leaderboard", "--warehouse", w, "--format", "parquet", "--out", str(pq)])
    assert pl.read_parquet(pq)["conclusion_score"].to_list() == [1.0]
    assert runner.invoke(
        main, ["sql", "SELECT count(*) AS n FROM ev_result_drawn", "--warehouse", w, "--format", "csv"]
    ).output.splitlines() == ["n", "4"]
    listing = runner.invoke(main, ["query", "--list"]).output
    assert "fig3c_fake_hit_rate" in listing and "Figure 3c" in listing
    # At 80 columns each description wraps under itself and ends at a word: none is cut mid-word
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(main, ["query", "--list"]).output.splitlines()
    assert max(map(len, narrow)) <= 80 and narrow[-1].startswith("(each query's whole description")
    said = " ".join(ln[29:] for ln in narrow[:-1] if ln.startswith("compare ") or ln.startswith(" " * 29))
    assert said.split(" …")[0].startswith("Paired comparison of agents") and "ove all" not in said
    bad = runner.invoke(main, ["query", "nope", "--warehouse", w])
    assert bad.exit_code == 2 and "no query 'nope'; available: " in bad.output and "episode_summary" in bad.output
    out = runner.invoke(main, ["warehouse", "export", "--warehouse", w, "--parquet", str(tmp_path / "pq")])
    assert out.exit_code == 0 and (tmp_path / "pq" / "ev_result_drawn.parquet").exists()
    assert pl.read_parquet(tmp_path / "pq" / "raw_events.parquet").height == n_events
    # A query past the memory limit names the setting to raise, not DuckDB's SQL settings
    big = "SELECT length(string_agg(repeat('x', 1000), '')) FROM range(200000)"  # a 200 MB string
    out = runner.invoke(main, ["sql", big, "--warehouse", w], env={"INQUITREE_WAREHOUSE_MEMORY": "64MB"})
    assert out.exit_code == 2 and "limit (64 MB, $INQUITREE_WAREHOUSE_MEMORY): set it higher" in out.output, out.output
    assert "SET " not in out.output


def test_every_query_names_what_it_computes():
    qdir = Path(__file__).resolve().parent.parent / "queries"
    for p in qdir.glob("*.sql"):
        first = p.read_text().splitlines()[0]
        assert first.startswith("-- ") and any(
            w in first for w in ("Table", "Figure", "Eq.", "Sec.", "Steps", "Judge", "Episode", "Costs", "Paired")
        ), p.name
    # Each query that reports a mean names its interval method in its header (#25).
    means = {"table2_leaderboard", "fig3a_score_by_randomness", "fig3b_redo_frequency", "fig3c_fake_hit_rate"}
    means |= {"fig4_cutoff", "steps_bounds", "control_accuracy", "compare"}
    for name in means:
        header = "".join(ln for ln in (qdir / f"{name}.sql").read_text().splitlines() if ln.startswith("--"))
        assert "warehouse/intervals.py" in header or "paired_ci" in header, name
        assert "_ci" in header, name


def test_the_large_backlog_readers_give_identical_tables(store_url, tmp_path, monkeypatch):
    """Large backlogs are read Arrow-natively (SQLite: ADBC in a child process; PostgreSQL: ADBC);
    small ones row by row in-process (sqlite3, psycopg)."""
    import inquitree.warehouse.sources as wsrc

    store = EventStore(store_url)
    simulate(store, 2, tmp_path)
    if not store_url.startswith("sqlite"):
        # A gap in the positions wider than a range, as stores recorded before positions were
        # dense (schema 0001: appends that rolled back left gaps in the sequence) still have, so that
        # the PostgreSQL readers meet an empty range between full ones.
        position, digest = store.head()
        store._log_head = (position + 250, digest)
    simulate(store, 2, tmp_path)
    store.close()
    rebuild(str(tmp_path / "small.duckdb"), store_url)
    monkeypatch.setattr(wsrc, "LARGE_BACKLOG", 0)
    started = []
    for cls in (wsrc._ChildSource, wsrc._AdbcPostgresSource):
        monkeypatch.setattr(
            cls,
            "__init__",
            lambda self, *a, _real=cls.__init__, _cls=cls: (started.append(_cls.__name__), _real(self, *a))[1],
        )
    rebuild(str(tmp_path / "large.duckdb"), store_url, batch_size=100)
    assert started == ["_ChildSource" if store_url.startswith("sqlite") else "_AdbcPostgresSource"]
    with Warehouse(str(tmp_path / "small.duckdb")) as a, Warehouse(str(tmp_path / "large.duckdb")) as b:
        assert snapshot(a) == snapshot(b)
        if not store_url.startswith("sqlite"):
            gaps = (
                "SELECT count(*) FROM (SELECT global_position - lag(global_position) OVER (ORDER BY global_position)"
                " AS d FROM raw_events) WHERE d > 100"
            )
            assert b.sql(gaps).item() == 1


def test_a_large_backlog_of_another_backend_is_read_through_the_store(sqlite_url, tmp_path, monkeypatch):
    """A backend the warehouse has no bulk reader for is read through the store's own interface,
    whatever the backlog: the PostgreSQL driver is never pointed at a database of another kind."""
    import inquitree.warehouse.sources as wsrc

    store = EventStore(sqlite_url)
    simulate(store, 1, tmp_path)
    store.close()
    monkeypatch.setattr(wsrc, "LARGE_BACKLOG", 0)
    real = wsrc._Source.__init__

    def another_backend(self, url):
        real(self, url)
        self.backend = "another"

    monkeypatch.setattr(wsrc._Source, "__init__", another_backend)
    source = wsrc.open_source(sqlite_url, 0, 100)
    try:
        assert type(source) is wsrc._Source
        assert sum(batch.num_rows for batch in source.batches(0, 100)) == source.last_position()
    finally:
        source.close()


def test_a_batch_larger_than_a_row_group_is_loaded_whole(sqlite_url, tmp_path, monkeypatch):
    """One staged insert of over 122,880 rows (a DuckDB row group): with the staging table made by
    `CREATE TABLE ... AS SELECT ... LIMIT 0` inside the sync's transaction, DuckDB 2.0.0 hid all
    of those rows from the parse, and the sync reported them loaded. The store here is a few
    simulated episodes copied under new stream ids until it holds 130k+ events (copied rows keep
    their source's hashes: the sync does not verify the chain, and nothing else reads this store)."""
    import sqlite3

    import inquitree.warehouse.sources as wsrc

    store = EventStore(sqlite_url)
    simulate(store, 3, tmp_path)
    store.close()
    db = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    base = db.execute("SELECT count(*) FROM events").fetchone()[0]
    copies = -(-130_000 // base)
    db.execute(
        """INSERT INTO events (stream_id, stream_version, event_type, schema_version, recorded_at, payload,
                                      prev_hash, hash)
                  WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
                  SELECT stream_id || '-copy' || i, stream_version, event_type, schema_version, recorded_at, payload,
                         prev_hash, hash FROM events, k ORDER BY i, global_position""",
        [copies],
    )
    db.commit()
    by_type = dict(db.execute("SELECT event_type, count(*) FROM events GROUP BY event_type").fetchall())
    total = db.execute("SELECT count(*) FROM events").fetchone()[0]
    db.close()
    assert total > 130_000
    monkeypatch.setattr(wsrc, "LARGE_BACKLOG", total + 1)  # the in-process reader: all of it in one batch
    report = rebuild(str(tmp_path / "w.duckdb"), sqlite_url, batch_size=total, flush_rows=total)
    assert report.events == total
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        assert wh.sql("SELECT count(*) FROM raw_events").item() == total
        for event_type, (table, _) in TYPED.items():
            assert wh.sql(f"SELECT count(*) FROM {table}").item() == by_type.get(event_type, 0), table


def test_the_sqlite_reader_child_is_stopped_and_its_spool_removed(sqlite_url, tmp_path, monkeypatch):
    """The child reads ahead at most a few chunks into its spool directory; when the sync stops
    early, or finishes, the child is gone and so is the spool with its Arrow files. A spool left
    by a process that no longer exists is removed by the next sync."""
    import inquitree.warehouse.reader as wr
    import inquitree.warehouse.sources as wsrc

    store = EventStore(sqlite_url)
    simulate(store, 4, tmp_path)
    store.close()
    monkeypatch.setattr(wsrc, "LARGE_BACKLOG", 0)
    children = []
    monkeypatch.setattr(
        wsrc._ChildSource,
        "__init__",
        lambda self, *a, _real=wsrc._ChildSource.__init__: (_real(self, *a), children.append(self))[0],
    )
    spooled = []

    def stop_at_the_third_chunk(n: int, pos: int) -> None:
        spooled.append(len(list(Path(children[0].spool).iterdir())))
        if len(spooled) == 3:
            raise KeyboardInterrupt

    import subprocess
    import sys
    import tempfile

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    where = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    left = where / f"inquitree-sync-{dead.stdout.strip()}-killed"  # as a killed sync would leave it
    left.mkdir()
    (left / "000000-000000.arrow").write_bytes(b"x")
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        with pytest.raises(KeyboardInterrupt):
            wh.sync(sqlite_url, batch_size=16, progress=stop_at_the_third_chunk)
        assert not left.exists()
        # announced and not yet taken (WINDOW), plus the chunks of the ranges read ahead (each
        # range is 2 * 16 positions: at most 3 files); without the bounds it held 30-odd here
        assert max(spooled) <= wr.WINDOW + (wr.AHEAD + 1) * 3
        assert children[0].proc.poll() is not None and not Path(children[0].spool).exists()
        r = wh.sync(sqlite_url, batch_size=16)
        assert wh.checkpoint()[1] == r.last_position and children[1].proc.returncode == 0
        assert not Path(children[1].spool).exists()


def test_a_failing_reader_child_is_reported_with_its_error(tmp_path):
    import sqlite3

    import inquitree.warehouse.sources as wsrc

    sqlite3.connect(tmp_path / "not-a-store.sqlite").execute("CREATE TABLE other (x)").connection.close()
    src = wsrc._ChildSource(str(tmp_path / "not-a-store.sqlite"), 0, 100, 100)
    try:
        with pytest.raises(WarehouseError, match="the store reader failed: .*no such table: events"):
            list(src.batches(0, 100))
    finally:
        src.close()
    assert not Path(src.spool).exists()


def test_a_reader_child_that_finishes_first_does_not_stall_the_sync(sqlite_url, tmp_path, monkeypatch):
    """The child exits after its last chunk; the parent then acknowledges the chunks it still
    holds into a closed pipe. A buffered acknowledgement used to fail again when the source was
    closed, the reader thread died before it could say it was done, and the sync waited forever."""
    import threading
    import time

    import inquitree.warehouse.sources as wsrc

    store = EventStore(sqlite_url)
    simulate(store, 2, tmp_path)
    store.close()
    monkeypatch.setattr(wsrc, "LARGE_BACKLOG", 0)
    result = []

    def sync() -> None:
        with Warehouse(str(tmp_path / "w.duckdb")) as wh:  # each chunk is slow to load: the child finishes first
            result.append(wh.sync(sqlite_url, batch_size=40, progress=lambda n, pos: time.sleep(0.1)))

    worker = threading.Thread(target=sync, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the sync stalled"
    assert result and result[0].last_position == EventStore(sqlite_url).last_position()


@pytest.mark.parametrize("reader", ["in-process", "child"])
def test_events_stored_at_an_older_schema_version_are_upcast_at_load(sqlite_url, tmp_path, monkeypatch, reader):
    """An AgentReplied stored at v1 (one token total) among current events lands in the typed
    table in its v2 shape, and raw_events records the version it was loaded at."""
    import sqlite3

    import inquitree.warehouse.sources as wsrc

    store = EventStore(sqlite_url)
    simulate(store, 1, tmp_path)
    store.close()
    v1 = '{"action":"x","latency_ms":1.0,"model":"m","raw":"ACTION: x","state":"topic","step":1,"tokens":321}'
    db = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    db.execute(
        "INSERT INTO events (stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
        "prev_hash, hash) VALUES ('old', 1, 'AgentReplied', 1, '2026-01-01T00:00:00.000000Z', ?, '', '')",
        [v1],
    )
    # a v2 reply: its upcast to v3 only adds fields that say "not recorded", so it loads as stored
    v2 = '{"action":"y","latency_ms":1.0,"model":"m","raw":"ACTION: y","state":"topic","step":1,"usage":{"input":7}}'
    db.execute(
        "INSERT INTO events (stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
        "prev_hash, hash) VALUES ('old2', 1, 'AgentReplied', 2, '2026-01-01T00:00:00.000000Z', ?, '', '')",
        [v2],
    )
    db.commit()
    position = db.execute("SELECT global_position FROM events WHERE stream_id = 'old'").fetchone()[0]
    position2 = db.execute("SELECT global_position FROM events WHERE stream_id = 'old2'").fetchone()[0]
    db.close()
    if reader == "child":
        monkeypatch.setattr(wsrc, "LARGE_BACKLOG", 0)
    rebuild(str(tmp_path / "w.duckdb"), sqlite_url)
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        assert wh.sql(f"SELECT schema_version FROM raw_events WHERE global_position = {position}").item() == 3
        assert wh.sql(f"SELECT schema_version FROM raw_events WHERE global_position = {position2}").item() == 2
        assert wh.sql(
            f"SELECT raw, input_tokens, finish_reason FROM ev_agent_replied WHERE global_position = {position2}"
        ).row(0) == ("ACTION: y", 7, None)
        row = wh.sql(
            f"SELECT raw, model, step, input_tokens, output_tokens FROM ev_agent_replied "
            f"WHERE global_position = {position}"
        ).row(0)
        assert row == ("ACTION: x", "m", 1, None, None)
        assert wh.sql("SELECT count(*) FROM ev_agent_replied").item() > 1


def test_a_bad_price_table_stops_the_sync_before_it_commits_anything(sqlite_url, tmp_path):
    """The dimension rows are read beside the loading; their error still comes before any commit."""
    store = EventStore(sqlite_url)
    simulate(store, 2, tmp_path)
    store.close()
    bad = tmp_path / "prices.json"
    bad.write_text('{"prices": [{"model": "m"}]}')
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        with pytest.raises(WarehouseError, match=r"prices\.json: not a price table \(m: input_per_mtok is missing\)"):
            wh.sync(sqlite_url, prices=bad)
        assert wh.checkpoint() == (None, 0) and wh.sql("SELECT count(*) FROM raw_events").item() == 0
        assert wh.sql("SELECT count(*) FROM trees").item() == 0
        r = wh.sync(sqlite_url)
        assert r.last_position == wh.checkpoint()[1] > 0 and wh.sql("SELECT count(*) FROM trees").item() >= 3
        wh.sync(sqlite_url)  # nothing new: the dimensions are already there and stay
        assert wh.sql("SELECT count(*) FROM trees").item() >= 3
        with pytest.raises(WarehouseError, match="not a price table"):  # nothing new, and a bad price table
            wh.sync(sqlite_url, prices=bad)
        assert wh.sync(sqlite_url).events == 0  # no transaction was left open by the failure


def test_a_warehouse_of_another_schema_asks_for_a_rebuild(sqlite_url, tmp_path):
    """Opening checks the schema stamp and skips the DDL when it matches; another stamp is an error."""
    EventStore(sqlite_url).close()
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sql("UPDATE warehouse_schema SET schema_hash = 'f00dfeedcafe0123'")
    for read_only in (False, True):  # a reader, too: its tables are not this code's
        with pytest.raises(
            WarehouseError,
            match=r"w\.duckdb was built by another InquiTree version, with other tables \(schema "
            r"f00dfeedcafe; inquitree "
            + re.escape(__version__)
            + r" has [0-9a-f]{12}\): run `inquitree warehouse rebuild`",
        ) as refused:
            Warehouse(path, read_only=read_only)
        # the refused writer let the writer lock go, while its traceback (and object) still live
        _WriterLock(path, 0).release()
        assert refused.value is not None
    rebuild(path, sqlite_url)
    with Warehouse(path) as wh:
        assert wh.sql("SELECT count(*) FROM warehouse_schema").item() == 1
        assert wh.sql("SELECT count(*) FROM episodes").item() == 0  # the views exist


def test_a_warehouse_with_other_views_takes_this_codes_views_without_a_rebuild(sqlite_url, tmp_path):
    """Views hold no data: a writer opening a warehouse whose tables match this code's but whose
    views do not (an upgrade that changed views.sql) replaces them, drops views this code no longer
    has, and keeps every row; other tables still ask for a rebuild (the test above)."""
    import inquitree.warehouse.warehouse as ws

    store = EventStore(sqlite_url)
    simulate(store, 2, tmp_path)
    store.close()
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(sqlite_url)
        before = snapshot(wh)
        episodes = wh.sql("SELECT count(*) FROM episodes").item()
        wh.con.execute("CREATE OR REPLACE VIEW episodes AS SELECT 1 AS stale")
        wh.con.execute("CREATE VIEW gone_in_this_version AS SELECT 1 AS x")
        wh.con.execute('CREATE VIEW "x""; DROP TABLE raw_events; --" AS SELECT 1 AS x')  # a name, not SQL
        wh.con.execute("UPDATE warehouse_schema SET schema_hash = ?", [f"{ws.TABLES_HASH}:0ld"])
    # A reader cannot replace the file's views: it reads through this code's, made for its
    # connection, and leaves the file as it was; `query` and `sql` give this code's answers.
    with Warehouse(path, read_only=True) as wh:
        assert wh.sql("SELECT count(*) FROM episodes").item() == episodes == 2
        assert wh.sql("SELECT schema_hash FROM warehouse_schema").item() == f"{ws.TABLES_HASH}:0ld"
    count = "SELECT count(*) AS n FROM episodes"
    out = CliRunner().invoke(main, ["sql", count, "--warehouse", path, "--format", "csv"])
    assert (out.exit_code, out.output.split()) == (0, ["n", "2"]), out.output
    out = CliRunner().invoke(main, ["query", "table2_leaderboard", "--warehouse", path, "--format", "csv"])
    assert out.exit_code == 0 and "oracle,embedding" in out.output, out.output  # the stale view has no agent
    with Warehouse(path) as wh:
        assert wh.sql("SELECT schema_hash FROM warehouse_schema").item() == ws.SCHEMA_HASH
        assert wh.sql("SELECT count(*) FROM episodes").item() == episodes == 2
        views = set(wh.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal")["view_name"])
        assert not views & {"gone_in_this_version", 'x"; DROP TABLE raw_events; --'}
        assert {"episodes", "pair_keys"} <= views
        assert snapshot(wh) == before


def test_fig4_keeps_every_episode_and_takes_a_registry_file(sqlite_url, tmp_path):
    """A year-only date across the cutoff is 'date undetermined'; an agent with no registry entry
    is 'cutoff unknown'; --registry adds a cutoff for it, and an entry replaces a shipped one."""
    from inquitree.core.game.tree import load_tree_file, publication_window

    assert publication_window({"published": "2024"}) == ("2024-01-01", "2024-12-31")
    assert publication_window({"published": "2024-02"}) == ("2024-02-01", "2024-02-29")
    assert publication_window({"published": None, "published_not_before": "2023-01-01"}) == ("2023-01-01", None)
    d = tmp_path / "trees"
    d.mkdir()
    src = json.loads(Path(resolve_tree("synthetic-diamond-4").source).read_text())
    for tid, date in (("y-early", "2023-05-01"), ("y-2024", "2024")):
        (d / f"{tid}.json").write_text(json.dumps(dict(src, id=tid, paper=dict(src["paper"], published=date))))
    store = EventStore(sqlite_url)
    one = {"visits": [(1, "s1")], "draws": [(2, "r1", False)], "decisions": [(3, "draw_conclusion")]}
    for i, (tid, model) in enumerate([("y-early", "gpt-5"), ("y-2024", "gpt-5"), ("y-early", "mystery-model")]):
        h = load_tree_file(d / f"{tid}.json").content_hash
        _episode(store, tid, h, f"E{i}", model, 0, verdicts={"j1": {"c1": 1.0, "c2": 0.0, "c3": 0.0}}, **one)
    store.close()
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url, trees_dirs=[d])
        got = {(r["agent"], r["split"]): r for r in wh.query("fig4_cutoff").to_dicts()}
    # gpt-5's cutoff is 2024-09-30: 2023-05-01 is before it; the year 2024 straddles it.
    assert set(got) == {("gpt-5", "pre-cutoff"), ("gpt-5", "date undetermined"), ("mystery-model", "cutoff unknown")}
    assert got[("gpt-5", "date undetermined")]["trees"] == "y-2024"
    assert sum(r["episodes"] for r in got.values()) == 3  # nothing dropped
    registry = tmp_path / "models.json"
    registry.write_text(
        json.dumps(
            {
                "models": [
                    {"model": "mystery-model", "cutoff": "2023-01-01", "source": "test"},
                    {"model": "gpt-5", "cutoff": "2025-01-01", "source": "test: replaces the shipped entry"},
                ]
            }
        )
    )
    with Warehouse(str(tmp_path / "w2.duckdb")) as wh:
        wh.sync(sqlite_url, trees_dirs=[d], registry=registry)
        got = {(r["agent"], r["split"]): r for r in wh.query("fig4_cutoff").to_dicts()}
        models = wh.sql("SELECT count(*) FROM model_registry WHERE model = 'o3'").item()
    assert set(got) == {("gpt-5", "pre-cutoff"), ("mystery-model", "post-cutoff")}
    assert got[("gpt-5", "pre-cutoff")]["papers"] == 2 and str(got[("gpt-5", "pre-cutoff")]["cutoff"]) == "2025-01-01"
    assert models == 1  # the shipped registry is extended, not replaced
    with Warehouse(str(tmp_path / "w2.duckdb")) as wh:  # each entry names its file; the shipped one by its place
        files = dict(wh.sql("SELECT model, registry FROM model_registry WHERE model IN ('o3', 'mystery-model')").rows())
    assert files == {"o3": "trees/registry/models.json", "mystery-model": str(registry)}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": [{"model": "x", "cutoff": "June 2024"}]}))
    with (
        Warehouse(str(tmp_path / "w3.duckdb")) as wh,
        pytest.raises(WarehouseError, match=r"models\[0\] \(x\): cutoff 'June 2024'"),
    ):
        wh.sync(sqlite_url, trees_dirs=[d], registry=bad)


def test_the_memory_setting_bounds_duckdb_and_the_sync_windows(sqlite_url, tmp_path, monkeypatch):
    from inquitree.warehouse.sync import sync_windows
    from inquitree.warehouse.warehouse import memory_bytes

    assert memory_bytes("512MB") == 512 * 10**6 and memory_bytes("1.5GiB") == 3 * 2**29
    assert sync_windows(memory_bytes("512MB")) == (512_000, 1_024_000)
    assert sync_windows(memory_bytes("64MB")) == (64_000, 128_000)
    assert sync_windows(memory_bytes("8GB")) == (1_000_000, 2_000_000)  # the old fixed windows at most
    store = EventStore(sqlite_url)
    simulate(store, 1, tmp_path)
    store.close()
    with Warehouse(str(tmp_path / "w.duckdb"), memory="256MiB") as wh:
        limit = wh.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        wh.sync(sqlite_url)
        assert wh.con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0] == wh.path + ".tmp"
    assert limit == "256.0 MiB", limit
    monkeypatch.setenv("INQUITREE_WAREHOUSE_MEMORY", "lots")
    with pytest.raises(WarehouseError, match=r"INQUITREE_WAREHOUSE_MEMORY='lots': expected a size such as 512MB"):
        Warehouse(str(tmp_path / "w2.duckdb"))
    monkeypatch.setenv("INQUITREE_WAREHOUSE_MEMORY", "1MB")
    with pytest.raises(WarehouseError, match="at least 64MB"):
        Warehouse(str(tmp_path / "w2.duckdb"))


@pytest.mark.parametrize("cutoff", ["2024-13-01", "2024-02-30", "2024-1-5"])
def test_a_registry_date_that_does_not_exist_is_named(sqlite_url, tmp_path, cutoff):
    """It used to end in a DuckDB conversion traceback; now the file, the entry and the value."""
    registry = tmp_path / "models.json"
    registry.write_text(
        json.dumps({"models": [{"model": "m", "cutoff": "2024-01-01"}, {"model": "x", "cutoff": cutoff}]})
    )
    EventStore(sqlite_url).close()
    out = CliRunner().invoke(
        main,
        [
            "warehouse",
            "sync",
            "--db",
            sqlite_url,
            "--warehouse",
            str(tmp_path / "w.duckdb"),
            "--registry",
            str(registry),
        ],
    )
    assert out.exit_code == 2 and out.output.startswith("inquitree: error: "), out.output
    assert f"model registry {registry}: models[1] (x): cutoff {cutoff!r} is not a date" in out.output
    assert not (tmp_path / "w.duckdb").exists()


def test_the_events_table_is_described_once():
    """The store describes its table (events/schema.py for the schema, INSERT_COLUMNS for its rows)
    and owns the one query projections read it with (notifications_sql); the warehouse's raw table
    follows those columns."""
    from inquitree.events.database import INSERT_COLUMNS, NOTIFICATION_COLUMNS, notifications_sql
    from inquitree.events.schema import events as events_table
    from inquitree.warehouse.schema import RAW_COLUMNS

    assert sorted(c.name for c in events_table.columns) == sorted(INSERT_COLUMNS)
    assert [c for c, _ in RAW_COLUMNS] == list(NOTIFICATION_COLUMNS[:-1]) and NOTIFICATION_COLUMNS[-1] == "payload"
    assert notifications_sql("?", upto="?") == (
        "SELECT global_position, stream_id, stream_version, event_type, schema_version, recorded_at, payload "
        "FROM events WHERE global_position > ? AND global_position <= ? ORDER BY global_position"
    )


def test_judge_flags_catch_a_judge_that_contradicts_itself_or_never_varies(sqlite_url, tmp_path):
    """the same model as judge gave 0.6 to every item and said in its rationales that
    the items were not stated. Judge "self" does that here; "careful" varies and agrees with itself."""
    trees_dir = _dated_trees(tmp_path)
    from inquitree.core.game.tree import load_tree_file

    h_early = load_tree_file(trees_dir / "hand-early.json").content_hash
    store = EventStore(sqlite_url)
    absent = "The conclusions do not mention the reward location at all."
    _episode(
        store,
        "hand-early",
        h_early,
        "A",
        "gpt-5",
        0,
        visits=[(1, "s1")],
        draws=[(2, "r1", False)],
        decisions=[(3, "draw_conclusion")],
        verdicts={
            "self": {"c1": (0.6, absent), "c2": (0.6, "Not stated in the conclusions."), "c3": (0.6, "Partly stated.")},
            "careful": {"c1": (0.0, absent), "c2": (1.0, "Stated exactly."), "c3": (0.6, "Partly stated.")},
        },
    )
    store.close()
    with Warehouse(str(tmp_path / "flags.duckdb")) as wh:
        wh.sync(sqlite_url)
        rows = {r["judge_id"]: r for r in wh.query("judge_flags").to_dicts()}
    assert rows["self"]["verdicts_contradicting_rationale"] == 2 and rows["self"]["episodes_never_varying"] == 1
    assert rows["self"]["flag_warning"] == (
        "2 of 3 verdicts give credit while their rationale says the item is absent; 1 of 1 episodes got one score "
        "for every item"
    )
    assert rows["careful"]["verdicts_contradicting_rationale"] == 0 and rows["careful"]["flag_warning"] is None


def test_the_facts_kept_follow_new_episodes_and_other_views(sqlite_url, tmp_path):
    """episode_facts and episode_evidence (schema.FACTS) are what the events give: after a sync,
    after another episode is appended and synced, and on a file whose views were another code's (a
    reader computes them; a writer recomputes what the file keeps). Their columns are the macros'."""
    store = EventStore(sqlite_url)
    simulate(store, 4, tmp_path)
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(sqlite_url)
        facts_are_the_events(wh)
        for table, macro in FACT_MACROS.items():
            assert wh.sql(f"DESCRIBE {table}").rows() == wh.sql(f"DESCRIBE SELECT * FROM {macro}(0, true)").rows()
        episode = wh.sql("SELECT episode_id FROM episode_facts ORDER BY episode_id LIMIT 1").item()
    play(resolve_tree("synthetic-chain-7"), OracleAgent(resolve_tree("synthetic-chain-7")), store=store, seed=77)
    store.close()
    with Warehouse(path) as wh:
        assert wh.sync(sqlite_url).events > 0
        facts_are_the_events(wh)
        # Another code's views: the stamp's second hash differs, and a facts row is not the events'.
        wh.con.execute("UPDATE episode_facts SET steps = -1 WHERE episode_id = ?", [episode])
        wh.con.execute("UPDATE warehouse_schema SET schema_hash = split_part(schema_hash, ':', 1) || ':other'")
    with Warehouse(path, read_only=True) as reader:
        assert reader.sql(f"SELECT steps FROM all_episodes WHERE episode_id = '{episode}'").item() >= 0
    with Warehouse(path) as wh:  # a writer takes this code's views and recomputes every fact
        facts_are_the_events(wh)
        assert wh.sql(f"SELECT steps FROM episode_facts WHERE episode_id = '{episode}'").item() >= 0
