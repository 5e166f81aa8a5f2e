"""docs/ARCHITECTURE.md stays true: its module map is the code's, and every import goes the way the
document says (boundary <- events <- core <- warehouse <- viewer <- cli; inside core, a room imports
only the rooms before it: game, calls, players, run, then inspect, instrument and extract)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import architecture_map  # scripts/architecture_map.py

LAYERS = ["boundary", "events", "core", "warehouse", "viewer", "cli"]
ROOMS = ["game", "calls", "players", "run", "inspect", "instrument", "extract"]
# inspect, instrument and extract are at the top of core: none imports another.
ROOM_RANK = {"game": 0, "calls": 1, "players": 2, "run": 3, "inspect": 4, "instrument": 4, "extract": 4}


def place(module: str) -> tuple[int, int | None] | None:
    """(layer, room rank or None) of an ``inquitree...`` module; None for the package's root."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in LAYERS:
        return None
    room = ROOM_RANK.get(parts[2]) if parts[1] == "core" and len(parts) > 2 else None
    return LAYERS.index(parts[1]), room


def test_the_documents_module_map_is_the_codes():
    assert architecture_map.document_table() == architecture_map.table(), (
        "docs/ARCHITECTURE.md's module map is out of date: run `python scripts/architecture_map.py --write`"
    )


@pytest.mark.parametrize("path", architecture_map.modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_imports_go_down_the_layers_and_rooms(path):
    me = place(architecture_map.dotted(path))
    assert me is not None
    wrong = []
    for target in architecture_map.imported(path):
        there = place(target)
        if there is None:
            continue
        if there[0] > me[0]:
            wrong.append(f"{target} (a later layer)")
            continue
        both_rooms = there[0] == me[0] == LAYERS.index("core") and me[1] is not None and there[1] is not None
        sideways = both_rooms and there[1] == me[1] == 4 and target.split(".")[2] != path.relative_to(ROOT).parts[1]
        if both_rooms and (there[1] > me[1] or sideways):
            wrong.append(f"{target} (a later room of core)")
    assert not wrong, f"{path.relative_to(ROOT)} imports against the map: {wrong}"


def face_of(module: str) -> str | None:
    """The face a module sits behind: ``inquitree.events``, ``inquitree.warehouse`` or a room of
    core (``inquitree.core.run``); None for the rest (boundary, the viewer, the command line, the
    package's top)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("events", "warehouse"):
        return ".".join(parts[:2])
    if len(parts) > 2 and parts[1] == "core" and parts[2] in ROOMS:
        return ".".join(parts[:3])
    return None


@pytest.mark.parametrize("path", architecture_map.modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_module_outside_a_layer_or_room_enters_it_by_its_face(path):
    """The events, the warehouse and each room of core are entered by their package (what they
    export, listed in its ``__all__``), never by a module behind it: a module may move inside its
    layer without its users changing. Inside a layer or a room, modules import each other;
    tests and bench may reach in."""
    here = face_of(architecture_map.dotted(path))
    past = [
        module
        for module, _ in architecture_map.import_statements(path)
        if (face := face_of(module)) is not None and face != here and module != face
    ]
    assert not past, f"{path.relative_to(ROOT)} reaches past a face: {past}"
    # a name taken from a face is one it exports, not a module behind it (``from inquitree.events
    # import guards`` would name the module events/guards.py)
    behind = [
        f"{module}.{name}"
        for module, names in architecture_map.import_statements(path)
        if face_of(module) == module != here
        for name in names
        if name not in architecture_map.face_exports(module)
    ]
    assert not behind, f"{path.relative_to(ROOT)} takes from a face what it does not export: {behind}"


@pytest.mark.parametrize("face", ["inquitree.events", "inquitree.warehouse"] + [f"inquitree.core.{r}" for r in ROOMS])
def test_every_face_loads_what_it_exports_and_the_type_checker_reads_the_same(face):
    """A plain face imports what it exports, and the type checker reads those imports; a lazy face
    (``LAZY_FACES``: its modules load heavy libraries) loads each name on first use, and its
    ``TYPE_CHECKING`` imports name the same modules. Either way a face never turns a checked type
    into Any, and ``__all__`` is what it exports."""
    import ast
    import importlib
    import importlib.util

    exports = architecture_map.face_exports(face)
    init = ROOT.joinpath(*face.split(".")[1:], "__init__.py")
    checked = {
        a.asname or a.name: node.module
        for block in ast.parse(init.read_text()).body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    assert architecture_map.lazy_face(face) == (face in LAZY_FACES), "LAZY_FACES lists the lazy faces"
    assert checked == (exports if face in LAZY_FACES else {}), "a plain face's imports are its one list"
    loaded = importlib.import_module(face)
    assert sorted(getattr(loaded, "__all__", [])) == sorted(exports)
    # a name that is also a module of the package would be that module once it is imported
    assert not {name for name in exports if importlib.util.find_spec(f"{face}.{name}") is not None}
    for name, module in exports.items():
        assert getattr(loaded, name) is getattr(importlib.import_module(module), name)


# The faces whose names are loaded on first use, each for the libraries its modules load at their
# top (the command line imports faces at start-up): the rest import what they export.
LAZY_FACES = {
    "inquitree.events": "SQLAlchemy and Alembic (the schema's tables, the migrations)",
    "inquitree.warehouse": "DuckDB, Polars and PyArrow",
    "inquitree.core.run": "none at their top; the command line reads the episode options from it as it starts, "
    "and the rest of the room (campaigns, the runner, exports) added seven tenths to play --help's start",
    "inquitree.core.instrument": "none at their top; `query --list` loads the room's face, and the whole room "
    "added a sixth to its start",
    "inquitree.core.inspect": "inspect_ai",
}
HEAVY = ("sqlalchemy", "alembic", "duckdb", "polars", "pyarrow", "numpy", "jinja2", "onnxruntime", "matplotlib")


@pytest.mark.parametrize("face", [f"inquitree.core.{r}" for r in ROOMS if f"inquitree.core.{r}" not in LAZY_FACES])
def test_a_plain_face_loads_no_heavy_library(face):
    """What makes a plain face safe at start-up: importing it, and so every module behind it,
    loads none of the heavy libraries."""
    code = f"import sys, {face}; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"{face} loads {out.stdout.strip()}"


def test_the_users_face_is_one_typed_list():
    """``inquitree.api`` lists in ``__all__`` exactly the names it imports, plainly (the type checker
    reads each), each from a face and the same object the face gives; nothing else of the package
    imports it, so the command line never pays for it."""
    import ast
    import importlib

    tree = ast.parse((ROOT / "api.py").read_text())
    imported = {
        a.asname or a.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom) for a in node.names
    }
    imported.pop("annotations")
    assert not [n for n in tree.body if isinstance(n, ast.If)], "no TYPE_CHECKING block: the imports are the list"
    api = importlib.import_module("inquitree.api")
    assert sorted(api.__all__) == sorted(imported)
    for name, face in imported.items():
        assert face_of(face) == face, f"{name} comes from {face}, which is not a face"
        assert getattr(api, name) is getattr(importlib.import_module(face), name)
    users = [p for p in architecture_map.modules() if "inquitree.api" in architecture_map.imported(p)]
    assert not users, f"the package imports inquitree.api: {users}"


def test_every_room_is_named_in_the_document_and_exists():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    for room in ROOMS:
        assert (ROOT / "core" / room / "__init__.py").exists() and f"`core/{room}/`" in text


# -- every text that names a file of the repository names one that exists ----------------------------
TOPS = "bench|cli|core|docs|events|migrations|queries|scripts|studies|suites|tests|trees|viewer|warehouse"
NAMED_PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./*-]*[\w*])" % TOPS)
# Data a tree or a study carries, and logs whose text is a recording: they name what they named then.
NOT_PROSE = re.compile(
    r"^(tests/test_architecture\.py$|tests/test_docs\.py$|tests/golden/|tests/data/|docs/studies/.*/(episodes|tables)/|bench/results/|studies/results/|trees/.*\.json$|core/data/)"
    r"|\.(png|jsonl|csv|gguf)$"
)


def _named_paths() -> list[tuple[str, str]]:
    from tests_support import tracked_texts

    return [
        (name, m.group(1).rstrip("."))
        for name, text in tracked_texts(ROOT, NOT_PROSE)
        for m in NAMED_PATH.finditer(text)
    ]


def _exists(path: str, where: str) -> bool:
    last = path.split("/")[-1]
    if len(last) <= 1 or any(c.isupper() for c in last.split(".")[0]):  # events/s, or queries/NAME.sql
        return True
    if (ROOT / where).parent.joinpath(path).exists():  # a page of docs/ naming its neighbours
        return True
    if where == "mkdocs.yml" and (ROOT / "docs" / path).exists():  # its pages are named from docs/
        return True
    if "*" in path:
        return any(ROOT.glob(path))
    if (ROOT / path).exists():
        return True
    module, _, attribute = path.rpartition(".")  # a name in a module: core/run/golden.as_stored
    return bool(module) and attribute.isidentifier() and (ROOT / f"{module}.py").exists()


def test_every_text_names_files_that_exist():
    """Comments, docstrings, docs, templates and SQL that name a file of the repository (the report's
    introduction named warehouse/bootstrap.py long after it was gone)."""
    stale = sorted({f"{where}: {path}" for where, path in _named_paths() if not _exists(path, where)})
    assert not stale, "texts name files that do not exist:\n" + "\n".join(stale)


def _import_cycles() -> list[list[str]]:
    """Strongly connected groups of two or more modules in the graph of every import (at the top of a
    module, inside a function, or for type checking alone): an import loop in any form."""
    paths = {architecture_map.dotted(p): p for p in architecture_map.modules()}
    graph = {m: {t for t in architecture_map.imported(p) if t in paths and t != m} for m, p in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_its_way_back_to_itself():
    """No import loop anywhere, not only between rooms: a loop is two modules that cannot be read,
    tested or moved apart (the store's checkpoints and verification, the warehouse and its sync,
    the players and their registry each were one)."""
    assert _import_cycles() == []


def test_every_python_package_is_shipped_by_pip_install():
    """A folder of the package with Python in it that pyproject.toml does not list is left out of a
    `pip install .` (not of an editable install, which the tests use): the README's first command
    then fails on import (events/backends was once left out this way)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"inquitree"}
    for init in ROOT.rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts and rel.parts[0] in (
            "cli",
            "core",
            "events",
            "migrations",
            "queries",
            "trees",
            "warehouse",
            "viewer",
            "suites",
        ):
            found.add(".".join(["inquitree", *rel.parts]))
    assert not found - listed, f"packages pyproject.toml does not ship: {sorted(found - listed)}"


@pytest.mark.parametrize("folder", ["bench", "docs", "scripts", "studies", "tests"])
def test_the_repositorys_own_folders_are_not_the_packages(folder):
    """An editable install maps ``inquitree`` onto the repository root, where ``inquitree.tests``
    would import as a namespace package that `pip install .` does not ship: it is refused, and
    the package's own folders still import."""
    import importlib

    assert (ROOT / folder).is_dir()
    with pytest.raises(ModuleNotFoundError, match=f"{folder}/ is the repository's"):
        importlib.import_module(f"inquitree.{folder}")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"inquitree.{folder}.anything")
    assert importlib.import_module("inquitree.queries").__name__ == "inquitree.queries"


def _calls(path: Path) -> set[str]:
    import ast

    return {
        node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
    }


# What an episode is played with: made by core/run/setup.py's EpisodeSetup, and by nothing else that plays.
SETUP_MAKERS = {"make_agent", "make_judge", "make_embedder", "PriceTable", "Budget", "RateLimiter"}


def test_an_episode_is_set_up_in_one_place():
    """Every module that plays episodes (``run_episode`` or ``Episode``: ``play``, campaigns, the
    inspect solver) builds what it plays with through ``EpisodeSetup``: none makes its own agent,
    judge, embedder, prices, budget or rate limiter, so a new option is added in one place."""
    players = {
        path.relative_to(ROOT).as_posix(): calls
        for path in architecture_map.modules()
        if {"run_episode", "Episode"} & (calls := _calls(path)) and path.name != "runner.py"
    }
    assert set(players) == {"cli/play.py", "core/run/campaign.py", "core/inspect/task.py"}
    assert {where: sorted(calls & SETUP_MAKERS) for where, calls in players.items() if calls & SETUP_MAKERS} == {}
    assert all(re.search(r"EpisodeSetup\.of\(|setup_of\(", (ROOT / where).read_text()) for where in players)


# An option added to the declaration and nowhere else, in a process of its own (each entry point
# reads the declaration when it is imported).
_ONE_MORE_OPTION = """
import inspect, json, sys
from inquitree.core.run import spec
spec.EPISODE_OPTIONS += (spec.EpisodeOption("shuffle_hints", int, 2, "hints shuffled before the first", least=0),)
import importlib
import inquitree.core.run as run
import inquitree.core.run.campaign as campaign
run.EPISODE_OPTIONS = spec.EPISODE_OPTIONS  # the room's face and the campaigns, read again as from source
importlib.reload(campaign)
from click.testing import CliRunner
from inquitree.cli import main
from inquitree.core.inspect.task import research_tree
from inquitree.core.run.campaign import SUITE_KEYS, Suite, SuiteError, suite_keys_markdown

out = {"help": CliRunner().invoke(main, ["play", "--help"], terminal_width=200).output}
out["suite_key"] = SUITE_KEYS.get("shuffle_hints", [None])[0] is int
out["page"] = "| `shuffle_hints` | int | `2` | hints shuffled before the first |" in suite_keys_markdown()
good, bad = sys.argv[1:3]
out["suite_value"] = Suite.load(good).episode["shuffle_hints"]
try:
    Suite.load(bad)
except SuiteError as exc:
    out["suite_refuses"] = str(exc)
out["inspect_default"] = inspect.signature(research_tree).parameters["shuffle_hints"].default
try:
    research_tree(trees="synthetic-chain-7", shuffle_hints=-1)
except Exception as exc:
    out["inspect_refuses"] = str(exc)
print(json.dumps(out))
"""


def test_an_episode_option_is_declared_in_one_place(tmp_path):
    """An option added to ``EPISODE_OPTIONS`` alone is a `play` option with its default and help, a
    suite key checked by its declaration and listed on docs/suite-keys.md, and an argument of the
    inspect task, checked the same way."""
    suite = 'name = "t"\ntrees = ["synthetic-chain-7"]\nagents = ["random"]\nshuffle_hints = '
    (tmp_path / "good.toml").write_text(suite + "3\n")
    (tmp_path / "bad.toml").write_text(suite + "-1\n")
    done = subprocess.run(
        [sys.executable, "-c", _ONE_MORE_OPTION, str(tmp_path / "good.toml"), str(tmp_path / "bad.toml")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert re.search(
        r"--shuffle-hints INTEGER RANGE\s+Hints shuffled before the first\.\s+\[default: 2; x>=0\]", out["help"]
    )
    assert out["suite_key"] and out["page"] and out["suite_value"] == 3
    assert out["suite_refuses"].endswith("bad.toml: shuffle_hints = -1: expected at least 0")
    assert out["inspect_default"] == 2
    assert out["inspect_refuses"] == "-T shuffle_hints = -1: expected at least 0"


def test_every_episode_option_reaches_the_episode():
    """Each declared option is a field of the episode's specification (with the declared default)
    or one of the setup's own (templates, embedder and its endpoint), so none is taken and then
    dropped, and none has a second default."""
    import dataclasses

    from inquitree.core.run import EPISODE_OPTIONS, EpisodeSpec

    reached = {f.name for f in dataclasses.fields(EpisodeSpec)} | {"templates", "embedder", "embedder_base_url"}
    assert {o.name for o in EPISODE_OPTIONS} == reached
    declared = {o.name: o.default for o in EPISODE_OPTIONS}
    assert {f.name: f.default for f in dataclasses.fields(EpisodeSpec)} == {
        f.name: declared[f.name] for f in dataclasses.fields(EpisodeSpec)
    }
    setup = (ROOT / "core" / "run" / "setup.py").read_text()
    assert all(f'values["{name}"]' in setup for name in ("templates", "embedder", "embedder_base_url"))
