"""`inquitree view` (first part of the viewer): the episode list, an episode's dialogue with the
engine's notes and a permanent link per turn, and full-text search over every transcript; model
output is untrusted, so every reply is shown as text. Served by Starlette; checked through its test
client and, for scripts planted in a reply, in headless Chromium."""

from __future__ import annotations

import re
import sqlite3
import time

import pytest

pytest.importorskip("starlette", reason="the viewer's extra is not installed (pip install 'inquitree[view]')")

from starlette.testclient import TestClient
from test_report import dump_dom

from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore
from inquitree.viewer.app import create_app
from inquitree.warehouse.warehouse import Warehouse

from enginekit import OracleAgent, ScriptAgent, follower, play
from tests_support import served

PLANTED = "zebrafish cortical whirlpool"
XSS = (
    "THOUGHT: <script>document.body.dataset.pwned = 'script'</script> and "
    "<img src=x onerror=\"document.body.dataset.pwned = 'img'\"> and [a](javascript:alert(1))\n"
    f"ACTION: {PLANTED}"
)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    d = tmp_path_factory.mktemp("viewer")
    url = f"sqlite:///{d / 'e.sqlite'}"
    tree = resolve_tree("synthetic-diamond-4")
    script = d / "xss.txt"
    script.write_text(XSS + "\n---\n" + "\n---\n".join(["ACTION: (1) nothing"] * 8) + "\n")
    with EventStore(url) as store:
        oracle = play(tree, OracleAgent(tree), store=store)
        scripted = play(tree, ScriptAgent(str(script)), store=store, max_turns=4)
    path = str(d / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
    return path, oracle.episode_id, scripted.episode_id


def test_pages_show_the_episodes_and_escape_every_reply(warehouse):
    path, oracle, scripted = warehouse
    client = TestClient(create_app(path), base_url="http://127.0.0.1")
    home = client.get("/")
    assert home.status_code == 200 and oracle in home.text and scripted in home.text
    page = client.get(f"/episodes/{scripted}")
    assert page.status_code == 200 and 'id="turn-1"' in page.text and 'href="#turn-1"' in page.text
    assert '<details class="system"><summary>system prompt</summary>' in page.text  # collapsed
    assert "&lt;script&gt;" in page.text and "<script>document" not in page.text
    assert "&lt;img src=x onerror=" in page.text and "<img src=x" not in page.text
    assert 'href="javascript:' not in page.text
    notes = client.get(f"/episodes/{oracle}").text
    assert "best match" in notes and "vs tau" in notes  # the engine's notes beside the dialogue
    assert client.get("/episodes/no-such-episode").text.count("No episode no-such-episode") == 1
    # Every page forbids inline and foreign scripts; a tree is found by shipped id, never by path.
    assert "script-src 'self'" in home.headers["content-security-policy"]
    for bad in ("/trees/..%2F..%2Fetc%2Fpasswd", "/trees/%2Fetc%2Fpasswd", "/trees/no-such-tree"):
        assert client.get(bad).status_code == 404
    assert client.get("/trees/synthetic-diamond-4", params={"episode": oracle}).status_code == 200
    assert client.get("/suites/anything").status_code == 404  # no store given: no campaigns to show


def test_search_finds_a_planted_phrase_and_links_to_its_turn(warehouse):
    path, _, scripted = warehouse
    client = TestClient(create_app(path), base_url="http://127.0.0.1")
    found = client.get("/api/search", params={"q": PLANTED}).json()["hits"]
    assert [(h["episode_id"], h["step"], h["kind"]) for h in found] == [(scripted, 1, "reply")]
    assert "<mark>zebrafish</mark>" in found[0]["snippet_html"] and "<script" not in found[0]["snippet_html"]
    scripted_hits = client.get("/api/search", params={"q": "pwned"}).json()["hits"]
    assert (
        scripted_hits and "&lt;" in scripted_hits[0]["snippet_html"] and "<img" not in scripted_hits[0]["snippet_html"]
    )
    page = client.get("/search", params={"q": PLANTED})
    assert f'href="/episodes/{scripted}#turn-1"' in page.text
    assert client.get("/api/search", params={"q": PLANTED, "agent": "oracle"}).json()["hits"] == []
    assert client.get("/api/search", params={"q": PLANTED, "kind": "reply", "randomness": "0"}).json()["hits"]
    # FTS5's own syntax is not exposed: quotes and operators are words like any other
    assert client.get("/api/search", params={"q": 'zebrafish" OR NEAR(x'}).status_code == 200


def test_a_word_too_common_to_rank_shows_the_newest_hits_and_says_so(warehouse, monkeypatch):
    """ranking scores every matching text, so past RANK_AT_MOST of them the newest hits
    come first (FTS5 reads those in order and stops); the page says which order it shows."""
    import inquitree.viewer.search as search
    from inquitree.viewer.search import SearchIndex

    path, _, _ = warehouse
    client = TestClient(create_app(path), base_url="http://127.0.0.1")  # builds the index
    index = SearchIndex(path + ".search.sqlite")
    ranked = index.search("subtopic")
    assert len(ranked) > 3 and all(h["ranked"] for h in ranked)
    assert "best match first" in client.get("/search", params={"q": "subtopic"}).text
    monkeypatch.setattr(search, "RANK_AT_MOST", 3)
    newest = index.search("subtopic")
    assert [h["ranked"] for h in newest] == [False] * len(ranked)
    with sqlite3.connect(index.path) as con:  # newest first: the index's rows in reverse
        order = con.execute("SELECT episode_id, step, kind FROM texts WHERE texts MATCH 'subtopic' ORDER BY rowid DESC")
        assert [(h["episode_id"], h["step"], h["kind"]) for h in newest] == [tuple(r) for r in order][:100]
    assert sorted(h["snippet_html"] for h in newest) == sorted(h["snippet_html"] for h in ranked)
    page = client.get("/search", params={"q": "subtopic"})
    assert "newest first: more than" in page.text and "too many to rank by relevance" in page.text


def test_a_script_planted_in_a_reply_never_runs_in_a_browser(warehouse):
    path, _, scripted = warehouse
    with served(create_app(path)) as base:
        dom = dump_dom(f"{base}/episodes/{scripted}")
    assert 'id="turn-1"' in dom and PLANTED in dom
    assert "data-pwned" not in dom  # neither the script nor the onerror handler ran


def test_two_agents_side_by_side_mark_where_their_paths_part(tmp_path):
    """A scripted agent that follows the oracle for three replies and then misses: the pair's page
    lists the cell they share with the subtopics only one of them reached by its own moves, and the side-by-side page
    marks step 4 as the first divergence."""
    from inquitree.events.types import Transitioned

    tree = resolve_tree("synthetic-diamond-4")
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with EventStore(url) as store:
        oracle = play(tree, OracleAgent(tree), store=store)
        parted = play(tree, follower(oracle, tmp_path / "follower.txt"), store=store, max_turns=12)
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
    client = TestClient(create_app(path), base_url="http://127.0.0.1")
    # Played outside a suite: paired only when one-off episodes are asked for, as `compare --one-off`.
    alone = client.get("/compare", params={"a": "oracle", "b": "follower"})
    assert alone.status_code == 200 and "No pair:" in alone.text and "The pairs (0)" in alone.text
    page = client.get("/compare", params={"a": "oracle", "b": "follower", "one_off": "1"})
    assert page.status_code == 200 and "Paired comparison" in page.text and "The pairs (1)" in page.text
    link = f"/compare/episodes?a={oracle.episode_id}&amp;b={parted.episode_id}"

    def reached(out) -> set[str]:  # by its own moves: a forced transition is the engine's
        return {e.node for e in out.events if isinstance(e, Transitioned) and e.to_state == "subtopic" and not e.forced}

    only_oracle = ", ".join(sorted(reached(oracle) - reached(parted)))
    assert link in page.text and f"<td>{only_oracle}</td>" in page.text
    pair = client.get("/compare/episodes", params={"a": oracle.episode_id, "b": parted.episode_id}).text
    assert 'they part at <a href="#divergence">step 4</a>' in pair
    assert pair.count('id="divergence"') == 1


def test_side_by_side_aligns_turns_by_tree_state_and_rejoins_after_a_detour():
    """B misses once at the Topic, then walks A's path: B's extra turn faces a gap, the rest pair
    up level again (A's step k beside B's step k+1), and only the detour is marked."""
    from inquitree.viewer.pages.episode import aligned

    def turns(keys):
        return [
            {"step": k, "state": state, "best": best, "accepted": best is not None}
            for k, (state, best) in enumerate(keys, 1)
        ]

    path = [("topic", "s1"), ("subtopic", "s1.study"), ("result", None), ("topic", "s2")]
    rows, first = aligned(turns(path), turns([("topic", None), *path]))
    assert first == "– / 1"
    assert [r["label"] for r in rows] == ["– / 1", "1 / 2", "2 / 3", "3 / 4", "4 / 5"]
    assert [r["parted"] for r in rows] == [True, False, False, False, False]
    same, none = aligned(turns(path), turns(path))
    assert none is None and [r["label"] for r in same] == ["1", "2", "3", "4"]


def test_without_graphviz_the_tree_page_says_so_and_keeps_its_tables(warehouse, monkeypatch):
    from inquitree.viewer import treeview

    path, oracle, _ = warehouse
    monkeypatch.setattr(treeview.shutil, "which", lambda name: None)
    treeview.tree_svg.cache_clear()
    page = TestClient(create_app(path), base_url="http://127.0.0.1").get(
        "/trees/synthetic-diamond-4", params={"episode": oracle}
    )
    treeview.tree_svg.cache_clear()
    assert page.status_code == 200 and "<svg" not in page.text
    assert "No picture: Graphviz&#39;s `dot` is not installed (Debian: apt-get install graphviz)" in page.text
    assert 'id="subtopic-0"' in page.text and "Ground-truth conclusions" in page.text


def test_the_episode_list_sorts_filters_and_pages_with_its_state_in_the_url(tmp_path):
    """the list of episodes can be sorted and filtered by its columns, the state kept in
    the URL, one page read at a time; a value that is not a choice is ignored, never run."""
    import re
    from html import unescape

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with EventStore(url) as store:
        for tid in ("synthetic-diamond-4", "synthetic-chain-7"):
            tree = resolve_tree(tid)
            for seed in range(3):
                play(tree, OracleAgent(tree), store=store, seed=seed)
            script = tmp_path / f"{tid}.txt"
            script.write_text("\n---\n".join(["ACTION: (1) nothing"] * 30) + "\n")
            play(tree, ScriptAgent(str(script)), store=store, max_turns=5)
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
        truth = wh.sql("SELECT episode_id, agent, tree_id, steps FROM episodes").to_dicts()
    client = TestClient(create_app(path), base_url="http://127.0.0.1")

    def listed(**params) -> list[str]:
        page = client.get("/", params=params)
        assert page.status_code == 200
        body = page.text.split('id="episodes"', 1)[1]
        return re.findall(r'<tr><td><a href="/episodes/([^"]+)">', body)

    everything = listed()
    assert sorted(everything) == sorted(t["episode_id"] for t in truth)
    by_steps = listed(sort="steps", dir="asc")
    steps = {t["episode_id"]: t["steps"] for t in truth}
    assert [steps[e] for e in by_steps] == sorted(steps.values())
    assert [steps[e] for e in listed(sort="steps", dir="desc")] == sorted(steps.values(), reverse=True)
    oracle_chain = listed(agent="oracle", tree="synthetic-chain-7")
    assert sorted(oracle_chain) == sorted(
        t["episode_id"] for t in truth if t["agent"] == "oracle" and t["tree_id"] == "synthetic-chain-7"
    )
    assert len(oracle_chain) == 3
    # the state is in the links: a header keeps the filters and turns the sort around
    page = unescape(client.get("/", params={"agent": "oracle", "sort": "steps", "dir": "asc"}).text)
    assert "/?agent=oracle&sort=steps&dir=desc#episodes" in page
    assert '<option value="oracle" selected>' in page
    # values that are not choices, and a sort that is not a column, change nothing and run nothing
    assert listed(agent="x' OR 1=1 --", sort="steps; DROP TABLE episodes") == everything
    assert "no episode matches" not in client.get("/", params={"status": "<script>"}).text


def test_the_search_index_is_built_a_batch_at_a_time_with_the_same_hits(warehouse, tmp_path, monkeypatch):
    """The index used to read every text of the warehouse at once (717 MB peak at 1M events); it
    reads them in batches now (224 MB). A batch of 3 rows indexes exactly what one batch does."""
    from inquitree.viewer import search

    path, _, _ = warehouse
    with Warehouse(path, read_only=True) as wh:
        whole = search.SearchIndex(tmp_path / "whole.sqlite")
        n = whole.build(wh, 1)
        monkeypatch.setattr(search, "INSERT_BATCH", 3)
        batched = search.SearchIndex(tmp_path / "batched.sqlite")
        assert batched.build(wh, 1) == n > 3
    for q in (PLANTED, "nothing", "hippocampus"):
        assert batched.search(q) == whole.search(q)
    assert whole.search(PLANTED)


def test_an_updated_search_index_holds_what_a_new_one_would(tmp_path):
    """An update replaces the texts of each episode that moved on (deleted by the rowids kept beside
    them: by episode id FTS5 read the whole index, 0.3 s an episode at 1M events) and adds the new
    episodes; the result is what building the index afresh gives. An index made before those rowids
    were kept is built again."""
    from inquitree.core.run.runner import stream_id
    from inquitree.viewer.search import SearchIndex

    tree = resolve_tree("synthetic-diamond-4")
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    first, second = play(tree, OracleAgent(tree)), play(tree, ScriptAgent(_script(tmp_path)), max_turns=4)
    half = len(first.events) // 2
    path = str(tmp_path / "w.duckdb")
    with EventStore(url) as store:
        store.append(stream_id(first.episode_id), first.events[:half], 0)
        with Warehouse(path) as wh:
            position = wh.sync(url).last_position
            updated = SearchIndex(tmp_path / "updated.sqlite")
            updated.build(wh, position)
        store.append(stream_id(first.episode_id), first.events[half:], half)  # its status and texts change
        store.append(stream_id(second.episode_id), second.events, 0)
    with Warehouse(path) as wh:
        position = wh.sync(url).last_position
        assert updated.update(wh, position) > 0
        afresh = SearchIndex(tmp_path / "afresh.sqlite")
        afresh.build(wh, position)

    def content(index: SearchIndex) -> list[tuple]:
        with sqlite3.connect(index.path) as con:
            owned = con.execute("SELECT count(*) FROM owners JOIN texts ON texts.rowid = owners.text_rowid").fetchone()
            assert owned[0] == con.execute("SELECT count(*) FROM texts").fetchone()[0]
            return con.execute("SELECT episode_id, step, kind, text, status FROM texts ORDER BY 1, 2, 3, 4").fetchall()

    assert content(updated) == content(afresh) and {r[0] for r in content(afresh)} == {
        first.episode_id,
        second.episode_id,
    }
    assert updated.position() == position
    with sqlite3.connect(updated.path) as con:  # as an index made before the owners table
        con.execute("DROP TABLE owners")
    assert updated.position() == -1


def test_the_campaign_grid_escapes_each_cells_state_and_note():
    """The grid's cells are written in Python (the template's escapes were half of the page at 1M
    events): a failure's reason from an endpoint is text in the title, never markup."""
    import html

    from inquitree.viewer.pages.suite import grid_cells

    hostile = 'failed at step 2: [server_error] "><script>alert(1)</script><img src=x onerror=alert(2)>'
    row = str(grid_cells(["s.t.a.embedding.a0.r0", None], {"s.t.a.embedding.a0.r0": ["failed", hostile]}))
    assert "<script>" not in row and "<img" not in row
    assert f'title="failed: {html.escape(hostile)}"' in row and row.endswith("<td></td>")
    assert 'href="/episodes/s.t.a.embedding.a0.r0"' in row and 'class="st-failed"' in row


def _script(tmp_path) -> str:
    script = tmp_path / "nothing.txt"
    script.write_text("\n---\n".join(["ACTION: (1) nothing"] * 8) + "\n")
    return str(script)


def test_a_campaigns_cells_sort_filter_and_page_with_their_state_in_the_url(tmp_path, monkeypatch):
    """the suite page lists its cells (pending ones too) sortable and filterable by
    tree, agent, judge, level and state, with steps, coverage, score and time; the state in the URL."""
    import re
    from html import unescape

    from inquitree.core.run.campaign import Suite, run_suite

    suite_file = tmp_path / "cells.toml"
    suite_file.write_text(
        'name = "cells"\ntrees = ["synthetic-diamond-4", "synthetic-chain-7"]\nagents = ["random", "oracle"]\n'
        'randomness = [0, 4]\nruns = 2\nembedder = "hash"\n'
    )
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    suite = Suite.load(suite_file)
    with EventStore(url) as store:
        run_suite(suite, store, shard=(1, 2))  # half the grid: the other half stays pending
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
        truth = {
            r["episode_id"]: r for r in wh.sql("SELECT episode_id, agent, tree_id, steps FROM episodes").to_dicts()
        }
    client = TestClient(create_app(path, db_url=url), base_url="http://127.0.0.1")

    def listed(**params) -> list[str]:
        page = client.get("/suites/cells", params=params)
        assert page.status_code == 200
        return re.findall(r'<tr><td><a href="/episodes/([^"]+)">', page.text.split('id="cell-list"', 1)[1])

    everything = listed()
    assert len(everything) == 16 and len(truth) == 8  # every cell, the pending ones too
    assert set(truth) < set(everything)
    by_steps = listed(sort="steps", dir="asc")
    assert [truth[e]["steps"] for e in by_steps[:8]] == sorted(t["steps"] for t in truth.values())
    assert set(by_steps[8:]) == set(everything) - set(truth)  # cells not started: last, either way
    assert set(listed(sort="steps", dir="desc")[8:]) == set(everything) - set(truth)
    oracle_chain = listed(agent="oracle", tree="synthetic-chain-7")
    assert len(oracle_chain) == 4 and all(".synthetic-chain-7.oracle." in e for e in oracle_chain)
    assert sorted(listed(state="pending")) == sorted(set(everything) - set(truth))
    assert set(listed(state="finished")) == set(truth)
    page = unescape(client.get("/suites/cells", params={"agent": "oracle", "sort": "score", "dir": "asc"}).text)
    assert "/suites/cells?agent=oracle&sort=score&dir=desc#cells" in page
    assert '<option value="oracle" selected>' in page
    assert listed(agent="x' OR 1=1 --", sort="steps; DROP TABLE episodes") == everything
    # The grid shows a page of runs at a time (viewer/pages/suite.py GRID_RUNS); the cell list's links and
    # filter form keep that page, and its links keep the list's state.
    import inquitree.viewer.pages.suite as viewer_app

    def grid(**params) -> tuple[list[str], str]:
        text = unescape(client.get("/suites/cells", params=params).text)
        table = text.split('id="grid"', 1)[1].split("</table>", 1)[0]
        return re.findall(r"<th title=\"randomness \d+, run (\d+)\">", table), text

    assert set(grid()[0]) == {"0", "1"} and 'id="grid-pages"' not in grid()[1]  # 2 runs fit one page
    monkeypatch.setattr(viewer_app, "GRID_RUNS", 1)
    first, text = grid(sort="steps")
    assert first == ["0", "0"] and "run 0 of the 2 runs recorded" in text  # levels 0 and 4 of run 0
    assert "/suites/cells?sort=steps&dir=desc&runs=1#grid-pages" in text and "earlier runs" not in text
    second, text = grid(runs="1", sort="steps")
    assert second == ["1", "1"] and "run 1 of the 2" in text and "later runs" not in text
    assert "/suites/cells?sort=steps&dir=desc#grid-pages" in text  # back to the first page
    assert "/suites/cells?runs=1&sort=steps&dir=asc#cells" in text  # the list's links keep the page
    assert '<input type="hidden" name="runs" value="1">' in text
    assert grid(runs="7")[0] == first and grid(runs="-1")[0] == first  # out of range: the first page


def test_pages_answer_while_the_first_search_index_is_built_in_the_background(warehouse, tmp_path, monkeypatch):
    """`inquitree view` builds the search index in a thread of its own, so pages answer
    at once; a search before the first build says so, and finds its hits once the build is done."""
    import shutil
    import threading

    from inquitree.viewer.search import SearchIndex

    path = str(tmp_path / "w.duckdb")
    shutil.copyfile(warehouse[0], path)  # no index beside this copy
    release = threading.Event()
    update = SearchIndex.update

    def slow_update(self, wh, position):
        release.wait(30)
        return update(self, wh, position)

    monkeypatch.setattr(SearchIndex, "update", slow_update)
    app = create_app(path, index_in_background=True)
    client = TestClient(app, base_url="http://127.0.0.1")
    assert client.get("/").status_code == 200  # the index is not there yet, the pages are
    waiting = client.get("/api/search", params={"q": PLANTED})
    assert waiting.status_code == 503 and "being built" in waiting.json()["problem"]
    release.set()
    viewer = app.state.viewer
    thread = viewer.indexing
    assert thread is not None
    thread.join(30)
    assert viewer.indexing is None and not viewer.index_building()
    assert client.get("/api/search", params={"q": PLANTED}).json()["hits"]


def test_a_page_never_waits_for_a_sync_and_says_newer_events_are_loading(tmp_path, monkeypatch):
    """The first page after a large campaign used to sync the warehouse inside the request (84.5 s
    at 905k events). Now the sync runs in the background: the page answers from the last published
    snapshot and says that newer events are being loaded; once the sync publishes, pages show them."""
    import threading

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    diamond = resolve_tree("synthetic-diamond-4")
    with EventStore(url) as store:
        first = play(diamond, OracleAgent(diamond), store=store).episode_id
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
    app = create_app(path, db_url=url, sync=True)
    client = TestClient(app, base_url="http://127.0.0.1")
    with EventStore(url) as store:
        later = play(diamond, OracleAgent(diamond), store=store, seed=7).episode_id
    release = threading.Event()
    real_sync = Warehouse.sync

    def held_sync(self, *args, **kwargs):  # a sync that takes as long as the test says
        assert release.wait(30)
        return real_sync(self, *args, **kwargs)

    monkeypatch.setattr(Warehouse, "sync", held_sync)
    app.state.viewer.caught_up -= 10  # the store is checked at most once a second
    home = client.get("/")  # answered while the sync is held
    assert home.status_code == 200 and "Newer events are being loaded" in home.text
    assert first in home.text and later not in home.text
    missing = client.get(f"/episodes/{later}")
    assert missing.status_code == 404 and "newer events are being loaded, reload in a moment" in missing.text
    release.set()
    app.state.viewer.wait_for_sync()
    home = client.get("/")
    assert later in home.text and "Newer events are being loaded" not in home.text
    assert client.get(f"/episodes/{later}").status_code == 200


def test_the_first_page_never_waits_for_the_campaigns_to_be_folded(tmp_path, monkeypatch):
    """`inquitree view` after a campaign appended many events: the campaigns' folds catch up in a
    thread of their own (250k events took 5-8 s inside the first request); the page answers at
    once, says newer events are being loaded, and shows the campaign once they are folded."""
    import threading

    from inquitree.core.run.campaign import Suite, run_suite
    from inquitree.viewer.live import Campaigns

    suite_file = tmp_path / "big.toml"
    suite_file.write_text('name = "big"\ntrees = ["synthetic-diamond-4"]\nagents = ["oracle"]\nembedder = "hash"\n')
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with EventStore(url) as store:
        assert run_suite(Suite.load(suite_file), store).done == 1
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
    release = threading.Event()
    real = Campaigns._fold_to

    def held(self, head):  # a fold that takes as long as the test says
        assert release.wait(30)
        return real(self, head)

    monkeypatch.setattr(Campaigns, "_fold_to", held)
    app = create_app(path, db_url=url, sync=True, index_in_background=True)  # as `inquitree view` makes it
    client = TestClient(app, base_url="http://127.0.0.1")
    home = client.get("/")  # answered while the fold is held
    assert home.status_code == 200 and "Newer events are being loaded" in home.text
    release.set()
    deadline = time.monotonic() + 30
    while app.state.viewer.live.folding and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "/suites/big" in client.get("/").text


def test_the_viewer_shows_the_rank_intervals_and_population_it_was_started_with(sqlite_url, tmp_path):
    """`view --joint-ranks` and `--fixed-papers` set the statistics of the viewer's tables as they
    set `report`'s and `query`'s: the figures page's leaderboard says which rank intervals and
    which population it shows, and the intervals are the ones asked for (about exactly these
    papers the ranks do not resample papers, and runs that never differ leave no spread to build
    an interval from, for the means or the ranks)."""
    import urllib.request

    from test_compare import _log

    from tests_support import viewer_process

    def leaderboard(page: str) -> str:
        return page.split("Leaderboard")[1].split("<h2")[0]

    w = _log(sqlite_url, tmp_path)
    alone = leaderboard(TestClient(create_app(w), base_url="http://127.0.0.1").get("/figures").text)
    assert "rank method (every row): each agent&#x27;s rank set on its own" in alone
    # three papers cannot tell two agents apart: the rank set is both ranks, and says why
    assert "<td>1 [1, 2]</td>" in alone and "about papers like these" in alone
    assert "can be told apart at 3 papers" in alone
    with (
        viewer_process(sqlite_url, w, "--no-sync", "--joint-ranks", "--fixed-papers") as base,
        urllib.request.urlopen(base + "/figures", timeout=60) as r,
    ):
        joint = leaderboard(r.read().decode())
    assert "rank method (every row): about these papers only: rank intervals that hold for every agent at once" in joint
    # About exactly these papers only the runs vary, and these runs never differ: no rank interval.
    # a rank, no interval (coverage, with the agent's own in brackets, between the score and the rank)
    assert re.search(r"<td>oracle</td><td>1\.00 \[no interval\]</td><td>[^<]*\(1\.00\)</td><td>1</td>", joint), joint
    assert "rank: no run differs from its paper&#x27;s other runs: no spread to build a rank interval from" in joint
    assert "papers like these" not in joint


def test_the_viewers_figures_and_lists_read_the_episodes_query_reads(tmp_path):
    """A store with a campaign and one-off episodes: by default the viewer's home list, figures and
    leaderboard speak of the campaign's episodes, as `query` and `report` do; `--one-off` of the
    others; an episode page shows any episode."""
    from inquitree.core.run.campaign import Suite, run_suite
    from inquitree.warehouse.report import figures

    suite_file = tmp_path / "pop.toml"
    suite_file.write_text(
        'name = "pop"\ntrees = ["synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7"]\n'
        'agents = ["oracle", "random"]\nrandomness = [0, 3]\nembedder = "hash"\n'
    )
    url = f"sqlite:///{tmp_path / 'pop.sqlite'}"
    tree = resolve_tree("synthetic-diamond-4")
    with EventStore(url) as store:
        assert run_suite(Suite.load(suite_file), store).done == 12
        loose = play(tree, ScriptAgent(_script(tmp_path)), store=store, max_turns=4).episode_id
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
    with Warehouse(path, read_only=True) as wh:
        assert "1 one-off episode" in wh.scope()  # what `query` reads by default: the campaign
        (tmp_path / "q").mkdir()
        expected = {name: f["table"] for name, f in figures(wh, tmp_path / "q").items()}
        board = wh.query("table2_leaderboard")
    client = TestClient(create_app(path), base_url="http://127.0.0.1")
    viewer = client.app.state.viewer
    from inquitree.viewer.pages.figures import figures_now

    assert {name: f["table"] for name, f in figures_now(viewer).items()} == expected
    page = client.get("/figures").text
    assert "script" not in set(board["agent"].to_list()) and ">script<" not in page
    home = client.get("/").text
    assert loose not in home and "one-off episode" in home  # said, with how to see them
    assert client.get(f"/episodes/{loose}").status_code == 200  # its own page still opens
    one_off = TestClient(create_app(path, scope=((), True)), base_url="http://127.0.0.1")
    assert loose in one_off.get("/").text and "pop.synthetic" not in one_off.get("/").text


def test_an_episode_page_renders_its_markdown_under_a_deadline(warehouse, monkeypatch):
    """Past the page's time for rendering, the texts left are shown as escaped plain text, and the
    page says so: no reply's shape can hold a page (or the viewer) for minutes."""
    from inquitree.viewer.pages import episode as page_module

    path, oracle, scripted = warehouse
    monkeypatch.setattr(page_module, "RENDER_SECONDS", 0.0)
    page = TestClient(create_app(path), base_url="http://127.0.0.1").get(f"/episodes/{scripted}").text
    assert "(shown as plain text: the page's time for rendering ran out)" in page
    assert "&lt;script&gt;" in page and "<script>document" not in page


def test_an_episode_page_reads_its_state_and_scores_from_one_snapshot(tmp_path):
    """Opened just after a campaign ended, an episode page said "running" above its final scores:
    its state came from the snapshot open before the page took up the newer one its scores came from."""
    from inquitree.core.run.runner import stream_id

    tree = resolve_tree("synthetic-diamond-4")
    events = play(tree, OracleAgent(tree)).events  # played in memory, recorded below in two parts
    eid, half = events[0].episode_id, len(events) // 2
    url, path = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    with EventStore(url) as store:
        store.append(stream_id(eid), events[:half], 0)
    with Warehouse(path) as wh:
        wh.sync(url)
    client = TestClient(create_app(path), base_url="http://127.0.0.1")
    before = client.get(f"/episodes/{eid}").text.split("<h1>")[1].split("<h2>Scores</h2>")[0]
    assert "running" in before
    with EventStore(url) as store:  # the episode ends; another process publishes the warehouse
        store.append(stream_id(eid), events[half:], half)
    with Warehouse(path) as wh:
        wh.sync(url)
    page = client.get(f"/episodes/{eid}").text
    head, scores = page.split("<h1>")[1].split("<h2>Scores</h2>")
    assert "done (conclusion)" in head and "running" not in head and "1.00" in scores.split("<h2>Dialogue</h2>")[0]


def test_an_index_build_stopped_by_the_server_leaves_no_temporary_file(warehouse, tmp_path, monkeypatch):
    """Stopping `inquitree view` while it built its search index left 17-50 MB of temporary files
    each time (the build's thread died with the process)."""
    import inquitree.viewer.search as search

    path, _, _ = warehouse
    monkeypatch.setattr(search, "INSERT_BATCH", 2)

    class StopAfter:  # set once the first batch is written
        calls = 0

        def is_set(self) -> bool:
            self.calls += 1
            return self.calls > 1

    index = search.SearchIndex(tmp_path / "w.duckdb.search.sqlite", stop=StopAfter())  # type: ignore[arg-type]
    with Warehouse(path, read_only=True) as wh, pytest.raises(search.IndexStopped):
        index.build(wh, 1)
    assert list(tmp_path.iterdir()) == [] and index.position() == -1
