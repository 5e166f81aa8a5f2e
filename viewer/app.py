"""The viewer's web application (Starlette): read-only pages over the warehouse.

Every page is rendered with Jinja2's autoescaping; model output shown as Markdown goes through the
report's ``markdown_html``, which escapes first. The warehouse is one read-only, sandboxed DuckDB
connection (it reads the warehouse and nothing else, see ``warehouse/sync.py``) behind a lock:
DuckDB connections are not shared between threads, and Starlette runs each request in a thread.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from inquitree.viewer.search import KINDS, SearchIndex
from inquitree.warehouse.report import episode_items, table_html
from inquitree.warehouse.sync import Warehouse

TEMPLATES = Path(__file__).resolve().parent / "templates"
REPORT_CSS = Path(__file__).resolve().parent.parent / "warehouse" / "report_templates" / "base.css.j2"
FILTERS = ("agent", "tree_id", "randomness", "status", "kind")


class Viewer:
    def __init__(self, warehouse_path: str):
        self.wh = Warehouse(warehouse_path, read_only=True)
        self.lock = threading.Lock()
        self.index = SearchIndex(warehouse_path + ".search.sqlite")
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(TEMPLATES), str(REPORT_CSS.parent)]), autoescape=True
        )
        self.refresh_index()

    def rows(self, sql: str, args: list[Any] | None = None) -> list[dict[str, Any]]:
        with self.lock:
            cur = self.wh.con.execute(sql, args or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def refresh_index(self) -> None:
        """Rebuild the search index if the warehouse has synced since, and the search filters' choices
        (each a pass over the episodes view, too slow to repeat on every search of a large store)."""
        position = self.rows("SELECT coalesce(max(last_position), 0) AS p FROM sync_state")[0]["p"]
        if self.index.position() != position:
            with self.lock:
                self.index.build(self.wh, position)
        found = self.rows(
            "SELECT list(DISTINCT agent ORDER BY agent) AS agent, list(DISTINCT tree_id ORDER BY tree_id) AS tree_id, "
            "list(DISTINCT randomness::VARCHAR ORDER BY randomness::VARCHAR) AS randomness, "
            "list(DISTINCT status ORDER BY status) AS status FROM episodes"
        )[0]
        self.choices = {
            key: [str(v) for v in (found[key] or [])] for key in ("agent", "tree_id", "randomness", "status")
        }
        self.choices["kind"] = list(KINDS)

    def page(self, name: str, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**values))


def create_app(warehouse_path: str) -> Starlette:
    viewer = Viewer(warehouse_path)

    def home(request: Request) -> Response:
        episodes = viewer.rows(
            "SELECT episode_id, tree_id, agent, randomness, status, ended_by, steps, coverage, started_at "
            "FROM episodes ORDER BY started_at DESC, episode_id LIMIT 100"
        )
        return viewer.page("index.html.j2", episodes=episodes)

    def episode(request: Request) -> Response:
        episode_id = request.path_params["episode_id"]
        found = viewer.rows("SELECT * FROM episodes WHERE episode_id = ?", [episode_id])
        if not found:
            return viewer.page("missing.html.j2", what=f"episode {episode_id}")
        with viewer.lock:
            items = episode_items(viewer.wh, episode_id)
            scores = table_html(
                viewer.wh.con.sql("SELECT * FROM episode_scores WHERE episode_id = ?", params=[episode_id]).pl()
            )
        template_set = viewer.rows("SELECT template_set FROM ev_episode_started WHERE episode_id = ?", [episode_id])
        return viewer.page(
            "episode.html.j2",
            ep=found[0],
            items=items,
            scores=scores,
            system_prompt=_system_prompt(template_set[0]["template_set"] if template_set else None),
        )

    def search_hits(request: Request) -> tuple[str, dict[str, str], list[dict[str, Any]]]:
        query = request.query_params.get("q", "")
        filters = {k: request.query_params.get(k, "") for k in FILTERS}
        return query, filters, viewer.index.search(query, filters)

    def search(request: Request) -> Response:
        query, filters, hits = search_hits(request)
        return viewer.page("search.html.j2", query=query, filters=filters, choices=viewer.choices, hits=hits)

    def api_search(request: Request) -> Response:
        query, filters, hits = search_hits(request)
        return JSONResponse({"query": query, "filters": filters, "hits": hits})

    def compare(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        agents = viewer.choices["agent"]
        if a not in agents or b not in agents:
            return viewer.page("compare.html.j2", a=a, b=b, agents=agents, table=None, cells=[])
        with viewer.lock:
            table = table_html(viewer.wh.query("compare", {"agent_a": a, "agent_b": b}))
        cells = viewer.rows(_CELLS, [a, b])
        return viewer.page("compare.html.j2", a=a, b=b, agents=agents, table=table, cells=cells)

    def side_by_side(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        turns = {ep: viewer.rows(_TURNS, [ep]) for ep in (a, b)}
        if not turns[a] or not turns[b]:
            return viewer.page("missing.html.j2", what=f"pair of episodes {a!r} and {b!r}")
        rows, divergence = aligned(turns[a], turns[b])
        return viewer.page("side_by_side.html.j2", a=a, b=b, rows=rows, divergence=divergence)

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/episodes/{episode_id:str}", episode),
            Route("/search", search),
            Route("/api/search", api_search),
            Route("/compare", compare),
            Route("/compare/episodes", side_by_side),
        ]
    )
    app.state.viewer = viewer
    return app


# The cells both agents ran (tree, level, seed), each with its outcome and the subtopics it reached.
_CELLS = """
WITH reached AS (
    SELECT episode_id, list(DISTINCT node ORDER BY node) AS subtopics FROM ev_transitioned
    WHERE to_state = 'subtopic' GROUP BY ALL
), cell AS (
    SELECT e.agent, e.tree_id, e.randomness, e.seed, e.episode_id, e.status, e.ended_by, e.coverage,
           coalesce(r.subtopics, []) AS subtopics
    FROM episodes e LEFT JOIN reached r USING (episode_id) WHERE e.agent IN ($1, $2)
)
SELECT x.tree_id, x.randomness, x.seed, x.episode_id AS a_episode, y.episode_id AS b_episode,
       x.status AS a_status, y.status AS b_status, x.coverage AS a_coverage, y.coverage AS b_coverage,
       list_filter(x.subtopics, lambda s: NOT list_contains(y.subtopics, s)) AS only_a,
       list_filter(y.subtopics, lambda s: NOT list_contains(x.subtopics, s)) AS only_b
FROM cell x JOIN cell y USING (tree_id, randomness, seed)
WHERE x.agent = $1 AND y.agent = $2
ORDER BY x.tree_id, x.randomness, x.seed
"""
# An episode's turns with where each left the engine: the state answered, the candidate matched.
_TURNS = """
SELECT r.step, r.state, r.action, r.raw, m.best, m.accepted, m.best_cosine, m.tau
FROM ev_agent_replied r LEFT JOIN ev_match_scored m USING (episode_id, step)
WHERE r.episode_id = ? ORDER BY r.step
"""


def aligned(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int | None]:
    """Two episodes' turns side by side, step by step (both start at the Topic and every step answers
    one state), and the first step where they part: another state, or another candidate accepted."""
    rows, divergence = [], None
    for k in range(max(len(a), len(b))):
        left, right = (a[k] if k < len(a) else None), (b[k] if k < len(b) else None)

        def where(t: dict[str, Any] | None) -> tuple[Any, ...] | None:
            return None if t is None else (t["state"], t["best"] if t["accepted"] else None)

        parted = where(left) != where(right)
        if parted and divergence is None:
            divergence = k + 1
        rows.append({"step": k + 1, "a": left, "b": right, "parted": parted})
    return rows, divergence


def _system_prompt(template_set: str | None) -> str | None:
    """The system prompt the episode's agent was given (its template set's; None if not here)."""
    from inquitree.core.templates import TemplateSet
    from inquitree.events.errors import InquiTreeError

    try:
        return TemplateSet(template_set).system_prompt if template_set else None
    except InquiTreeError:
        return None
