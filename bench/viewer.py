"""The viewer's pages on a large store (issue 32: each page under 300 ms server side, search under 500 ms).

    python bench/viewer.py [--db URL | --events 1000000] [--runs 5] [--out FILE] [--quick]

Without ``--db`` it generates a store (``bench/warehouse.py generate``) in a temporary folder,
syncs a warehouse, builds the search index (timed), then times each page in this process through
Starlette's test client (server side: routing, queries, rendering; median of ``--runs``): the
recent episodes, an episode page, a search for a common phrase and for a rare one.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inquitree.warehouse.sync import Warehouse  # noqa: E402
from warehouse import on_a_large_store  # noqa: E402  (bench/warehouse.py)


def measure(url: str, d: Path, runs: int) -> dict:
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    path = str(d / "w.duckdb")
    t0 = time.perf_counter()
    with Warehouse(path) as wh:
        synced = wh.sync(url).events
    sync_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    client = TestClient(create_app(path))  # builds the search index
    index_s = time.perf_counter() - t0
    episode = client.get("/api/search", params={"q": "ACTION"}).json()["hits"][0]["episode_id"]
    pages = {
        "recent episodes (/)": ("/", {}),
        "an episode": (f"/episodes/{episode}", {}),
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
    return {"events": synced, "sync_s": round(sync_s, 2), "search_index_s": round(index_s, 2), "pages": rows}


def main() -> None:
    on_a_large_store(__doc__ or "", measure)


if __name__ == "__main__":
    main()
