"""The module map in docs/ARCHITECTURE.md, made from the code: each module of the package, what it
owns (the first sentence of its docstring) and the test files that import it, so that changing a
module tells you which tests to run. tests/test_architecture.py checks that the document holds
exactly this map, and that imports go the way the document says.

    python scripts/architecture_map.py            # print the map
    python scripts/architecture_map.py --write    # write it into docs/ARCHITECTURE.md
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN, END = "<!-- module map: begin (scripts/architecture_map.py) -->", "<!-- module map: end -->"
PACKAGES = ("boundary", "events", "core", "warehouse", "viewer", "cli")


def modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if p.name != "__init__.py")


def dotted(path: Path) -> str:
    return "inquitree." + ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _parsed(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once for each version of the file (its size and modification
    time): the map asks every module which modules it imports, once for each other module."""
    return _parse(path, *_version(path))


@functools.lru_cache(maxsize=None)
def _parse(path: Path, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def face_exports(package: str) -> dict[str, str]:
    """A face's public names and the module of the package each comes from, or nothing for a
    package that is not a face: a lazy face's ``_EXPORTS`` (its modules load heavy libraries, so
    each name is loaded on first use), else a plain face's imports from its own modules."""
    init = ROOT.joinpath(*package.split(".")[1:], "__init__.py")
    if not init.exists():
        return {}
    body = _parsed(init).body
    for node in body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets):
            return {k: f"{package}.{v}" for k, v in ast.literal_eval(node.value).items()}
    return {
        a.asname or a.name: node.module
        for node in body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package + ".")
        for a in node.names
    }


def lazy_face(package: str) -> bool:
    """Whether a face loads its names on first use (an ``_EXPORTS`` map) rather than importing them."""
    init = ROOT.joinpath(*package.split(".")[1:], "__init__.py")
    return init.exists() and any(
        isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets)
        for node in _parsed(init).body
    )


def import_statements(path: Path) -> list[tuple[str, list[str]]]:
    """Each ``inquitree...`` import of a file as written: (module, names imported from it)."""
    return list(_import_statements(path, *_version(path)))


def _version(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=None)
def _import_statements(path: Path, mtime_ns: int, size: int) -> tuple[tuple[str, list[str]], ...]:
    out = []
    for node in ast.walk(_parse(path, mtime_ns, size)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("inquitree"):
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("inquitree")]
    return tuple(out)


def imported(path: Path) -> set[str]:
    """Every ``inquitree...`` module a file imports (``from a.b import c`` counts a.b and a.b.c); a
    name taken from a face counts the module behind the face it comes from."""
    out: set[str] = set()
    for module, names in import_statements(path):
        out.add(module)
        behind = face_exports(module)
        out.update(behind.get(n, f"{module}.{n}") for n in names)
    return out


def summary(path: Path) -> str:
    doc = ast.get_docstring(_parsed(path)) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    # the first sentence: up to a colon or a full stop that no abbreviation (Sec., Eq., e.g.) makes
    sentence = re.split(r"(?<!Sec)(?<!Eq)(?<!App)(?<!e\.g)(?<!i\.e)(?<=[.:])\s(?=[A-Z`(])", first, maxsplit=1)[0]
    return sentence.rstrip(":").replace("|", "\\|")


def table() -> str:
    tests = {p.name: imported(p) for p in sorted((ROOT / "tests").glob("test_*.py"))}
    paths = modules()
    users = {dotted(p): {dotted(q) for q in paths if dotted(p) in imported(q)} for p in paths}
    rows = ["| module | what it owns | tests that import it |", "|---|---|---|"]
    for path in paths:
        name = dotted(path)
        covering = ", ".join(t for t, mods in tests.items() if name in mods)
        if not covering:  # tested through the modules that use it: name them, their rows list the tests
            via = sorted(u.removeprefix("inquitree.").replace(".", "/") + ".py" for u in users[name])
            covering = (
                "through " + ", ".join(f"`{v}`" for v in via)
                if via
                else "through the `inquitree` command (`cli/__init__.py`)"
            )
        rel = path.relative_to(ROOT).as_posix()
        rows.append(f"| `{rel}` | {summary(path)} | {covering} |")
    return "\n".join(rows)


def document_table() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()


if __name__ == "__main__":
    made = table()
    if "--write" in sys.argv:
        text = DOC.read_text(encoding="utf-8")
        head, rest = text.split(BEGIN, 1)
        DOC.write_text(head + BEGIN + "\n" + made + "\n" + END + rest.split(END, 1)[1], encoding="utf-8")
    else:
        print(made)
