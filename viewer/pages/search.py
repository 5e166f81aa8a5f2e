"""Full-text search over every transcript, bounded in time and in searches at once."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from inquitree.viewer.search import (
    MAX_QUERY_CHARS,
    RANK_AT_MOST,
    SEARCH_SECONDS,
    SearchStopped,
    terms,
)
from inquitree.viewer.state import FILTERS, Viewer


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
