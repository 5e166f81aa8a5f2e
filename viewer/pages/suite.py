"""A campaign's page: its grid of cells and their list, live as the campaign runs (server-sent events)."""

from __future__ import annotations

import asyncio
import html
import json
import time
from typing import Any
from urllib.parse import quote

import markupsafe
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from inquitree.viewer import sql
from inquitree.viewer.pages.common import campaign_brief, duration, list_link, natural, page_number
from inquitree.viewer.pages.home import campaign_list
from inquitree.viewer.state import Viewer


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
        "suite.html.j2", key=key, layout=layout, state=state, brief=campaign_brief(state), grid=grid, **listed
    )  # fmt: skip


GRID_RUNS = 10  # runs a page of the campaign grid shows (11 levels: 110 columns)


def grid_page(layout: dict[str, Any], states: dict[str, list[str]], q: Any) -> dict[str, Any]:
    """One page of the campaign grid: the columns of ``GRID_RUNS`` runs (the URL's ``runs``, a page
    number; 0 when absent or out of range) and each row's cells of those columns as HTML. A grid
    drew every cell of every run, and a campaign of many runs (49,500 cells at 4M events) made the
    page as slow as its cells were many."""
    runs = sorted({run for _, run in layout["columns"]})
    pages = max(1, -(-len(runs) // GRID_RUNS))
    page = page_number(q, "runs", pages)
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
    choices = {key: [str(v) for v in sorted({c[key] for c in cells}, key=natural)] for key in CELL_FILTERS}
    filters = {key: q.get(key) for key in CELL_FILTERS if q.get(key) in choices[key]}
    sort = q.get("sort") if q.get("sort") in CELL_COLUMNS else "tree"
    default_desc = sort in ("steps", "coverage", "score", "started", "time")
    desc = q.get("dir") == "desc" if q.get("dir") in ("asc", "desc") else default_desc
    page = page_number(q)
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
    present = sorted((c for c in rows if c[key] is not None), key=lambda c: natural(c[key]), reverse=desc)
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
        c["time_text"] = "" if c["seconds"] is None else duration(c["seconds"])
    return {
        "cells": shown,
        "cell_state": state,
        "cell_page": page,
        "cell_matching": len(rows),
        "cell_choices": choices,
        "cell_link": list_link(path, {**kept, **state}, page, "cells"),
        "cell_keep": kept,
        "page_size": sql.LIST_PAGE,
    }


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
    return {**state, "brief": campaign_brief(state)}


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
