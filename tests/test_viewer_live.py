"""The viewer's live parts without a browser: a campaign's cells folded from the store (every state,
with the reason a cell failed), the read-only store connection the fold reads through (on both
backends, writes are refused by the database, not only by this code), and the tree picture, whose
texts reach Graphviz quoted and the page escaped."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.game.tree import load_tree_file, resolve_tree
from inquitree.core.run.campaign import Suite, _CampaignRun, run_suite
from inquitree.core.run.cells import ENDED, MOST_DONE
from inquitree.core.run.runner import stream_id
from inquitree.events.errors import StoreError
from inquitree.events.names import campaign_stream, cells_of
from inquitree.events.store import EventStore
from inquitree.events.types import CampaignEnded, CampaignStarted, EpisodeInterrupted, EpisodeScored, EpisodeStarted
from inquitree.viewer.live import Campaigns
from inquitree.viewer.treeview import dot_quote, episode_path, tree_dot, tree_svg

from enginekit import OracleAgent, play
from openai_server import OpenAICompatibleServer
from tests_support import Noted


def test_a_campaigns_cells_are_folded_from_the_store(store_url, tmp_path):
    """Twelve cells: the oracle's finish, the model agent's first call gets a 500 (failed, with the
    reason), its second run ends at max_turns (limit), one cell begun by hand and left (running, then
    interrupted once it has been quiet for longer than stale_seconds), the rest pending; tokens are
    the model's calls' usage."""
    with OpenAICompatibleServer(["ACTION: (1) nothing"] * 50) as server:
        server.faults = [500]
        suite_file = tmp_path / "fold.toml"
        suite_file.write_text(
            'name = "fold test"\ntrees = ["synthetic-diamond-4"]\nagents = ["oracle", "openai:m"]\n'
            'randomness = [0]\nruns = 1\nembedder = "hash"\nretries = 0\nmax_retries = 0\nmax_turns = 14\n'
            f'base_url = "{server.base_url}"\n'
        )
        with EventStore(store_url) as store:
            assert run_suite(Suite.load(suite_file), store).failed == 1
            bigger = Suite.load(suite_file, ["oracle", "openai:m", "random"])
            bigger.runs, bigger.episode["max_turns"] = 4, 4  # cells: oracle r0-r3, openai:m r0-r3, random r0-r3
            assert run_suite(bigger, store, shard=(6, 12)).done == 1  # openai:m r1 only
            eid = bigger.cells()[9].episode_id(bigger.name)  # random r1: begun here and left
            store.append(stream_id(eid), [_started(eid)], 0)
            recorded = [r.event for r in store.read_stream(campaign_stream("fold test"))]
    starts = [e for e in recorded if isinstance(e, CampaignStarted)]
    assert [type(e).__name__ for e in recorded] == [
        "CampaignStarted",
        "CampaignEnded",
        "CampaignStarted",
        "CampaignEnded",
    ]
    assert [e.how for e in recorded if isinstance(e, CampaignEnded)] == ["finished", "finished"]
    assert len(starts) == 2 and starts[0].run_id != starts[1].run_id
    assert starts[1].agents == ["oracle", "openai:m", "random"] and starts[1].shard == [6, 12]

    live = Campaigns(store_url, stale_seconds=3600)
    try:
        assert live.names() == ["fold-test"]
        state = live.summary("fold-test")
        assert state is not None and state["cells"] == 12 and state["runs"] == 2
        by_state = {}
        for cell, (st, note) in state["states"].items():
            by_state.setdefault(st, []).append((cell, note))
        # Both runs recorded their end: the cell begun and left by hand belongs to no live process.
        assert {k: len(v) for k, v in by_state.items()} == {
            "finished": 1,
            "failed": 1,
            "limit": 1,
            "interrupted": 1,
            "pending": 8,
        }
        assert (state["status"], state["active"]) == ("finished", False)
        [(failed, why)] = by_state["failed"]
        assert ".openai-m." in failed and "500" in why and why.startswith("failed at step")
        assert "max_turns (4)" in by_state["limit"][0][1]
        assert state["tokens"] > 0
        # `suite status` and a resumed `suite run` tell the cells' states as the page does (one fold, one rule).
        same = tmp_path / "same.toml"
        same.write_text(
            suite_file.read_text().replace('"openai:m"]', '"openai:m", "random"]').replace("runs = 1", "runs = 4")
            .replace("max_turns = 14", "max_turns = 4")
        )  # fmt: skip
        said = CliRunner().invoke(main, ["suite", "status", str(same), "--db", store_url])
        assert said.output.startswith(
            "suite fold test: 1 finished, 1 ended by a limit, 1 failed, 1 interrupted, 8 not started\n"
        ), said.output
        # which agent and which limit, and each failure's agent, said once with their count
        said_once = " ".join(said.output.split())
        assert "ended by a limit: 1 cell of" in said_once and "the max_turns (4) limit" in said_once, said.output
        assert "failed: 1 cell of openai:m" in said_once, said.output
        with EventStore(store_url) as store:
            todo = _CampaignRun(Suite.load(same), store, (1, 1), threading.Event(), None).todo
        assert {eid for _, eid in todo} == {eid for eid, (st, _) in state["states"].items() if st not in ENDED}
        # A third run starts and says nothing more: running while it is heard from, then died.
        with EventStore(store_url) as store:
            sid = campaign_stream("fold test")
            alive = dataclasses.replace(starts[1], run_id="third")
            store.append(sid, [alive], store.current_version(sid))
        live.refresh(force=True)
        now = live.summary("fold-test")
        assert now is not None and now["status"] == "running" and now["active"] and now["counts"]["running"] == 1
        later = live.summary("fold-test", now=time.time() + 7200)
        assert later is not None and later["status"] == "died" and not later["active"]
        assert later["counts"]["interrupted"] == 1 and "running" not in [v[0] for v in later["states"].values()]
        # Appended after the first look: folded from the tail, not read again from the start.
        with EventStore(store_url) as store:
            store.append(stream_id(eid), [Noted(n=1)], 1)
        position = live.refresh(force=True)
        assert position == live.store.last_position()
        layout = live.layout("fold-test")
        assert layout is not None and len(layout["rows"]) == 3 and len(layout["columns"]) == 4
        # A recorded interruption is shown as one at once, with why, while the campaign is alive.
        with EventStore(store_url) as store:
            interrupted = EpisodeInterrupted(step=0, reason="interrupt", during="agent call")
            store.append(stream_id(eid), [interrupted], 2)
        live.refresh(force=True)
        now = live.summary("fold-test")
        assert now is not None and now["active"]
        assert tuple(now["states"][eid]) == ("interrupted", "stopped at step 0 (Ctrl-C)")
    finally:
        live.close()


def _started(eid: str) -> EpisodeStarted:
    return EpisodeStarted(
        episode_id=eid,
        tree_id="synthetic-diamond-4",
        tree_hash="x",
        tree_title="t",
        n_subtopics=4,
        params={},
        agent={"kind": "random"},
        judge={},
        code_version="test",
    )


def test_the_viewers_store_connection_cannot_write(store_url):
    with EventStore(store_url) as store:
        store.append("episode/x", [Noted(n=1)], 0)
    reader = EventStore(store_url, read_only=True)
    try:
        assert [r.event for r in reader.read_stream("episode/x")] == [Noted(n=1)]
        with pytest.raises(StoreError, match="read-only"):
            reader.append("episode/y", [Noted(n=2)], 0)
        refused = pytest.raises(Exception, match="(?i)read.only|readonly|query_only|attempt to write")  # noqa: B017 - each backend words its refusal its own way
        with refused, reader.db.cursor() as cur:  # SQL sent past this code's checks: refused by the database
            cur.execute("DELETE FROM checkpoints")
    finally:
        reader.close()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed (apt-get install graphviz)")
def test_tree_texts_reach_the_picture_as_text(tmp_path):
    doc = json.loads(Path(resolve_tree("synthetic-diamond-4").source).read_text(encoding="utf-8"))
    hostile = 'a "quote", a \\N and \\G, </text><script>alert(1)</script> & <img src=x onerror=alert(2)>'
    doc["id"] = "hostile-tree"
    doc["subtopics"][0]["text"] = hostile
    path = tmp_path / "hostile-tree.json"
    path.write_text(json.dumps(doc))
    tree = load_tree_file(path, memo=False)
    first = tree.subtopics[0]
    drawn = episode_path(
        {
            "transitions": [
                {"to_state": "subtopic", "node": first.id},
                {"to_state": "subtopic", "node": tree.subtopics[1].id},
            ],
            "hints": [{"target": first.id, "level": 2}],
            "locked": [],
            "draws": [
                {"study_id": first.studies[0].id, "fake": True},
                {"study_id": first.studies[0].id, "fake": False},
            ],
        }
    )
    dot = tree_dot(tree, drawn)
    assert dot_quote('x"y\\N') == '"x\\"y\\\\N"'
    svg = tree_svg(dot)
    assert svg.startswith("<svg") and "<script" not in svg and "<img" not in svg and "&lt;script&gt;" in svg
    assert "\\N" in svg  # shown as typed, not replaced by the node's name
    assert "visit #1" in svg and "hint 2" in svg and "fake result met ×1, 1 redo" in svg


def test_the_time_left_weighs_each_cell_by_its_agents_pace(sqlite_url):
    """Two agents, one ten times slower: each cell left takes its own agent's mean time, a running
    cell less the time it has had, shared by the cells running now (not the campaign's one mean,
    which would price the slow agent's cells at the quick one's rate)."""
    now = [0.0]

    def clock() -> str:
        return _iso(now[0])

    started = CampaignStarted(
        name="pace", source="test", trees=["synthetic-diamond-4"], agents=["fast", "slow"], judges=["embedding"],
        randomness=[0], runs=4, shard=[1, 1], cells=8, concurrency=1,
    )  # fmt: skip
    with EventStore(sqlite_url, clock=clock) as store:
        store.append(campaign_stream("pace"), [started], 0)
        ids = {(c.agent, c.run): c.episode_id("pace") for c in cells_of(started)}
        for agent, run, begin, end in (
            ("fast", 0, 0, 10),
            ("fast", 1, 10, 20),
            ("slow", 0, 0, 100),
            ("slow", 1, 100, None),
        ):
            now[0] = begin
            store.append(stream_id(ids[agent, run]), [_started(ids[agent, run])], 0)
            if end is not None:
                now[0] = end
                store.append(stream_id(ids[agent, run]), [_scored()], 1)
    live = Campaigns(sqlite_url, stale_seconds=3600)
    try:
        state = live.summary("pace", now=130.0)
        assert state is not None and state["counts"] == {
            "pending": 4, "running": 1, "interrupted": 0, "failed": 0, "limit": 0, "finished": 3,
        }  # fmt: skip
        # fast: 2 left x 10 s; slow: 2 left x 100 s and the running one's 100 - 30 s; one cell running
        assert state["eta_s"] == pytest.approx(2 * 10 + 2 * 100 + 70)
        # the running cell past its agent's mean is still running: a part of the mean is left, not none
        late = live.summary("pace", now=400.0)
        assert late is not None and late["eta_s"] == pytest.approx(2 * 10 + 2 * 100 + 100 * (1 - MOST_DONE))
    finally:
        live.close()


def _iso(seconds: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _scored() -> EpisodeScored:
    return EpisodeScored(
        judge_id="j", coverage=1.0, evidence={}, scores={}, q_sum=None, q_norm=None, k=0, steps=12, lower_bound=12,
        upper_bound=44, within_bounds=True, visited_subtopics=[], hints_issued=0, forced_transitions=0,
    )  # fmt: skip


def _suite(tmp_path: Path, name: str, runs: int) -> Suite:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\ntrees = ["synthetic-diamond-4"]\nagents = ["oracle", "random"]\n'
        f'randomness = [0, 3]\nruns = {runs}\nembedder = "hash"\n'
    )
    return Suite.load(path)


def _folds(live: Campaigns) -> dict:
    """Everything a page shows of the campaigns, at one moment."""
    now = time.time()
    return {
        "episodes": {eid: dataclasses.asdict(e) for eid, e in live.episodes.items()},
        "position": live.position,
        **{name: (live.summary(name, now), live.cells(name, now), live.layout(name)) for name in live.names()},
    }


def test_a_restart_takes_up_the_saved_folds_and_reads_only_what_came_after(store_url, tmp_path, capsys):
    """The folds saved beside the warehouse give a restart the same campaigns as folding the whole
    store again, after more cells, another campaign and a cell begun by hand were appended; a
    snapshot of another store's log, or a damaged one, is not used; `save_snapshot=False` writes none."""
    snapshot = tmp_path / "w.duckdb.campaigns.json"
    first = _suite(tmp_path, "snap a", runs=2)
    with EventStore(store_url) as store:
        assert run_suite(first, store, shard=(1, 2)).done == 4
    live = Campaigns(store_url, stale_seconds=3600, snapshot=snapshot)
    saved_at = live.position
    live.close()
    assert snapshot.is_file() and live.resumed_from == 0
    with EventStore(store_url) as store:
        assert run_suite(first, store).done == 4  # the other half
        assert run_suite(_suite(tmp_path, "snap b", runs=1), store).done == 4
        cell = _suite(tmp_path, "snap b", runs=2).cells()[-1].episode_id("snap b")
        store.append(stream_id(cell), [_started(cell)], 0)
    restarted = Campaigns(store_url, stale_seconds=3600, snapshot=snapshot)
    fresh = Campaigns(store_url, stale_seconds=3600)
    try:
        assert restarted.resumed_from == saved_at > 0
        assert _folds(restarted) == _folds(fresh)
        assert restarted.names() == ["snap-a", "snap-b"]
    finally:
        restarted.close(), fresh.close()

    other = tmp_path / "other.sqlite"
    with EventStore(f"sqlite:///{other}") as store:  # another log, as long or longer
        run_suite(_suite(tmp_path, "snap a", runs=2), store)
        run_suite(_suite(tmp_path, "snap b", runs=2), store)
    elsewhere = Campaigns(f"sqlite:///{other}", stale_seconds=3600, snapshot=snapshot, save_snapshot=False)
    again = Campaigns(f"sqlite:///{other}", stale_seconds=3600)
    try:
        assert elsewhere.resumed_from == 0 and _folds(elsewhere) == _folds(again)
    finally:
        elsewhere.close(), again.close()

    snapshot.write_text('{"position": 3, "episodes": ')
    damaged = Campaigns(store_url, stale_seconds=3600, snapshot=snapshot, save_snapshot=False)
    damaged.close()
    assert damaged.resumed_from == 0 and "was not used" in capsys.readouterr().err
    unsaved = tmp_path / "none.json"
    Campaigns(store_url, snapshot=unsaved, save_snapshot=False).close()
    assert not unsaved.exists()


def test_the_campaigns_snapshot_is_written_through_no_link(tmp_path):
    """The snapshot's temporary file had a predictable name (``.<pid>.part``): a link planted there
    in advance made it overwrite a victim file, and the snapshot became a link to it. It is written
    under an unguessable name and renamed over its target, which replaces a link at that name."""
    import os

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    tree = resolve_tree("synthetic-diamond-4")
    with EventStore(url) as store:
        play(tree, OracleAgent(tree), store=store)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    snapshot = tmp_path / "w.duckdb.campaigns.json"
    snapshot.symlink_to(victim)
    (tmp_path / f"w.duckdb.campaigns.json.{os.getpid()}.part").symlink_to(victim)
    live = Campaigns(url, snapshot=snapshot)
    live._write_snapshot(snapshot)
    live.close()
    assert victim.read_text() == "precious" and snapshot.is_file() and not snapshot.is_symlink()
