"""The worst search one can send the viewer, on a warehouse of at least 100k indexed texts.

    python bench/search_worst.py [--db URL | --events 400000] [--runs 3] [--out FILE] [--quick]

Generates a store (``bench/warehouse.py generate``) unless given one, syncs a warehouse, builds
the search index, and then:

1. times each query of a hostile catalogue through ``/api/search`` (median and worst of
   ``--runs``): a common word, eight common words, one word repeated 3,000 times, eight words
   repeated, FTS5 syntax, a NUL, 200 characters of one letter;
2. times the unbounded search the viewer ran before (every word of the query passed to FTS5's
   snippet) on one word repeated 200 times, cut off after 60 s: the cost the bounds remove;
3. serves the viewer with uvicorn, keeps 45 of the worst searches in flight from other threads
   and times the home page meanwhile: pages must stay answering.

The bound docs/viewer.md states is the worst time of part 1 and the page time of part 3.
"""

from __future__ import annotations

import concurrent.futures
import sqlite3
import statistics
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests_support: uvicorn in a thread

from inquitree.warehouse.warehouse import Warehouse
from warehouse import on_a_large_store  # bench/warehouse.py

QUERIES = {
    "a common word": "ACTION",
    "eight common words": "ACTION THOUGHT the of and to a in",
    "one word repeated 3,000 times": " ".join(["ACTION"] * 3000),
    "eight words, each repeated 400 times": " ".join(["ACTION THOUGHT the of and to a in"] * 400),
    "FTS5 syntax": '" OR * NEAR(ACTION THOUGHT) ^the -- AND',
    "a NUL inside": "ACT\x00ION the",
    "200 characters of one letter": "a" * 200,
}


def old_search(index: Path, words: int, cap_s: float = 60.0) -> dict:
    """The search as it ran before the bounds: every word quoted into MATCH and marked by snippet()."""
    match = " ".join(['"ACTION"'] * words)
    con = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    deadline = time.monotonic() + cap_s
    con.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    t0 = time.perf_counter()
    try:
        con.execute(
            "SELECT episode_id, snippet(texts, 0, '[', ']', ' … ', 16) FROM texts WHERE texts MATCH ? "
            "ORDER BY rank LIMIT 100",
            (match,),
        ).fetchall()
        finished = True
    except sqlite3.OperationalError:
        finished = False
    finally:
        con.close()
    return {"words": words, "seconds": round(time.perf_counter() - t0, 2), "finished": finished, "cap_s": cap_s}


def measure(url: str, d: Path, runs: int) -> dict:
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    path = str(d / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(url)
    t0 = time.perf_counter()
    app = create_app(path)
    index_s = time.perf_counter() - t0
    index = Path(path + ".search.sqlite")
    with sqlite3.connect(index) as con:
        texts = con.execute("SELECT count(*) FROM texts").fetchone()[0]
    client = TestClient(app, base_url="http://127.0.0.1")
    rows = []
    for name, q in QUERIES.items():
        times, answers = [], []
        for _ in range(runs):
            t = time.perf_counter()
            r = client.get("/api/search", params={"q": q})
            times.append(time.perf_counter() - t)
            answers.append((r.status_code, len(r.json()["hits"]), r.json().get("problem")))
        rows.append(
            {
                "query": name,
                "median_ms": round(statistics.median(times) * 1000, 1),
                "worst_ms": round(max(times) * 1000, 1),
                "status": answers[-1][0],
                "hits": answers[-1][1],
                "problem": answers[-1][2],
            }
        )
    before = old_search(index, 200)
    pages = pages_under_load(app, QUERIES["eight words, each repeated 400 times"], runs)
    return {
        "indexed_texts": texts,
        "index_build_s": round(index_s, 2),
        "searches": rows,
        "worst_search_ms": max(r["worst_ms"] for r in rows),
        "unbounded_search_before": before,
        "pages_while_45_worst_searches_run": pages,
    }


def pages_under_load(app, query: str, runs: int) -> dict:
    from tests_support import served

    def get(url: str) -> tuple[int, float]:
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=120) as r:
                r.read()
                status = r.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        return status, time.perf_counter() - t

    with served(app) as base:
        quiet = [get(base + "/")[1] for _ in range(runs)]
        search = base + "/api/search?" + urllib.parse.urlencode({"q": query})
        with concurrent.futures.ThreadPoolExecutor(45) as pool:
            flood = [pool.submit(get, search) for _ in range(45)]
            time.sleep(0.2)
            loaded = [get(base + "/")[1] for _ in range(runs)]
            answers = [f.result() for f in flood]
    return {
        "home_median_ms_quiet": round(statistics.median(quiet) * 1000, 1),
        "home_worst_ms_during_45_searches": round(max(loaded) * 1000, 1),
        "searches_answered": len(answers),
        "searches_by_status": {str(s): sum(1 for a in answers if a[0] == s) for s in sorted({a[0] for a in answers})},
        "slowest_search_s": round(max(a[1] for a in answers), 2),
    }


if __name__ == "__main__":
    from needs import need  # bench/needs.py

    need("starlette", "httpx", "uvicorn")
    on_a_large_store(__doc__, measure)
