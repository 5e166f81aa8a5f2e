"""``inquitree view``: a local, read-only web viewer over the warehouse and the event store.

Pages a researcher bookmarks: ``/`` (campaigns, live, and the episodes, sorted and filtered as the
URL says), ``/suites/{name}`` (a campaign's grid of cells as it runs), ``/trees/{id}`` (the tree
drawn by Graphviz, with an episode's path on it), ``/figures`` (the report's figures and tables),
``/episodes/{id}`` (the dialogue turn by turn with the engine's notes, ``#turn-N`` anchors, keyboard
navigation), ``/search?q=`` (full-text search over every observation, reply, conclusion and
rationale; the same hits as JSON under ``/api/search``), ``/compare?a=&b=`` (two agents' shared
cells, and a pair of episodes side by side with the first divergence marked). Starlette serves it
(an optional extra, ``inquitree[view]``); the warehouse is opened read-only and sandboxed, and every
text from a model or a tree is escaped."""

from typing import Any

__all__ = ["create_app"]


def create_app(warehouse_path: str, db_url: str | None = None, sync: bool = False, stale_after: float = 300.0) -> Any:
    """The viewer's Starlette application over the warehouse at ``warehouse_path`` (and the store at
    ``db_url``, for live campaigns; ``sync``: catch the warehouse up with the store as it moves)."""
    from inquitree.viewer.app import create_app as make

    return make(warehouse_path, db_url, sync, stale_after)
