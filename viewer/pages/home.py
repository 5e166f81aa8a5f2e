"""The home page: campaigns in the store and the episodes, sorted, filtered and paged by the URL."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from inquitree.viewer import sql
from inquitree.viewer.pages.common import LIST_FILTERS, campaign_brief, list_link, page_number
from inquitree.viewer.state import Viewer


def home(request: Request) -> Response:
    """The campaigns, and the episodes sorted and filtered as the URL says (``sort``, ``dir``, one
    parameter per filter, ``page``), so a view of the list can be bookmarked and shared. Only a
    page of rows is read; a value that is not one of the choices is ignored, never sent to SQL
    text."""
    viewer: Viewer = request.app.state.viewer
    viewer.catch_up()
    q = request.query_params
    asked = q.get("sort", "")
    sort = asked if asked in sql.LIST_SORTS else "started"
    direction = "ASC" if q.get("dir") == "asc" else "DESC" if q.get("dir") == "desc" else (
        "DESC" if sort in ("started", "score", "coverage", "steps") else "ASC"
    )  # fmt: skip
    filters = {key: q.get(key) for key, choices in LIST_FILTERS if q.get(key) in viewer.choices.get(choices, [])}
    page = page_number(q)
    episodes = viewer.rows(
        sql.EPISODE_LIST[(sort, direction)],
        [filters.get("agent"), filters.get("tree"), filters.get("a"), filters.get("judge"), filters.get("status"),
         page * sql.LIST_PAGE],
    )  # fmt: skip
    state = {**filters, "sort": sort, "dir": direction.lower()}

    return viewer.page(
        "index.html.j2",
        episodes=episodes,
        campaigns=campaign_list(viewer),
        state=state,
        page=page,
        page_size=sql.LIST_PAGE,
        matching=episodes[0]["matching"] if episodes else 0,
        choices={key: viewer.choices.get(choices, []) for key, choices in LIST_FILTERS},
        link=list_link("/", state, page, "episodes"),
    )


def campaign_list(viewer: Viewer) -> list[dict[str, Any]] | None:
    if viewer.live is None:
        return None
    viewer.live.refresh()
    return [b for k in viewer.live.names() if (b := campaign_brief(viewer.live.summary(k, cells=False))) is not None]
