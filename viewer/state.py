"""The viewer's state: one read-only warehouse connection behind a lock, the search index, the
campaigns folded from the store, and the background sync that follows the store (see
``viewer/app.py`` for what the application guarantees)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import jinja2
from starlette.responses import HTMLResponse

from inquitree.boundary.text import warn
from inquitree.viewer import sql
from inquitree.viewer.live import Campaigns
from inquitree.viewer.search import (
    KINDS,
    IndexStopped,
    SearchIndex,
)
from inquitree.warehouse import Settings, Warehouse

HERE = Path(__file__).resolve().parent


TEMPLATES = HERE / "pages"


STATIC = HERE / "static"


REPORT_CSS = HERE.parent / "warehouse" / "report_pages" / "base.css.j2"


FILTERS = ("agent", "tree_id", "randomness", "status", "kind")


SEARCHES = 2  # searches at once: the rest of the worker threads stay free for pages


CATCH_UP_SECONDS = 1.0  # at most one warehouse sync this often, when the store has moved on


class _SyncStopped(Exception):
    """The server is stopping: the background sync ends at its next batch."""


class Viewer:
    def __init__(
        self,
        warehouse_path: str,
        db_url: str | None = None,
        sync: bool = False,
        stale_after: float = 300.0,
        write_index: bool = True,
        index_in_background: bool = False,
        settings: Settings | None = None,
        scope: tuple[tuple[str, ...], bool] = ((), False),
    ):
        """``scope``: the campaigns named, or with its flag the one-off episodes, whose episodes the
        lists, figures and tables speak about, as ``query --suite/--one-off`` (``Warehouse.scope``:
        every campaign's by default); an episode's own page shows any episode.
        ``write_index=False`` (``view --no-sync``): nothing is written, the search index beside the
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
        self.settings = settings  # the statistics of every page's tables (None: from the environment)
        self.wh = Warehouse(warehouse_path, read_only=True, settings=settings)
        self.scope = scope
        self.scope_line = self.wh.scope(*scope)  # what the pages leave out ('' when nothing)
        self.stopping = threading.Event()  # set when the server stops: open event streams end at once
        self.index = SearchIndex(warehouse_path + ".search.sqlite", stop=self.stopping)
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(TEMPLATES), str(REPORT_CSS.parent)]), autoescape=True
        )
        # the campaigns' folds are kept beside the warehouse, as the search index is: a restart
        # reads only what was appended since (written unless nothing may be, `view --no-sync`)
        folds = warehouse_path + ".campaigns.json"
        self.live = (
            Campaigns(db_url, stale_after, snapshot=folds, save_snapshot=write_index, background=index_in_background)
            if db_url is not None or sync
            else None
        )
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

    @contextlib.contextmanager
    def unscoped(self):
        """Every episode, for the length of a ``with`` (the caller holds ``lock``): the compare page
        pairs as `inquitree compare` does, by suite, one-off episodes when asked."""
        self.wh.con.execute("RESET VARIABLE episode_scope")
        try:
            yield
        finally:
            self.scope_line = self.wh.scope(*self.scope)

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
            except IndexStopped:  # the server is stopping: the index's temporary file is gone
                break
            except Exception as exc:  # noqa: BLE001 - a thread that died would leave search "being built"
                warn(f"inquitree view: the search index was not updated ({exc})")
            with self.index_guard:
                if not self.index_again:
                    self.indexing = None
                    return
                self.index_again = False
        with self.index_guard:
            self.indexing = None

    def close(self, seconds: float = 30.0) -> None:
        """The server stopped: the background sync ends at its next batch, the index's build or
        update at its next batch, removing what it wrote (a daemon thread killed at exit left its
        temporary file), and the campaigns' folds and the warehouse are closed; waits up to
        ``seconds`` for each thread."""
        self.stopping.set()
        self.wait_for_sync(seconds)
        thread = self.indexing
        if thread is not None:
            thread.join(seconds)
        if self.live is not None:
            self.live.close()
        with self.lock:
            self.wh.close()

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
            # Not a daemon: an interpreter that exits waits for it rather than ending it inside DuckDB
            # (which aborts the process); a stopping server ends it at its next batch instead.
            self.syncing = threading.Thread(target=self._sync_in_background, name="warehouse-sync")
            self.syncing.start()
            return True

    def _sync_in_background(self) -> None:
        def stop_when_asked(events: int, position: int) -> None:
            if self.stopping.is_set():
                raise _SyncStopped

        try:
            with Warehouse(self.path, wait=0) as writer:
                writer.sync(self.db_url, progress=stop_when_asked)
        except _SyncStopped:  # the server is stopping: what was committed is published, the next sync goes on
            pass
        except Exception as exc:  # noqa: BLE001 - another process is syncing (its snapshot will be taken up), or the store failed
            warn(f"inquitree view: the warehouse was not synced ({exc}); pages show it as it was")
        finally:
            with self.sync_guard:
                self.syncing = None
        with contextlib.suppress(Exception):
            self.follow_published()

    def loading(self) -> bool:
        """True while this viewer's sync of newer events runs, or its campaigns' folds catch up with
        the store (the pages say so)."""
        return self.syncing is not None or (self.live is not None and self.live.folding)

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
        self.wh = Warehouse(self.path, read_only=True, settings=self.settings)
        self.scope_line = self.wh.scope(*self.scope)
        old.close()
        self.refresh_index()

    def page(self, name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("loading", self.loading())
        values.setdefault("scope", self.scope_line)
        return HTMLResponse(self.env.get_template(name).render(**values), status_code=status_code)


def _identity(path: str) -> tuple[int, int]:
    """A published warehouse file's identity: a publish replaces the file, so its inode changes."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return (0, 0)
    return (st.st_ino, st.st_mtime_ns)
