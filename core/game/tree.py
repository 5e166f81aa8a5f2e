"""Research trees (paper Sec. 3.1): loading, structural validation, lookup.

A tree file is JSON under ``trees/schema/research-tree.schema.json``. Loading
runs the schema and then the checks a schema cannot express (unique ids,
references, an acyclic subtopic DAG, reachability, fakes that differ from the
truth). Every problem is reported as ``FILE: $.json.path: what is wrong``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.files import InputRefused, read_file
from inquitree.core.cache import cache_dir
from inquitree.events import canonical_json

TREES_DIR = Path(__file__).resolve().parents[2] / "trees"
SCHEMA_PATH = TREES_DIR / "schema" / "research-tree.schema.json"
N_HINTS = 4


class TreeError(InquiTreeError):
    """One or more problems in a tree file; ``problems`` lists them all."""

    def __init__(self, source: str, problems: list[str]):
        self.source, self.problems = source, problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{source}: {problems[0]}{more}")


@dataclasses.dataclass(frozen=True)
class Result:
    id: str
    text: str
    fakes: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Study:
    id: str
    text: str
    hints: tuple[str, ...]
    result: Result
    subtopic_id: str


@dataclasses.dataclass(frozen=True)
class Subtopic:
    id: str
    text: str
    hints: tuple[str, ...]
    depends_on: tuple[str, ...]
    studies: tuple[Study, ...]


@dataclasses.dataclass(frozen=True)
class Conclusion:
    id: str
    text: str
    requires_results: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Tree:
    id: str
    title: str
    paper: dict[str, Any]
    provenance: dict[str, Any]
    topic: str
    subtopics: tuple[Subtopic, ...]
    conclusions: tuple[Conclusion, ...]
    content_hash: str
    source: str

    @property
    def n(self) -> int:
        return len(self.subtopics)

    def bounds(self, max_hints: int = 4) -> tuple[int, int]:
        """[3n, n(2H+3)]: the step bounds of Eq. 11 and Eq. 12 (Appendix B)."""
        return 3 * self.n, self.n * (2 * max_hints + 3)

    @cached_property
    def subtopic(self) -> dict[str, Subtopic]:
        return {s.id: s for s in self.subtopics}

    @cached_property
    def study(self) -> dict[str, Study]:
        return {st.id: st for s in self.subtopics for st in s.studies}

    @cached_property
    def result(self) -> dict[str, Result]:
        return {st.result.id: st.result for st in self.study.values()}

    @cached_property
    def study_of_result(self) -> dict[str, Study]:
        return {st.result.id: st for st in self.study.values()}

    def topological_order(self) -> list[str]:
        """Subtopic ids in dependency order, ties in tree order."""
        done: list[str] = []
        seen: set[str] = set()
        while len(done) < self.n:
            for s in self.subtopics:
                if s.id not in seen and set(s.depends_on) <= seen:
                    done.append(s.id)
                    seen.add(s.id)
                    break
        return done


def _json_path(parts) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _schema_validator():
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


def _content_hash(doc: dict) -> str:
    return hashlib.sha256(canonical_json(doc).encode()).hexdigest()


@cache
def _schema_digest() -> str:
    return hashlib.sha256(SCHEMA_PATH.read_bytes()).hexdigest()


def _passed_marker(content_hash: str) -> Path:
    """The empty file that says a tree with this content passed this schema (see parse_tree)."""
    return cache_dir() / "trees-passed-schema" / f"{_schema_digest()[:16]}-{content_hash}"


def parse_tree(doc: Any, source: str, memo: bool = True) -> Tree:
    """Validate a parsed tree document and build the :class:`Tree` (raises :class:`TreeError`).

    A document that passed the JSON Schema is marked in the cache directory by its content and
    the schema's, and is not checked against the schema again (loading jsonschema and checking
    weighed on every command that plays a tree); the checks beyond the schema always run.
    ``memo=False`` (``trees validate``) checks and marks nothing."""
    try:
        content_hash = _content_hash(doc) if isinstance(doc, dict) else ""
    except TypeError:  # e.g. an integer past 64 bits: the schema says what is wrong with it
        content_hash = ""
    marker = _passed_marker(content_hash) if memo and content_hash else None
    if marker is None or not marker.exists():
        problems = [
            f"{_json_path(e.absolute_path)}: {e.message}"
            for e in sorted(_schema_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        ]
        if problems:
            raise TreeError(source, problems)
        if marker is not None:
            with contextlib.suppress(OSError):  # a cache that cannot be written costs time, nothing else
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
    problems = structural_problems(doc)
    if problems:
        raise TreeError(source, problems)
    return _build(doc, source, content_hash or _content_hash(doc))


def structural_problems(doc: dict) -> list[str]:  # noqa: C901 - one check a rule of the tree format
    """Checks beyond the schema: ids, references, the DAG, reachability, fakes."""
    problems: list[str] = []
    seen: dict[str, str] = {}

    def claim(ident: str, where: str) -> None:
        if ident in seen:
            problems.append(f"{where}.id: duplicate id {ident!r} (first used at {seen[ident]})")
        else:
            seen[ident] = where

    result_owner: dict[str, str] = {}
    for i, s in enumerate(doc["subtopics"]):
        claim(s["id"], f"$.subtopics[{i}]")
        for j, st in enumerate(s["studies"]):
            where = f"$.subtopics[{i}].studies[{j}]"
            claim(st["id"], where)
            r = st["result"]
            claim(r["id"], f"{where}.result")
            result_owner[r["id"]] = s["id"]
            truth = " ".join(r["text"].split())
            for k, fake in enumerate(r["fakes"]):
                if " ".join(fake.split()) == truth:
                    problems.append(f"{where}.result.fakes[{k}]: the fake result is the true result's text")
    for i, c in enumerate(doc["conclusions"]):
        claim(c["id"], f"$.conclusions[{i}]")
        for field in ("requires_results", "depends_on_results"):
            for k, rid in enumerate(c.get(field, [])):
                if rid not in result_owner:
                    problems.append(f"$.conclusions[{i}].{field}[{k}]: unknown result id {rid!r}")
    sub_ids = {s["id"] for s in doc["subtopics"]}
    deps: dict[str, list[str]] = {}
    for i, s in enumerate(doc["subtopics"]):
        d: list[str] = []
        for k, dep in enumerate(s.get("depends_on", [])):
            if dep not in sub_ids:
                problems.append(f"$.subtopics[{i}].depends_on[{k}]: unknown subtopic id {dep!r}")
            else:
                d.append(dep)
        for k, rid in enumerate(s.get("depends_on_results", [])):
            if rid not in result_owner:
                problems.append(f"$.subtopics[{i}].depends_on_results[{k}]: unknown result id {rid!r}")
            else:
                d.append(result_owner[rid])
        deps[s["id"]] = list(dict.fromkeys(d))
    cycle = find_cycle(deps)
    if cycle:
        # In a finite acyclic graph some subtopic has no prerequisites and every subtopic is
        # reachable from those roots, so the cycle check is also the reachability check.
        problems.append(f"$.subtopics: the subtopic dependencies form a cycle: {' -> '.join(cycle)}")
    return problems


def find_cycle(deps: dict[str, list[str]]) -> list[str] | None:
    """A dependency cycle as a closed path (a -> b -> a), or None."""
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        color[node] = 1
        stack.append(node)
        for nxt in deps.get(node, []):
            if color.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if color.get(nxt) is None:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        color[node] = 2
        return None

    for node in deps:
        if color.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


def _build(doc: dict, source: str, digest: str) -> Tree:
    result_owner = {st["result"]["id"]: s["id"] for s in doc["subtopics"] for st in s["studies"]}
    subtopics = []
    for s in doc["subtopics"]:
        deps = list(s.get("depends_on", [])) + [result_owner[r] for r in s.get("depends_on_results", [])]
        studies = tuple(
            Study(
                st["id"],
                st["text"],
                tuple(st["hints"]),
                Result(st["result"]["id"], st["result"]["text"], tuple(st["result"]["fakes"])),
                s["id"],
            )
            for st in s["studies"]
        )
        subtopics.append(Subtopic(s["id"], s["text"], tuple(s["hints"]), tuple(dict.fromkeys(deps)), studies))
    conclusions = tuple(
        Conclusion(
            c["id"], c["text"], tuple(dict.fromkeys(c.get("requires_results", []) + c.get("depends_on_results", [])))
        )
        for c in doc["conclusions"]
    )
    return Tree(
        doc["id"],
        doc["paper"]["title"],
        doc["paper"],
        doc["provenance"],
        doc["topic"]["text"],
        tuple(subtopics),
        conclusions,
        digest,
        source,
    )


MAX_TREE_BYTES_ENV = "INQUITREE_MAX_TREE_BYTES"
MAX_TREE_BYTES = 5_000_000  # the largest shipped tree is about 15 kB


def load_tree_file(path: Path | str, memo: bool = True) -> Tree:
    """A tree from its JSON file. A file over ``$INQUITREE_MAX_TREE_BYTES`` (5 MB) is refused as it is
    read (every text of a tree is embedded and sent to the agent, so a huge one is a mistake), and so
    is anything that is not a regular file (``boundary.files.read_file``)."""
    path = Path(path)
    limit = int(os.environ.get(MAX_TREE_BYTES_ENV) or MAX_TREE_BYTES)
    if not path.exists():
        raise TreeError(str(path), ["no such file"])
    try:  # one read of a regular file, to the limit: a link to /dev/zero or a named pipe is refused
        text = read_file(path, limit, what="the tree file").decode("utf-8")
    except InputRefused as exc:
        raises = f" (${MAX_TREE_BYTES_ENV} raises it)" if "limit" in str(exc) or "larger" in str(exc) else ""
        raise TreeError(str(path), [f"{exc}{raises}"]) from None
    except UnicodeDecodeError as exc:
        raise TreeError(str(path), [f"cannot read: {exc}"]) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TreeError(str(path), [f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"]) from None
    except RecursionError:
        raise TreeError(
            str(path), ["nested too deeply to be a research tree (JSON arrays or objects inside each other)"]
        ) from None
    try:
        return parse_tree(doc, str(path), memo)
    except RecursionError:
        raise TreeError(str(path), ["nested too deeply to be a research tree"]) from None


def it18_registry() -> list[dict]:
    """The paper's Table 4 (the IT-18 papers and their subtopic counts), as shipped in trees/registry/it18.json."""
    path = TREES_DIR / "registry" / "it18.json"
    with open(path, encoding="utf-8") as f:
        return json.load(f)["papers"]


def shipped_tree_paths() -> list[Path]:
    return sorted(TREES_DIR.glob("*.json"))


def shipped_tree(tree_id: str, memo: bool = True) -> Tree | None:
    """The shipped tree whose file is named ``tree_id``; never a path (the viewer passes ids from URLs)."""
    for path in shipped_tree_paths():
        if path.stem == tree_id:
            return load_tree_file(path, memo)
    return None


def resolve_tree(ref: str, memo: bool = True) -> Tree:
    """A tree by path (anything ending in .json or an existing file) or by shipped id."""
    p = Path(ref)
    if p.suffix == ".json" or p.exists():
        return load_tree_file(p, memo)
    found = shipped_tree(ref, memo)
    if found is not None:
        return found
    known = ", ".join(p.stem for p in shipped_tree_paths()) or "(none)"
    raise TreeError(ref, [f"unknown tree id {ref!r}; shipped trees: {known}"])


def publication_window(paper: dict) -> tuple[str | None, str | None]:
    """The first and last day a paper may have been published on, as ISO dates, from its
    ``published`` field (a day, a month or a year) or else its ``published_not_before`` and
    ``published_not_after``; None for an end that no record bounds. Fig. 4 splits papers by
    these against each model's cutoff."""
    import calendar

    published = paper.get("published")
    if published:
        parts = [int(x) for x in published.split("-")]
        if len(parts) == 3:
            return published, published
        if len(parts) == 2:
            last = calendar.monthrange(parts[0], parts[1])[1]
            return f"{published}-01", f"{published}-{last:02d}"
        return f"{published}-01-01", f"{published}-12-31"
    return paper.get("published_not_before"), paper.get("published_not_after")
