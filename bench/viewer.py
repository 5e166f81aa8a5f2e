"""The viewer's pages on a large store (each page under 300 ms server side, search under 500 ms).

    python bench/viewer.py [--db URL | --events 1000000] [--runs 5] [--out FILE] [--quick]

Without ``--db`` it generates a store (``bench/warehouse.py generate``) in a temporary folder whose
episodes are the cells of one campaign ("bench": 3 trees x 6 agents x 11 levels, run after run,
caught part way through its last run), syncs a warehouse, builds the search index and folds the
campaign (both timed), then times each page in this process through Starlette's test client
(server side: routing, queries, rendering; median of ``--runs``): the campaign grid, recent
episodes, an episode page, the tree with that episode's path, a search for a common phrase and
for a rare one; then the same pages again, in turn, while ``inquitree warehouse rebuild`` loads
every event again in another process. Then it serves the same application with uvicorn and opens
the grid, the episode and the search in headless Chromium (Playwright), reading each page's first
contentful paint.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests_support: the browser

from needs import browser_missing, need  # bench/needs.py

from inquitree.warehouse.warehouse import Warehouse
from warehouse import on_a_large_store  # bench/warehouse.py


def measure(url: str, d: Path, runs: int) -> dict:
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    path = str(d / "w.duckdb")
    t0 = time.perf_counter()
    with Warehouse(path) as wh:
        synced = wh.sync(url).events
        sync_s = time.perf_counter() - t0
        # a finished episode to open (a search may run out of its budget on a loaded machine)
        episode, tree = wh.con.execute(
            "SELECT episode_id, tree_id FROM episodes WHERE status = 'done' ORDER BY episode_id LIMIT 1"
        ).fetchone()
    # as `inquitree view` starts on a warehouse without a search index: the pages answer while the
    # index's first build runs in its own thread
    Path(path + ".search.sqlite").unlink(missing_ok=True)
    t0 = time.perf_counter()
    background = create_app(path, url, index_in_background=True)
    assert TestClient(background, base_url="http://127.0.0.1").get("/").status_code == 200
    first_page_s = time.perf_counter() - t0
    building = background.state.viewer.indexing
    if building is not None:
        building.join()
    index_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    app = create_app(path, url)  # on the index just built: folds the campaigns
    start_s = time.perf_counter() - t0
    client = TestClient(app, base_url="http://127.0.0.1")  # the viewer answers loopback names only
    grid = client.get("/api/suites/bench")  # a store from `bench/warehouse.py generate` holds that campaign
    campaign = grid.json() if grid.status_code == 200 else {"cells": None, "counts": None}
    pages = {}
    if grid.status_code == 200:
        pages = {
            "campaign grid (/suites/bench)": ("/suites/bench", {}),
            "campaign cells by q_norm, one agent": ("/suites/bench", {"sort": "score", "agent": "random-1"}),
        }
    pages |= {
        "home: campaigns and recent episodes (/)": ("/", {}),
        "home: episodes by q_norm, finished only": ("/", {"sort": "score", "dir": "asc", "status": "done"}),
        "an episode": (f"/episodes/{episode}", {}),
        "the tree with the episode's path": (f"/trees/{tree}", {"episode": episode}),
        "search, a common word (100 hits shown)": ("/search", {"q": "sleep"}),
        "search, a rare phrase": ("/search", {"q": "novel-object recognition"}),
    }
    rows = []
    for name, (route, params) in pages.items():
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            response = client.get(route, params=params)
            times.append(time.perf_counter() - t)
            assert response.status_code == 200, (route, response.status_code)
        rows.append({"page": name, "route": route, "median_ms": round(statistics.median(times) * 1000, 1)})
    during = pages_during_rebuild(client, pages, url, path)
    for row in rows:
        row["median_ms_during_rebuild"] = during["pages"].get(row["page"])
    painted = [name for name in pages if name.startswith(("campaign grid", "an episode", "search, a common"))]
    no_browser = browser_missing()
    if no_browser:
        print(f"viewer.py: first paints skipped: {no_browser}", file=sys.stderr)
    paints = {} if no_browser else first_paints(app, {name: pages[name] for name in painted}, runs)
    for row in rows:
        row["first_contentful_paint_ms"] = paints.get(row["page"])
    return {
        "events": synced,
        "campaign_cells": campaign["cells"],
        "campaign_counts": campaign["counts"],
        "sync_s": round(sync_s, 2),
        "first start: home page answered after s (index built in the background)": round(first_page_s, 2),
        "first start: search index built after s": round(index_s, 2),
        "viewer_start_s on an existing index (campaign fold)": round(start_s, 2),
        "rebuild_beside_s": during["rebuild_s"],
        "page_loads_during_rebuild": during["loads"],
        "pages": rows,
    }


def pages_during_rebuild(client, pages: dict[str, tuple[str, dict]], url: str, path: str) -> dict:
    """Each page's median time while ``inquitree warehouse rebuild`` loads every event again in
    another process (the viewer keeps reading the published snapshot; the rebuild publishes the
    next one when it is whole): the pages are loaded in turn until the rebuild ends."""
    import subprocess

    rebuild = subprocess.Popen(
        [sys.executable, "-m", "inquitree", "warehouse", "rebuild", "--db", url, "--warehouse", path],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    t0 = time.perf_counter()
    times: dict[str, list[float]] = {name: [] for name in pages}
    loads = 0
    while rebuild.poll() is None or loads < len(pages):
        for name, (route, params) in pages.items():
            t = time.perf_counter()
            response = client.get(route, params=params)
            times[name].append(time.perf_counter() - t)
            assert response.status_code == 200, (route, response.status_code)
            loads += 1
    rebuild_s = time.perf_counter() - t0
    assert rebuild.wait() == 0, rebuild.stderr.read() if rebuild.stderr else ""
    return {
        "rebuild_s": round(rebuild_s, 2),
        "loads": loads,
        "pages": {name: round(statistics.median(ts) * 1000, 1) for name, ts in times.items()},
    }


def first_paints(app, pages: dict[str, tuple[str, dict]], runs: int) -> dict[str, float]:
    """Each page's first contentful paint in headless Chromium (median of ``runs`` fresh loads)."""
    import urllib.parse

    from tests_support import chromium_browser, served

    out = {}
    with served(app) as base, chromium_browser() as browser:
        for name, (route, params) in pages.items():
            url = base + route + ("?" + urllib.parse.urlencode(params) if params else "")
            paints = []
            for _ in range(runs):
                page = browser.new_page()
                page.goto(url, wait_until="load")
                paints.append(
                    page.evaluate(
                        "() => new Promise(done => new PerformanceObserver((list, obs) => {"
                        " done(list.getEntriesByName('first-contentful-paint')[0].startTime); obs.disconnect(); })"
                        ".observe({type: 'paint', buffered: true}))"
                    )
                )
                page.close()
            out[name] = round(statistics.median(paints), 1)
    return out


def main() -> None:
    need("starlette", "httpx", "uvicorn")  # the viewer and its test client; the browser part is optional
    on_a_large_store(__doc__ or "", measure, campaign="bench")


if __name__ == "__main__":
    main()
