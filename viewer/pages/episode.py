"""An episode's dialogue with the engine's notes, and two episodes side by side, aligned by tree state."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from inquitree.boundary.errors import InquiTreeError
from inquitree.viewer import sql
from inquitree.viewer.state import Viewer
from inquitree.warehouse import episode_items, table_html

RENDER_SECONDS = 2.0  # the Markdown of one episode page; the texts after it are shown as plain text


def episode(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    episode_id = request.path_params["episode_id"]
    found = viewer.rows(sql.EPISODE, [episode_id])
    if not found or found[0]["status"] not in ("done", "failed"):
        viewer.catch_up(force=not found)
    with viewer.lock:  # the state, dialogue and scores of one snapshot (catch_up may have taken up a newer)
        found = viewer.rows(sql.EPISODE, [episode_id])
        if not found:
            return viewer.page("missing.html.j2", what=f"episode {episode_id}", status_code=404)
        items = episode_items(viewer.wh, episode_id, RENDER_SECONDS)
        scores = table_html(viewer.wh.con.sql(sql.EPISODE_SCORES, params=[episode_id]).pl())
    template_set = viewer.rows(sql.TEMPLATE_SET, [episode_id])
    return viewer.page(
        "episode.html.j2",
        ep=found[0],
        items=items,
        scores=scores,
        system_prompt=_system_prompt(template_set[0]["template_set"] if template_set else None),
    )


def side_by_side(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    turns = {ep: viewer.rows(sql.TURNS, [ep]) for ep in (a, b)}
    if not turns[a] or not turns[b]:
        return viewer.page("missing.html.j2", what=f"pair of episodes {a!r} and {b!r}", status_code=404)
    rows, divergence = aligned(turns[a], turns[b])
    return viewer.page("side_by_side.html.j2", a=a, b=b, rows=rows, divergence=divergence)


def aligned(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """Two episodes' turns side by side, aligned by tree state: a turn's place is the state it
    answered and the candidate it had accepted (``difflib``'s longest matching runs over those), so
    where one agent takes detours the other's turns wait beside a gap, and both are level again where
    their paths rejoin. Returns the rows (``label``: the step, or each side's step where they differ)
    and the label of the first row where they part (another state, another candidate, or a turn only
    one of them took)."""
    import difflib

    def where(t: dict[str, Any]) -> tuple[Any, ...]:
        return (t["state"], t["best"] if t["accepted"] else None)

    rows: list[dict[str, Any]] = []

    def row(left: dict[str, Any] | None, right: dict[str, Any] | None, parted: bool) -> None:
        steps = [t["step"] if t is not None else None for t in (left, right)]
        label = str(steps[0]) if steps[0] == steps[1] else " / ".join("–" if x is None else str(x) for x in steps)
        rows.append({"label": label, "a": left, "b": right, "parted": parted, "first": False})

    matcher = difflib.SequenceMatcher(None, [where(t) for t in a], [where(t) for t in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                row(a[i], b[j], False)
            continue
        for k in range(max(i2 - i1, j2 - j1)):  # replaced turns face each other; the longer side's rest face gaps
            row(a[i1 + k] if i1 + k < i2 else None, b[j1 + k] if j1 + k < j2 else None, True)
    parted = next((r for r in rows if r["parted"]), None)
    if parted is not None:
        parted["first"] = True
    return rows, parted["label"] if parted is not None else None


def _system_prompt(template_set: str | None) -> str | None:
    """The system prompt the episode's agent was given (its template set's; None if not here)."""
    from inquitree.core.game import TemplateSet

    try:
        return TemplateSet(template_set).system_prompt if template_set else None
    except InquiTreeError:
        return None
