"""The viewer's first page after a campaign has appended many events (the goal: at most 2 s).

    python bench/viewer_first_page.py [--before 20000] [--appended 250000] [--runs 3] [--out FILE]

A store with one campaign (``--before`` events, ``bench/warehouse.py generate``) is synced and
opened once by the viewer, as a lab's viewer was yesterday (its warehouse, search index and
campaign folds written beside it); then a second campaign appends ``--appended`` events. Timed,
as ``inquitree view`` starts: from making the application (which folds the campaigns and starts the
background sync) to the home page's answer, median of ``--runs`` (each from the same files, put
back before it), with where the time went. The page must say that
newer events are being loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from needs import need  # bench/needs.py

from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse
from warehouse import generate  # bench/warehouse.py

LOADING = "Newer events are being loaded"


def first_page(store_file: Path, warehouse: Path, saved: Path) -> dict:
    """One run, from the files as ``saved`` holds them (put back first, at their own paths: a
    warehouse belongs to its store's URL): seconds to make the app and to answer the home page."""
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    for f in store_file.parent.iterdir():
        if f.is_file() and f.name.startswith((store_file.name, warehouse.name)):
            f.unlink()
    for f in saved.iterdir():
        shutil.copy(f, store_file.parent / f.name)
    url, path = f"sqlite:///{store_file}", str(warehouse)
    t0 = time.perf_counter()
    app = create_app(path, url, sync=True, index_in_background=True)
    made = time.perf_counter() - t0
    started = app.state.viewer.catch_up(force=True)
    page = TestClient(app, base_url="http://127.0.0.1").get("/")
    answered = time.perf_counter() - t0
    said = LOADING in page.text
    app.state.viewer.close()
    return {"app_s": made, "first_page_s": answered, "sync_started": started, "says_loading": said}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=int, default=20_000)
    ap.add_argument("--appended", type=int, default=250_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    need("starlette", "httpx", "uvicorn")  # the viewer and its test client
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        store_file, warehouse = d / "events.sqlite", d / "w.duckdb"
        url = f"sqlite:///{store_file}"
        with EventStore(url) as store:
            generate(store, args.before, campaign="yesterday")
        with Warehouse(str(warehouse)) as wh:
            wh.sync(url)
        from starlette.testclient import TestClient

        from inquitree.viewer.app import create_app

        opened = create_app(str(warehouse), url, sync=True)  # its index and campaign folds, written beside it
        assert TestClient(opened, base_url="http://127.0.0.1").get("/").status_code == 200
        opened.state.viewer.wait_for_sync()
        opened.state.viewer.close()  # its threads stopped: one still writing crashed the folder's removal
        with EventStore(url) as store:
            before = store.last_position()
            generate(store, args.appended, start_seed=1_000_000, campaign="today")
            appended = store.last_position() - before
        saved = d / "saved"
        saved.mkdir()
        for f in d.iterdir():
            if f.is_file() and f.name.startswith((store_file.name, warehouse.name)):
                shutil.copy(f, saved / f.name)
        load_before = os.getloadavg()[0]
        runs = [first_page(store_file, warehouse, saved) for _ in range(args.runs)]
    result = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "events_before": before,
        "events_appended": appended,
        "first_page_s_median": round(statistics.median(r["first_page_s"] for r in runs), 3),
        "app_s_median": round(statistics.median(r["app_s"] for r in runs), 3),
        "runs": runs,
        "goal_s": 2.0,
        "load_average_1min (before, after)": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
