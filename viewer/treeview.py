"""The research tree as a picture, with an episode's path drawn on it: Graphviz lays it out
(``dot -Tsvg``, Debian's ``graphviz`` package), this module only says what to draw.

Subtopics are boxes, their dependencies arrows, each study a smaller box under its subtopic. An
episode colours what it reached (a true result green, a fake one orange, a locked attempt red),
numbers its subtopic visits in order along a red path, and labels each node with its highest hint
level. Every text from the tree goes into the DOT file quoted (``dot_quote``), and Graphviz escapes
it again in the SVG; node names and links are this module's own, never a tree's ids.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from typing import Any

from inquitree.core.game import Tree

__all__ = ["dot_quote", "episode_path", "tree_dot", "tree_svg", "GraphvizMissing"]


class GraphvizMissing(RuntimeError):
    pass


def dot_quote(text: str) -> str:
    """``text`` as a DOT string: backslashes doubled (Graphviz reads ``\\n``, ``\\N`` and the like in
    labels), quotes escaped, line breaks as DOT's centred ``\\n``."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + body.replace("\n", "\\n") + '"'


def _short(text: str, width: int = 34, lines: int = 2) -> str:
    """``text`` wrapped to ``lines`` lines of about ``width`` characters, cut with an ellipsis."""
    words, out, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            out.append(line)
            line = w
            if len(out) == lines:
                break
        else:
            line = f"{line} {w}".strip()
    else:
        out.append(line)
        line = ""
    if line or len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: width - 1] + "…"
    return "\n".join(out)


def episode_path(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What an episode did on its tree, from the warehouse's rows: ``visits`` (subtopic ids in
    order), ``hints`` (node id -> highest level), ``locked`` (subtopic ids tried before their
    dependencies), ``draws`` (study id -> one entry per result shown: fake or not)."""
    visits = [r["node"] for r in rows["transitions"] if r["to_state"] == "subtopic"]
    hints: dict[str, int] = {}
    for r in rows["hints"]:
        hints[r["target"]] = max(hints.get(r["target"], 0), r["level"])
    draws: dict[str, list[bool]] = {}
    for r in rows["draws"]:
        draws.setdefault(r["study_id"], []).append(bool(r["fake"]))
    return {"visits": visits, "hints": hints, "locked": {r["subtopic_id"] for r in rows["locked"]}, "draws": draws}


def tree_dot(tree: Tree, path: dict[str, Any] | None = None) -> str:
    """The DOT text of ``tree``'s subtopic DAG with its studies, and ``path`` (``episode_path``) on it."""
    path = path or {"visits": [], "hints": {}, "locked": set(), "draws": {}}
    names = {s.id: f"s{k}" for k, s in enumerate(tree.subtopics)}
    order: dict[str, list[int]] = {}
    for k, sid in enumerate(path["visits"], 1):
        order.setdefault(sid, []).append(k)
    out = [
        "digraph tree {",
        '  graph [rankdir=TB, nodesep=0.25, ranksep=0.45, fontname="Helvetica", bgcolor="transparent"];',
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=10];',
        '  edge [color="#8a8a8a", arrowsize=0.6];',
        f'  topic [label={dot_quote("Topic: " + _short(tree.topic, 60, 2))}, fillcolor="#eef3f8"];',
    ]
    for k, s in enumerate(tree.subtopics):
        name = names[s.id]
        label = f"{s.id}: {_short(s.text)}"
        notes = []
        if s.id in order:
            notes.append("visit " + ", ".join(f"#{n}" for n in order[s.id]))
        if s.id in path["hints"]:
            notes.append(f"hint {path['hints'][s.id]}")
        if s.id in path["locked"]:
            notes.append("tried while locked")
        if notes:
            label += "\n" + " · ".join(notes)
        fill = "#dbe9f6" if s.id in order else "#ffffff"
        color = "#b00020" if s.id in path["locked"] else "#1f4e79" if s.id in order else "#9a9a9a"
        out.append(
            f"  {name} [label={dot_quote(label)}, fillcolor={dot_quote(fill)}, color={dot_quote(color)}, "
            f'URL="#subtopic-{k}", id="node-s{k}"];'
        )
        if not s.depends_on:
            out.append(f"  topic -> {name};")
        for d in s.depends_on:
            if d in names:
                out.append(f"  {names[d]} -> {name};")
        for j, st in enumerate(s.studies):
            draws = path["draws"].get(st.id, [])
            slabel = f"{st.id}: {_short(st.text, 26, 2)}"
            if draws:
                fakes = sum(draws)
                slabel += "\n" + (f"fake result met ×{fakes}" if fakes else "true result")
                if len(draws) > 1:
                    slabel += f", {len(draws) - 1} redo" + ("s" if len(draws) > 2 else "")
                if st.id in path["hints"]:
                    slabel += f" · hint {path['hints'][st.id]}"
            fill = ("#f9d9a8" if draws[-1] else "#cfe8cf") if draws else "#f7f7f7"
            out.append(
                f"  {name}_{j} [label={dot_quote(slabel)}, shape=note, fontsize=8, fillcolor={dot_quote(fill)}];"
            )
            out.append(f'  {name} -> {name}_{j} [style=dashed, arrowhead=none, color="#c0c0c0"];')
    visits = [names[v] for v in path["visits"] if v in names]
    for k, (a, b) in enumerate(zip(visits, visits[1:], strict=False), 2):
        out.append(
            f'  {a} -> {b} [color="#b00020", penwidth=1.6, constraint=false, label="{k}", '
            'fontcolor="#b00020", fontsize=9];'
        )
    out.append("}")
    return "\n".join(out)


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


@functools.lru_cache(maxsize=256)
def tree_svg(dot_text: str) -> str:
    """The SVG element Graphviz draws for ``dot_text`` (its XML prologue cut off, to go inline)."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissing("Graphviz's `dot` is not installed (Debian: apt-get install graphviz)")
    done = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=30, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {done.stderr.decode(errors='replace')[-500:]}")
    svg = done.stdout.decode()
    return svg[svg.index("<svg") :]
