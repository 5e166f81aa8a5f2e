"""The viewer's web application (Starlette): read-only pages over the warehouse and the store, and,
with ``view --label``, one page that appends a labeller's answers (``viewer/pages/label.py``).

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

This module assembles the application: the routes (``ROUTES`` lists every URL), the Host check and
the security headers. The pages are module-level functions in ``viewer/pages/``, one module each
beside their templates, reading the :class:`~inquitree.viewer.state.Viewer` (``viewer/state.py``)
from ``request.app.state``; ``viewer/sql.py`` holds every statement they run.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from inquitree.viewer.pages.compare import compare
from inquitree.viewer.pages.episode import episode, side_by_side
from inquitree.viewer.pages.figures import figure_png, figures_page
from inquitree.viewer.pages.home import home
from inquitree.viewer.pages.label import Labelling, label_page
from inquitree.viewer.pages.search import api_search, search
from inquitree.viewer.pages.suite import api_campaigns, api_suite, live_campaigns, live_suite, suite_page
from inquitree.viewer.pages.trees import tree, trees_index
from inquitree.viewer.state import STATIC, Viewer
from inquitree.warehouse import Settings

# Scripts and images from this server only; inline styles (the report's stylesheet) but no inline script.
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def create_app(
    warehouse_path: str,
    db_url: str | None = None,
    sync: bool = False,
    stale_after: float = 300.0,
    host: str = "127.0.0.1",
    extra_hosts: tuple[str, ...] = (),
    write_index: bool = True,
    index_in_background: bool = False,
    settings: Settings | None = None,
    scope: tuple[tuple[str, ...], bool] = ((), False),
    labelling: Labelling | None = None,
) -> Starlette:
    """The viewer over the warehouse at ``warehouse_path``; with ``db_url`` (or ``sync``) its
    campaign pages follow the store, and with ``sync`` its other pages catch up with it too.
    It answers requests whose Host is a loopback name, ``host`` or one of ``extra_hosts`` only.
    ``settings``: the statistics its tables and figures use (``view --fixed-papers``,
    ``--joint-ranks``), as ``inquitree report`` and ``query`` take them; ``scope``: the episodes its
    lists and figures speak about, as ``query --suite/--one-off`` (``Viewer``); ``labelling``: the
    sample ``/label`` labels (``view --label``), on a loopback address only."""
    if labelling is not None and host not in LOOPBACK_HOSTS:
        raise ValueError(f"labelling writes to the store: the viewer serves it on a loopback address, not {host!r}")
    viewer = Viewer(warehouse_path, db_url, sync, stale_after, write_index, index_in_background, settings, scope)
    app = _GuardedStarlette(hosts=allowed_hosts(host, extra_hosts), routes=ROUTES)
    app.state.viewer = viewer
    app.state.labelling = labelling
    return app


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
    Route("/label", label_page, methods=["GET", "POST"]),  # the one page that writes: view --label
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]


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
