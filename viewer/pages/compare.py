"""Two agents compared on the cells both ran (``inquitree compare``'s table and pairing)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from inquitree.viewer import sql
from inquitree.viewer.state import Viewer
from inquitree.warehouse import PAIR_COLUMNS, table_html


def compare(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    viewer.catch_up()
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    one_off = request.query_params.get("one_off") == "1"
    agents = [str(a) for a in viewer.rows(sql.ALL_AGENTS)[0]["agent"] or []]
    page: dict[str, Any] = {"a": a, "b": b, "agents": agents, "one_off": one_off}
    if a not in agents or b not in agents or a == b:
        return viewer.page("compare.html.j2", table=None, cells=[], **page)
    with viewer.lock, viewer.unscoped():  # pairs as `inquitree compare` makes them: by suite, one-off when asked
        df = viewer.wh.query("compare", {"agents": [a, b], "one_off": one_off, "compare_pairs": False})
        paired = df.height and df["paired_cells"].max()
        table = table_html(df.drop(PAIR_COLUMNS)) if paired else None  # the pairs are listed below it
        cells = viewer.rows(sql.CELLS, [a, b, one_off])
    return viewer.page("compare.html.j2", table=table, cells=cells, **page)
