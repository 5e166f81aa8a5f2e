"""The dimension tables of the warehouse: trees, their items and required results (from the tree
files), the model registry (Table 3 and the user's additions) and the price table. Read beside
a sync's loading and written with its first commit."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from inquitree.core.game import TreeError, load_tree_file, publication_window, shipped_tree_paths
from inquitree.core.run import LimitError, PriceTable
from inquitree.core.run import prices_path as limits_prices_path
from inquitree.warehouse.errors import WarehouseError

REGISTRY_PATH = Path(__file__).resolve().parent.parent / "trees" / "registry" / "models.json"
REGISTRY_ENV = "INQUITREE_REGISTRY"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def registry_path(extra: Path | None = None) -> Path | None:
    """The registry file that extends the shipped one: ``extra`` (``--registry``), else
    ``$INQUITREE_REGISTRY``, else none."""
    return extra or (Path(os.environ[REGISTRY_ENV]) if os.environ.get(REGISTRY_ENV) else None)


def registry_models(extra: Path | None = None) -> list[dict]:
    """The model registry (Fig. 4's cutoffs): the shipped one (the paper's Table 3), extended by
    the file ``extra`` (``--registry``, or ``$INQUITREE_REGISTRY``). An entry of that file whose
    model is already listed replaces it; with ``"replace": true`` at its top the file replaces
    the shipped registry. A cutoff may be null: the model is then listed as of unknown cutoff."""
    shipped = _read_registry(REGISTRY_PATH)
    path = registry_path(extra)
    if path is None:
        return shipped["models"]
    doc = _read_registry(path)
    models = {} if doc.get("replace") else {m["model"].lower(): m for m in shipped["models"]}
    for m in doc["models"]:
        models[m["model"].lower()] = m
    return list(models.values())


def _is_date(value: object) -> bool:
    """A YYYY-MM-DD string naming a day that exists (2024-13-01 and 2024-02-30 do not)."""
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _read_registry(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WarehouseError(f"model registry {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WarehouseError(f"model registry {path}: cannot read it as JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        raise WarehouseError(f'model registry {path}: expected an object with a "models" list')
    for i, m in enumerate(doc["models"]):
        where = f"model registry {path}: models[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("model"), str) or not m["model"].strip():
            raise WarehouseError(f'{where}: expected an object with a "model" name')
        cutoff = m.get("cutoff")
        if cutoff is not None and not _is_date(cutoff):
            raise WarehouseError(
                f"{where} ({m['model']}): cutoff {cutoff!r} is not a date (YYYY-MM-DD) or null (unknown)"
            )
        aliases = m.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise WarehouseError(f"{where} ({m['model']}): aliases must be a list of names")
        # the shipped file by its place in the package, not this machine's path (reports are shared)
        m.setdefault("registry", "trees/registry/models.json" if path == REGISTRY_PATH else str(path))
    return doc


@dataclass
class DimensionRows:
    fingerprint: str
    tables: dict[str, list[tuple]]


def _watched(
    trees_dirs: list[Path] | None, prices: Path | None, registry: Path | None
) -> tuple[list[Path], Path, Path | None, str]:
    """The files the dimensions are read from (tree files, price table, extra registry) and their
    fingerprint: their paths, sizes and modification times."""
    paths = list(shipped_tree_paths())
    for d in trees_dirs or []:
        paths += sorted(Path(d).glob("*.json"))
    prices_path = limits_prices_path(prices)
    extra = registry_path(registry)
    watched = [*paths, REGISTRY_PATH, prices_path, *([extra] if extra else [])]
    try:
        fingerprint = hashlib.sha256(
            repr([(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in watched]).encode()
        ).hexdigest()
    except FileNotFoundError as exc:
        raise WarehouseError(f"{exc.filename}: no such file") from None
    return paths, prices_path, extra, fingerprint


def dimension_fingerprint(
    trees_dirs: list[Path] | None = None, prices: Path | None = None, registry: Path | None = None
) -> str:
    """What :func:`dimension_rows` compares with the fingerprint a warehouse keeps: equal, the
    dimension tables are as these files would make them."""
    return _watched(trees_dirs, prices, registry)[3]


def dimension_rows(
    known_fingerprint: str | None,
    trees_dirs: list[Path] | None = None,
    prices: Path | None = None,
    registry: Path | None = None,
) -> DimensionRows | None:
    """The rows of the dimension tables, read from the tree files, the model registry and the
    price table; None when none of those files changed since ``known_fingerprint``. Pure
    Python and no DuckDB, so that a sync runs it beside its loading."""
    paths, prices_path, extra, fingerprint = _watched(trees_dirs, prices, registry)
    # Skip the work (validating every tree) when no tree file and not the registry changed.
    if fingerprint == known_fingerprint:
        return None
    trees, items, item_results = [], [], []
    for p in paths:
        try:
            t = load_tree_file(p)
        except TreeError:
            continue  # `inquitree trees validate` reports it; analyses of its episodes show NULLs
        first, last = publication_window(t.paper)
        trees.append(
            (
                t.id,
                t.content_hash,
                t.title,
                t.n,
                t.paper.get("published"),
                first,
                last,
                t.provenance["kind"],
                t.paper.get("it18_id"),
                t.paper.get("paper_subtopics"),
                str(p),
            )
        )
        for c in t.conclusions:
            items.append((t.id, t.content_hash, c.id, len(c.requires_results)))
            item_results += [(t.id, t.content_hash, c.id, r) for r in c.requires_results]
    try:
        table = PriceTable(prices_path)
    except LimitError as exc:
        raise WarehouseError(str(exc)) from exc
    price_rows = [
        (
            model,
            p.get("input_per_mtok"),
            p.get("cached_input_per_mtok"),
            p.get("cache_write_per_mtok"),
            p.get("output_per_mtok"),
            p.get("as_of"),
            p.get("source"),
            p.get("usd_per_hour"),
            p.get("serves", 1) if "usd_per_hour" in p else None,
        )
        for model, p in table.prices.items()
    ]
    models = [
        (m["model"], alias.lower(), m.get("release"), m.get("cutoff"), m.get("source"), m["registry"])
        for m in registry_models(extra)
        for alias in [m["model"], *m.get("aliases", [])]
    ]
    return DimensionRows(
        fingerprint,
        {
            "trees": trees,
            "tree_items": items,
            "tree_item_results": item_results,
            "model_registry": models,
            "prices": price_rows,
        },
    )
