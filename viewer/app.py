"""The viewer's web application (Starlette): read-only pages over the warehouse and the store.

Every page is rendered with Jinja2's autoescaping; model output shown as Markdown goes through the
report's ``markdown_html``, which escapes first; scripts come only from ``/static`` (a Content
Security Policy refuses any other), and they write data into the page as text, never as markup.
The warehouse is one read-only, sandboxed DuckDB connection (it reads the warehouse and nothing
else, see ``warehouse/sync.py``) behind a lock: DuckDB connections are not shared between threads,
and Starlette runs each request in a thread. Campaign grids are folded from the store itself,
through a read-only connection (``viewer/live.py``), and pushed to open pages as server-sent
events. The warehouse is read as its last published snapshot: a sync (the viewer's own, when the
store has moved on, or ``warehouse sync``, ``report`` and ``query``'s callers in other processes)
writes the next one beside it and publishes it whole, and a page takes up the newest snapshot
before it reads; ``--no-sync`` leaves the warehouse as it is.

The pages are module-level functions that read the :class:`Viewer` from ``request.app.state``;
``ROUTES`` at the bottom lists every URL, and ``viewer/sql.py`` holds every statement they run.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
import markupsafe
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from inquitree.core.game.tree import load_tree_file, shipped_tree, shipped_tree_paths
from inquitree.events.errors import InquiTreeError
from inquitree.viewer import sql
from inquitree.viewer.live import Campaigns
from inquitree.viewer.search import (
    KINDS,
    MAX_QUERY_CHARS,
    RANK_AT_MOST,
    SEARCH_SECONDS,
    SearchIndex,
    SearchStopped,
    terms,
)
from inquitree.viewer.treeview import GraphvizMissing, episode_path, tree_dot, tree_svg
from inquitree.warehouse.report import episode_items, figures, table_html
from inquitree.warehouse.warehouse import PAIR_COLUMNS, Warehouse

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "pages"
STATIC = HERE / "static"
REPORT_CSS = HERE.parent / "warehouse" / "report_pages" / "base.css.j2"
FILTERS = ("agent", "tree_id", "randomness", "status", "kind")
# Scripts and images from this server only; inline styles (the report's stylesheet) but no inline script.
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SEARCHES = 2  # searches at once: the rest of the worker threads stay free for pages
CATCH_UP_SECONDS = 1.0  # at most one warehouse sync this often, when the store has moved on


class Viewer:
    def __init__(
        self,
        warehouse_path: str,
        db_url: str | None = None,
        sync: bool = False,
        stale_after: float = 300.0,
        write_index: bool = True,
        index_in_background: bool = False,
    ):
        """``write_index=False`` (``view --no-sync``): nothing is written, the search index beside the
        warehouse included; search uses the index as it is, and says so when there is none.
        ``index_in_background`` (``inquitree view``): the search index's first build runs in a
        thread of its own, through a connection of its own, so pages answer from the start; a
        search before it is done says the index is being built."""
        self.path = warehouse_path
        self.db_url = db_url
        self.sync = sync
        self.write_index = write_index
        self.index_in_background = index_in_background
        self.indexing: threading.Thread | None = None  # the background index update, while it runs
        self.index_again = False  # the warehouse moved on while the index was being updated
        self.index_guard = threading.Lock()
        self.lock = threading.RLock()
        self.opened = _identity(warehouse_path)  # which published snapshot ``self.wh`` reads
        self.wh = Warehouse(warehouse_path, read_only=True)
        self.index = SearchIndex(warehouse_path + ".search.sqlite")
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(TEMPLATES), str(REPORT_CSS.parent)]), autoescape=True
        )
        # the campaigns' folds are kept beside the warehouse, as the search index is: a restart
        # reads only what was appended since (written unless nothing may be, `view --no-sync`)
        folds = warehouse_path + ".campaigns.json"
        self.live = (
            Campaigns(db_url, stale_after, snapshot=folds, save_snapshot=write_index)
            if db_url is not None or sync
            else None
        )
        self.stopping = threading.Event()  # set when the server stops: open event streams end at once
        self.searches = asyncio.Semaphore(SEARCHES)  # searches running at once (each in a worker thread)
        self.caught_up = time.monotonic()
        self.syncing: threading.Thread | None = None  # the background sync, while it runs
        self.sync_guard = threading.Lock()
        # (warehouse position, figures, their PNG bytes): drawn into a temporary folder that is gone
        # before the page is served, so that no signal can leave one behind.
        self.figures: tuple[int, dict[str, dict], dict[str, bytes]] | None = None
        self.refresh_index()

    def rows(self, text: str, args: list[Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one of ``viewer/sql.py``'s statements, as dicts."""
        with self.lock:
            cur = self.wh.con.execute(text, args or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def position(self) -> int:
        return int(self.rows(sql.POSITION)[0]["p"])

    def refresh_index(self) -> None:
        """Bring the search index to the warehouse (here, or in the background), and the search
        filters' choices (each a pass over the episodes view, too slow to repeat on every search of
        a large store)."""
        position = self.position()
        if self.index.position() != position and self.write_index:
            # a first build (or one already under way) goes to the background; a small update
            # after a sync is made here, so a search right after it finds the new episodes
            if self.index_in_background and (self.indexing is not None or self.index.position() < 0):
                self._index_later()
            else:
                with self.lock:
                    self.index.update(self.wh, position)
        found = self.rows(sql.FILTER_CHOICES)[0]
        self.choices = {
            key: [str(v) for v in (found[key] or [])] for key in ("agent", "tree_id", "randomness", "status")
        }
        self.choices["kind"] = list(KINDS)
        self.choices["judge"] = [str(v) for v in (self.rows(sql.FILTER_CHOICES_JUDGES)[0]["judge"] or [])]

    def _index_later(self) -> None:
        """Start the background index update, or, if one runs, ask it to go once more when done."""
        with self.index_guard:
            if self.indexing is not None:
                self.index_again = True
                return
            self.index_again = False
            self.indexing = threading.Thread(target=self._index_loop, name="search-index", daemon=True)
            self.indexing.start()

    def _index_loop(self) -> None:
        while not self.stopping.is_set():
            try:  # a connection of its own to the newest published snapshot: pages keep theirs
                with Warehouse(self.path, read_only=True) as wh:
                    (position,) = wh.con.execute(sql.POSITION).fetchone() or (0,)
                    if self.index.position() != position:
                        self.index.update(wh, position)
            except Exception as exc:  # noqa: BLE001 - a thread that died would leave search "being built"
                print(f"inquitree view: the search index was not updated ({exc})", file=sys.stderr)
            with self.index_guard:
                if not self.index_again:
                    self.indexing = None
                    return
                self.index_again = False
        with self.index_guard:
            self.indexing = None

    def index_building(self) -> bool:
        """True while the search index has never been built and a first build is running."""
        return self.indexing is not None and self.index.position() < 0

    def catch_up(self, force: bool = False) -> bool:
        """Follow the warehouse: take up a snapshot another process published (``warehouse sync``,
        ``report``), and with ``--sync``, when the store has moved on, start a sync in a thread of
        its own (at most once a second unless ``force``). A page never waits for it: pages keep
        reading the last published snapshot and say that newer events are being loaded
        (:meth:`loading`); the sync's snapshot is taken up when it is published. True if a sync
        was started."""
        self.follow_published()
        if not self.sync or self.live is None:
            return False
        if not force and time.monotonic() - self.caught_up < CATCH_UP_SECONDS:
            return False
        with self.sync_guard:
            if self.syncing is not None:
                return False
            if self.live.store.last_position() <= self.position():
                return False
            self.caught_up = time.monotonic()
            self.syncing = threading.Thread(target=self._sync_in_background, name="warehouse-sync", daemon=True)
            self.syncing.start()
            return True

    def _sync_in_background(self) -> None:
        try:
            with Warehouse(self.path, wait=0) as writer:
                writer.sync(self.db_url)
        except Exception as exc:  # noqa: BLE001 - another process is syncing (its snapshot will be taken up), or the store failed
            print(f"inquitree view: the warehouse was not synced ({exc}); pages show it as it was", file=sys.stderr)
        finally:
            with self.sync_guard:
                self.syncing = None
        with contextlib.suppress(Exception):
            self.follow_published()

    def loading(self) -> bool:
        """True while this viewer's sync of newer events runs (the pages say so)."""
        return self.syncing is not None

    def wait_for_sync(self, timeout: float = 60.0) -> None:
        """Wait for a background sync to publish (tests, and `view` before it opens a browser)."""
        thread = self.syncing
        if thread is not None:
            thread.join(timeout)
        self.follow_published()

    def follow_published(self) -> None:
        """Read the newest published snapshot of the warehouse, if another has replaced the one open."""
        if _identity(self.path) != self.opened:
            with self.lock:
                if _identity(self.path) != self.opened:
                    self._reopen()

    def _reopen(self) -> None:
        old, self.opened = self.wh, _identity(self.path)
        self.wh = Warehouse(self.path, read_only=True)
        old.close()
        self.refresh_index()

    def page(self, name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("loading", self.loading())
        return HTMLResponse(self.env.get_template(name).render(**values), status_code=status_code)


def create_app(
    warehouse_path: str,
    db_url: str | None = None,
    sync: bool = False,
    stale_after: float = 300.0,
    host: str = "127.0.0.1",
    extra_hosts: tuple[str, ...] = (),
    write_index: bool = True,
    index_in_background: bool = False,
) -> Starlette:
    """The viewer over the warehouse at ``warehouse_path``; with ``db_url`` (or ``sync``) its
    campaign pages follow the store, and with ``sync`` its other pages catch up with it too.
    It answers requests whose Host is a loopback name, ``host`` or one of ``extra_hosts`` only."""
    viewer = Viewer(warehouse_path, db_url, sync, stale_after, write_index, index_in_background)
    app = _GuardedStarlette(hosts=allowed_hosts(host, extra_hosts), routes=ROUTES)
    app.state.viewer = viewer
    return app


# -- the pages: each reads the viewer from ``request.app.state`` ----------------------------------


LIST_FILTERS = (("agent", "agent"), ("tree", "tree_id"), ("a", "randomness"), ("judge", "judge"), ("status", "status"))


def home(request: Request) -> Response:
    """The campaigns, and the episodes sorted and filtered as the URL says (``sort``, ``dir``, one
    parameter per filter, ``page``), so a view of the list can be bookmarked and shared. Only a
    page of rows is read; a value that is not one of the choices is ignored, never sent to SQL
    text."""
    viewer: Viewer = request.app.state.viewer
    viewer.catch_up()
    q = request.query_params
    asked = q.get("sort", "")
    sort = asked if asked in sql.LIST_SORTS else "started"
    direction = "ASC" if q.get("dir") == "asc" else "DESC" if q.get("dir") == "desc" else (
        "DESC" if sort in ("started", "score", "coverage", "steps") else "ASC"
    )  # fmt: skip
    filters = {key: q.get(key) for key, choices in LIST_FILTERS if q.get(key) in viewer.choices.get(choices, [])}
    page = _page(q)
    episodes = viewer.rows(
        sql.EPISODE_LIST[(sort, direction)],
        [filters.get("agent"), filters.get("tree"), filters.get("a"), filters.get("judge"), filters.get("status"),
         page * sql.LIST_PAGE],
    )  # fmt: skip
    state = {**filters, "sort": sort, "dir": direction.lower()}

    return viewer.page(
        "index.html.j2",
        episodes=episodes,
        campaigns=campaign_list(viewer),
        state=state,
        page=page,
        page_size=sql.LIST_PAGE,
        matching=episodes[0]["matching"] if episodes else 0,
        choices={key: viewer.choices.get(choices, []) for key, choices in LIST_FILTERS},
        link=_list_link("/", state, page, "episodes"),
    )


def campaign_list(viewer: Viewer) -> list[dict[str, Any]] | None:
    if viewer.live is None:
        return None
    viewer.live.refresh()
    return [b for k in viewer.live.names() if (b := _brief(viewer.live.summary(k, cells=False))) is not None]


def episode(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    episode_id = request.path_params["episode_id"]
    found = viewer.rows(sql.EPISODE, [episode_id])
    if not found or found[0]["status"] not in ("done", "failed"):
        viewer.catch_up(force=not found)
    if not found:
        return viewer.page("missing.html.j2", what=f"episode {episode_id}", status_code=404)
    with viewer.lock:
        items = episode_items(viewer.wh, episode_id)
        scores = table_html(viewer.wh.con.sql(sql.EPISODE_SCORES, params=[episode_id]).pl())
    template_set = viewer.rows(sql.TEMPLATE_SET, [episode_id])
    return viewer.page(
        "episode.html.j2",
        ep=found[0],
        items=items,
        scores=scores,
        system_prompt=_system_prompt(template_set[0]["template_set"] if template_set else None),
    )


def tree(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    tree_id = request.path_params["tree_id"]
    t = shipped_tree(tree_id)
    if t is None:
        return viewer.page("missing.html.j2", what=f"shipped tree {tree_id}", status_code=404)
    episode_id = request.query_params.get("episode", "")
    ep, path = None, None
    verdicts: dict[str, list[dict[str, Any]]] = {}
    if episode_id:
        found = viewer.rows(sql.EPISODE_OF_TREE, [episode_id, tree_id])
        if not found:
            return viewer.page("missing.html.j2", what=f"episode {episode_id} of tree {tree_id}", status_code=404)
        ep = found[0]
        path = episode_path({name: viewer.rows(text, [episode_id]) for name, text in sql.PATH.items()})
        for v in viewer.rows(sql.VERDICTS, [episode_id]):
            verdicts.setdefault(v["item_id"], []).append(v)
    try:
        picture, problem = tree_svg(tree_dot(t, path)), None
    except (GraphvizMissing, RuntimeError, OSError) as exc:
        picture, problem = None, str(exc)
    reached = {sid for sid, fakes in (path or {}).get("draws", {}).items() if not fakes[-1]}
    result_of = {st.result.id: st.id for s in t.subtopics for st in s.studies}
    return viewer.page(
        "tree.html.j2",
        tree=t,
        ep=ep,
        path=path,
        picture=picture,
        problem=problem,
        verdicts=verdicts,
        reached_results={r for r, st in result_of.items() if st in reached},
        episodes=viewer.rows(sql.TREE_EPISODES, [tree_id]),
        tree_changed=bool(episode_id)
        and any(r["tree_hash"] != t.content_hash for r in viewer.rows(sql.TREE_HASH, [episode_id])),
    )


def trees_index(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    counts = {r["tree_id"]: r["n"] for r in viewer.rows(sql.EPISODES_PER_TREE)}
    trees = [
        {"tree_id": t.id, "title": t.title, "n_subtopics": len(t.subtopics), "episodes": counts.get(t.id, 0)}
        for t in map(load_tree_file, shipped_tree_paths())
    ]
    return viewer.page("trees.html.j2", trees=trees)


def figures_page(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    viewer.catch_up()
    made = figures_now(viewer)
    with viewer.lock:
        leaderboard = table_html(viewer.wh.query("table2_leaderboard"))
    return viewer.page("figures.html.j2", figures=made, leaderboard=leaderboard)


def figures_now(viewer: Viewer) -> dict[str, dict]:
    """The report's figures (``warehouse.report.figures``: one source for a figure), drawn
    again only when the warehouse has moved on."""
    with viewer.lock:
        position = viewer.position()
        if viewer.figures is None or viewer.figures[0] != position:
            with tempfile.TemporaryDirectory(prefix="inquitree-view-figures-") as tmp:
                made = figures(viewer.wh, Path(tmp))
                pngs = {name: (Path(tmp) / f["file"]).read_bytes() for name, f in made.items()}
            viewer.figures = (position, made, pngs)
        return viewer.figures[1]


def figure_png(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    name = request.path_params["name"]
    made = figures_now(viewer)
    if name not in made:
        return Response("no such figure", status_code=404, media_type="text/plain")
    png = viewer.figures[2].get(name) if viewer.figures else None
    if png is None:
        return Response("no such figure", status_code=404, media_type="text/plain")
    return Response(png, media_type="image/png")


async def search_hits(request: Request) -> tuple[str, dict[str, str], list[dict[str, Any]], str | None]:
    """Run a search in a worker thread, at most SEARCHES at a time (the others wait, then are
    told the viewer is busy), stopping it when its client goes away: pages stay answering."""
    viewer: Viewer = request.app.state.viewer
    query = request.query_params.get("q", "")[: 4 * MAX_QUERY_CHARS]
    filters = {k: request.query_params.get(k, "")[:200] for k in FILTERS}
    if not terms(query):
        return query, filters, [], None
    if viewer.index_building():
        return (
            query,
            filters,
            [],
            "the search index is being built (the first time on this warehouse): try again in a moment",
        )
    if not viewer.index.path.exists():
        return query, filters, [], "no search index: the viewer was started with --no-sync, which writes nothing"
    cancel = threading.Event()

    async def watch() -> None:
        while not cancel.is_set():
            if await request.is_disconnected() or viewer.stopping.is_set():
                cancel.set()
                return
            await asyncio.sleep(0.1)

    try:
        await asyncio.wait_for(viewer.searches.acquire(), timeout=SEARCH_SECONDS)
    except TimeoutError:
        return query, filters, [], "the viewer is busy with other searches: try again in a moment"
    watcher = asyncio.create_task(watch())
    try:
        hits = await run_in_threadpool(viewer.index.search, query, filters, 100, SEARCH_SECONDS, cancel)
        return query, filters, hits, None
    except SearchStopped as exc:
        return query, filters, [], str(exc)
    finally:
        cancel.set()
        viewer.searches.release()
        watcher.cancel()  # not awaited through its sleep: a search's answer waits for nothing


async def search(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    await run_in_threadpool(viewer.catch_up)
    query, filters, hits, problem = await search_hits(request)
    return viewer.page(
        "search.html.j2",
        query=query,
        filters=filters,
        choices={k: v for k, v in viewer.choices.items() if k != "judge"},  # the index has no judge to filter by
        hits=hits,
        problem=problem,
        rank_at_most=RANK_AT_MOST,
    )


async def api_search(request: Request) -> Response:
    query, filters, hits, problem = await search_hits(request)
    return JSONResponse(
        {"query": query, "filters": filters, "hits": hits, "problem": problem}, status_code=503 if problem else 200
    )


def compare(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    viewer.catch_up()
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    one_off = request.query_params.get("one_off") == "1"
    agents = viewer.choices["agent"]
    page: dict[str, Any] = {"a": a, "b": b, "agents": agents, "one_off": one_off}
    if a not in agents or b not in agents or a == b:
        return viewer.page("compare.html.j2", table=None, cells=[], **page)
    with viewer.lock:
        df = viewer.wh.query("compare", {"agents": [a, b], "one_off": one_off})
        paired = df.height and df["paired_cells"].max()
        table = table_html(df.drop(PAIR_COLUMNS)) if paired else None  # the pairs are listed below it
    cells = viewer.rows(sql.CELLS, [a, b, one_off])
    return viewer.page("compare.html.j2", table=table, cells=cells, **page)


def side_by_side(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    turns = {ep: viewer.rows(sql.TURNS, [ep]) for ep in (a, b)}
    if not turns[a] or not turns[b]:
        return viewer.page("missing.html.j2", what=f"pair of episodes {a!r} and {b!r}", status_code=404)
    rows, divergence = aligned(turns[a], turns[b])
    return viewer.page("side_by_side.html.j2", a=a, b=b, rows=rows, divergence=divergence)


def suite_page(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    key = request.path_params["key"]
    if viewer.live is None:
        return viewer.page("missing.html.j2", what="event store (start the viewer with --db)", status_code=404)
    viewer.live.refresh()
    now = time.time()
    layout, state = viewer.live.layout(key), viewer.live.summary(key, now)
    cells = viewer.live.cells(key, now) or []
    grid = grid_page(layout, state["states"], request.query_params) if layout and state else None
    listed = cell_list(
        viewer, cells, request.query_params, f"/suites/{quote(key, safe='')}", keep={"runs": grid and grid["page"]}
    )
    return viewer.page(
        "suite.html.j2", key=key, layout=layout, state=state, brief=_brief(state), grid=grid, **listed
    )  # fmt: skip


GRID_RUNS = 10  # runs a page of the campaign grid shows (11 levels: 110 columns)


def grid_page(layout: dict[str, Any], states: dict[str, list[str]], q: Any) -> dict[str, Any]:
    """One page of the campaign grid: the columns of ``GRID_RUNS`` runs (the URL's ``runs``, a page
    number; 0 when absent or out of range) and each row's cells of those columns as HTML. A grid
    drew every cell of every run, and a campaign of many runs (49,500 cells at 4M events) made the
    page as slow as its cells were many."""
    runs = sorted({run for _, run in layout["columns"]})
    pages = max(1, -(-len(runs) // GRID_RUNS))
    page = _page(q, "runs", pages)
    shown = set(runs[page * GRID_RUNS : (page + 1) * GRID_RUNS])
    columns = [i for i, (_, run) in enumerate(layout["columns"]) if run in shown]
    return {
        "columns": [layout["columns"][i] for i in columns],
        "rows": [grid_cells([row["cells"][i] for i in columns], states) for row in layout["rows"]],
        "page": page,
        "pages": pages,
        "runs": [min(shown), max(shown)] if shown else [],
        "all_runs": len(runs),
    }


def grid_cells(row: list[str | None], states: dict[str, list[str]]) -> markupsafe.Markup:
    """One row of the campaign grid's cells as HTML, every value escaped here: a grid has a cell per
    episode (12k at 1M events), and the template's four escapes a cell were half of the page's time."""
    out = []
    for eid in row:
        if eid is None:
            out.append("<td></td>")
            continue
        state, note = states[eid]
        out.append(
            f'<td class="st-{html.escape(state)}"><a href="/episodes/{html.escape(eid)}" '
            f'title="{html.escape(state)}: {html.escape(note)}"></a></td>'
        )
    return markupsafe.Markup("".join(out))


# The suite page's list of cells: its columns, the filters (each must be one of the values the
# campaign's cells have) and the columns sorted largest first by default.
CELL_COLUMNS = (
    "episode",
    "tree",
    "agent",
    "judge",
    "a",
    "run",
    "state",
    "steps",
    "coverage",
    "score",
    "started",
    "time",
)
CELL_FILTERS = ("tree", "agent", "judge", "a", "state")
_CELL_KEYS = {"episode": "episode_id", "score": "q_norm", "time": "seconds"}


def cell_list(
    viewer: Viewer, cells: list[dict[str, Any]], q: Any, path: str, keep: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A campaign's cells, filtered, sorted and paged as the URL says (``sort``, ``dir``, one
    parameter per filter, ``page``), with the coverage and last score of the cells the warehouse
    has. Every cell is sorted in memory (the campaign's fold holds them all), only a page is
    rendered; a parameter that is not one of the choices is ignored. ``keep``: parameters of the
    page's other parts (the grid's page of runs) that the list's links carry along."""
    choices = {key: [str(v) for v in sorted({c[key] for c in cells}, key=_natural)] for key in CELL_FILTERS}
    filters = {key: q.get(key) for key in CELL_FILTERS if q.get(key) in choices[key]}
    sort = q.get("sort") if q.get("sort") in CELL_COLUMNS else "tree"
    default_desc = sort in ("steps", "coverage", "score", "started", "time")
    desc = q.get("dir") == "desc" if q.get("dir") in ("asc", "desc") else default_desc
    page = _page(q)
    rows = [c for c in cells if all(str(c[k]) == v for k, v in filters.items())]

    def scored(some: list[dict[str, Any]]) -> None:  # the warehouse's columns of these cells
        scores = {r["episode_id"]: r for r in viewer.rows(sql.CELL_SCORES, [[c["episode_id"] for c in some]])}
        for c in some:
            found = scores.get(c["episode_id"], {})
            c.update(coverage=found.get("coverage"), q_norm=found.get("q_norm"), scored_by=found.get("judge_id"))

    key = _CELL_KEYS.get(sort, sort)
    by_score = key in ("coverage", "q_norm", "scored_by")
    if by_score:  # every cell's score before sorting by it; otherwise only the page's (12k cells at 1M events)
        scored(rows)
    present = sorted((c for c in rows if c[key] is not None), key=lambda c: _natural(c[key]), reverse=desc)
    rows = present + [c for c in rows if c[key] is None]  # cells without a value last, either way
    state = {**filters, "sort": sort, "dir": "desc" if desc else "asc"}
    kept = {k: v for k, v in (keep or {}).items() if v not in (None, "", 0)}
    shown = rows[page * sql.LIST_PAGE : (page + 1) * sql.LIST_PAGE]
    if not by_score:
        scored(shown)
    for c in shown:
        c["started_text"] = (
            "" if c["started"] is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c["started"]))
        )
        c["time_text"] = "" if c["seconds"] is None else _duration(c["seconds"])
    return {
        "cells": shown,
        "cell_state": state,
        "cell_page": page,
        "cell_matching": len(rows),
        "cell_choices": choices,
        "cell_link": _list_link(path, {**kept, **state}, page, "cells"),
        "cell_keep": kept,
        "page_size": sql.LIST_PAGE,
    }


def _page(q: Any, name: str = "page", pages: int = 1_000_000) -> int:
    """A page number from the URL's parameter ``name`` (0 when absent, not a number, or not below
    ``pages``)."""
    asked = q.get(name, "")
    return int(asked) if asked.isdigit() and int(asked) < pages else 0


def _list_link(path: str, state: dict[str, Any], page: int, anchor: str) -> Any:
    """The URL of a list at ``path`` in ``state`` (sort, direction, filters) and ``page``, as a
    function of ``changes`` to it (None drops a parameter; page 0 is the default)."""

    def link(to: str = anchor, **changes: Any) -> str:  # ``to``: another part of the page to land on
        merged = {**state, "page": page or None, **changes}
        return f"{path}?" + urlencode({k: v for k, v in merged.items() if v not in (None, "", 0)}) + f"#{to}"

    return link


def _natural(value: Any) -> Any:
    """A sort key that puts numbers in numeric order, and text in text order."""
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def api_suite(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    if viewer.live is None:
        return JSONResponse({"error": "no event store"}, status_code=404)
    viewer.live.refresh()
    state = viewer.live.summary(request.path_params["key"])
    return JSONResponse(
        state if state is not None else {"error": "no such campaign"}, status_code=200 if state else 404
    )


def api_campaigns(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    return JSONResponse({"campaigns": campaign_list(viewer)})


async def live_suite(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    key = request.path_params["key"]
    return _events(request, lambda: _live_suite_state(viewer, key))


def _live_suite_state(viewer: Viewer, key: str) -> dict[str, Any] | None:
    assert viewer.live is not None
    viewer.live.refresh()
    state = viewer.live.summary(key)
    if state is None:
        return {"key": key, "missing": True}
    return {**state, "brief": _brief(state)}


async def live_campaigns(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    return _events(request, lambda: {"campaigns": campaign_list(viewer)})


def _events(request: Request, read: Any) -> Response:
    """Server-sent events: ``read()``'s value whenever it changes (cells as a diff after the
    first), looked at every second, with a comment line as a heartbeat."""
    viewer: Viewer = request.app.state.viewer
    if viewer.live is None:
        return JSONResponse({"error": "no event store"}, status_code=404)

    async def stream() -> Any:
        sent: dict[str, Any] | None = None
        quiet = 0
        while not viewer.stopping.is_set() and not await request.is_disconnected():
            now = await run_in_threadpool(read)
            if now != sent:
                out = dict(now)
                if sent is not None and "states" in now and "states" in sent:
                    out["states"] = {k: v for k, v in now["states"].items() if sent["states"].get(k) != v}
                    out["diff"] = True
                yield f"data: {json.dumps(out, default=str)}\n\n"
                sent, quiet = now, 0
            else:
                quiet += 1
                if quiet % 15 == 0:
                    yield ": still here\n\n"
            await asyncio.sleep(1.0)

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})


# Every URL the viewer answers, in one place.
ROUTES = [
    Route("/", home),
    Route("/episodes/{episode_id:str}", episode),
    Route("/trees", trees_index),
    Route("/trees/{tree_id:str}", tree),
    Route("/suites/{key:str}", suite_page),
    Route("/figures", figures_page),
    Route("/figures/{name:str}.png", figure_png),
    Route("/search", search),
    Route("/api/search", api_search),
    Route("/api/campaigns", api_campaigns),
    Route("/api/suites/{key:str}", api_suite),
    Route("/live/campaigns", live_campaigns),
    Route("/live/suites/{key:str}", live_suite),
    Route("/compare", compare),
    Route("/compare/episodes", side_by_side),
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]


def _identity(path: str) -> tuple[int, int]:
    """A published warehouse file's identity: a publish replaces the file, so its inode changes."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return (0, 0)
    return (st.st_ino, st.st_mtime_ns)


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def allowed_hosts(host: str, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The names a request's Host header may carry (without port): the loopback names, the address
    the viewer listens on (unless it is a wildcard) and ``extra`` (``--allowed-host``)."""
    names = {*LOOPBACK_HOSTS, *(h.lower().strip("[]") for h in extra)}
    if host not in ("0.0.0.0", "::", ""):
        names.add(host.lower().strip("[]"))
    return frozenset(names)


def host_name(header: str) -> str:
    """``Host`` without its port: ``[::1]:8765`` -> ``::1``, ``localhost:8765`` -> ``localhost``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class _GuardedStarlette(Starlette):
    """The viewer's application, guarded before anything of Starlette's runs:

    - a request whose ``Host`` is not one the viewer was started for is answered 421 (a page of
      another site that rebinds its name to 127.0.0.1 cannot read transcripts through it);
    - every response, errors included (Starlette's own 500 page comes from its outermost
      middleware, inside this), carries the Content Security Policy, ``nosniff`` and
      ``no-referrer``. Event streams pass through untouched."""

    def __init__(self, *, hosts: frozenset[str], **kw: Any):
        super().__init__(**kw)
        self.hosts = hosts

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
        if host_name(host) not in self.hosts:
            body = (
                f"This viewer answers only for {', '.join(sorted(self.hosts))}; start it with --allowed-host NAME "
                "to add a name."
            ).encode()
            await with_headers(
                {
                    "type": "http.response.start",
                    "status": 421,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", b"%d" % len(body)),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await super().__call__(scope, receive, with_headers)


def _brief(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """A campaign's one-line summary: counts, times, tokens and cost, as text the pages show."""
    if state is None:
        return None
    counts = state["counts"]
    done = counts["finished"] + counts["limit"] + counts["failed"]
    eta = state["eta_s"]
    unpriced = state["unpriced_calls"]
    if unpriced and not state["cost_usd"]:
        cost = f"unknown (no price for the {unpriced} call(s))"
    else:
        cost = f"${state['cost_usd']:.4f}" + (f" (+{unpriced} call(s) with no price)" if unpriced else "")
    return {
        "key": state["key"],
        "name": state["name"],
        "progress": f"{done} of {state['cells']} cells ended",
        "counts": ", ".join(f"{n} {s}" for s, n in counts.items() if n),
        "status": state["status"],
        "status_note": state["status_note"],
        "elapsed": _duration(state["elapsed_s"]),
        "eta": (_duration(eta) if eta is not None else "unknown until a cell ends") if state["active"] else "—",
        "tokens": f"{state['tokens']:,}",
        "cost": cost,
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["latest_started"])),
        "runs": state["runs"],
    }


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def aligned(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """Two episodes' turns side by side, aligned by tree state: a turn's place is the state it
    answered and the candidate it had accepted (``difflib``'s longest matching runs over those), so
    where one agent takes detours the other's turns wait beside a gap, and both are level again where
    their paths rejoin. Returns the rows (``label``: the step, or each side's step where they differ)
    and the label of the first row where they part (another state, another candidate, or a turn only
    one of them took)."""
    import difflib

    def where(t: dict[str, Any]) -> tuple[Any, ...]:
        return (t["state"], t["best"] if t["accepted"] else None)

    rows: list[dict[str, Any]] = []

    def row(left: dict[str, Any] | None, right: dict[str, Any] | None, parted: bool) -> None:
        steps = [t["step"] if t is not None else None for t in (left, right)]
        label = str(steps[0]) if steps[0] == steps[1] else " / ".join("–" if x is None else str(x) for x in steps)
        rows.append({"label": label, "a": left, "b": right, "parted": parted, "first": False})

    matcher = difflib.SequenceMatcher(None, [where(t) for t in a], [where(t) for t in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                row(a[i], b[j], False)
            continue
        for k in range(max(i2 - i1, j2 - j1)):  # replaced turns face each other; the longer side's rest face gaps
            row(a[i1 + k] if i1 + k < i2 else None, b[j1 + k] if j1 + k < j2 else None, True)
    parted = next((r for r in rows if r["parted"]), None)
    if parted is not None:
        parted["first"] = True
    return rows, parted["label"] if parted is not None else None


def _system_prompt(template_set: str | None) -> str | None:
    """The system prompt the episode's agent was given (its template set's; None if not here)."""
    from inquitree.core.game.prompts import TemplateSet

    try:
        return TemplateSet(template_set).system_prompt if template_set else None
    except InquiTreeError:
        return None
