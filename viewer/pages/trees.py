"""The shipped trees, and a tree drawn by Graphviz with an episode's path on it."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from inquitree.core.game import load_tree_file, shipped_tree, shipped_tree_paths
from inquitree.viewer import sql
from inquitree.viewer.state import Viewer
from inquitree.viewer.treeview import GraphvizMissing, episode_path, tree_dot, tree_svg


def tree(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    tree_id = request.path_params["tree_id"]
    t = shipped_tree(tree_id)
    if t is None:
        return viewer.page("missing.html.j2", what=f"shipped tree {tree_id}", status_code=404)
    episode_id = request.query_params.get("episode", "")
    ep, path = None, None
    verdicts: dict[str, list[dict[str, Any]]] = {}
    if episode_id:
        found = viewer.rows(sql.EPISODE_OF_TREE, [episode_id, tree_id])
        if not found:
            return viewer.page("missing.html.j2", what=f"episode {episode_id} of tree {tree_id}", status_code=404)
        ep = found[0]
        path = episode_path({name: viewer.rows(text, [episode_id]) for name, text in sql.PATH.items()})
        for v in viewer.rows(sql.VERDICTS, [episode_id]):
            verdicts.setdefault(v["item_id"], []).append(v)
    try:
        picture, problem = tree_svg(tree_dot(t, path)), None
    except (GraphvizMissing, RuntimeError, OSError) as exc:
        picture, problem = None, str(exc)
    reached = {sid for sid, fakes in (path or {}).get("draws", {}).items() if not fakes[-1]}
    result_of = {st.result.id: st.id for s in t.subtopics for st in s.studies}
    return viewer.page(
        "tree.html.j2",
        tree=t,
        ep=ep,
        path=path,
        picture=picture,
        problem=problem,
        verdicts=verdicts,
        reached_results={r for r, st in result_of.items() if st in reached},
        episodes=viewer.rows(sql.TREE_EPISODES, [tree_id]),
        tree_changed=bool(episode_id)
        and any(r["tree_hash"] != t.content_hash for r in viewer.rows(sql.TREE_HASH, [episode_id])),
    )


def trees_index(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    counts = {r["tree_id"]: r["n"] for r in viewer.rows(sql.EPISODES_PER_TREE)}
    trees = [
        {"tree_id": t.id, "title": t.title, "n_subtopics": len(t.subtopics), "episodes": counts.get(t.id, 0)}
        for t in map(load_tree_file, shipped_tree_paths())
    ]
    return viewer.page("trees.html.j2", trees=trees)
