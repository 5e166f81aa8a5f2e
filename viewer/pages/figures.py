"""The report's figures and tables, drawn from the warehouse as it is now."""

from __future__ import annotations

import tempfile
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from inquitree.viewer.state import Viewer
from inquitree.warehouse import figures, table_html


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
