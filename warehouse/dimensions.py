"""The dimension tables of the warehouse: trees, their items and required results (from the tree
files), the model registry (Table 3 and the user's additions) and the price table. Read beside
a sync's loading and written with its first commit."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from inquitree.core.limits import PRICES_ENV, PRICES_PATH, LimitError, PriceTable
from inquitree.core.tree import TreeError, load_tree_file, shipped_tree_paths
from inquitree.warehouse.errors import WarehouseError

REGISTRY_PATH = Path(__file__).resolve().parent.parent / "trees" / "registry" / "models.json"


@dataclass
class DimensionRows:
    fingerprint: str
    tables: dict[str, list[tuple]]


def dimension_rows(
    known_fingerprint: str | None, trees_dirs: list[Path] | None = None, prices: Path | None = None
) -> DimensionRows | None:
    """The rows of the dimension tables, read from the tree files, the model registry and the
    price table; None when none of those files changed since ``known_fingerprint``. Pure
    Python and no DuckDB, so that a sync runs it beside its loading."""
    paths = list(shipped_tree_paths())
    for d in trees_dirs or []:
        paths += sorted(Path(d).glob("*.json"))
    prices_path = Path(prices or os.environ.get(PRICES_ENV) or PRICES_PATH)
    # Skip the work (validating every tree) when no tree file and not the registry changed.
    fingerprint = hashlib.sha256(
        repr([(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in [*paths, REGISTRY_PATH, prices_path]]).encode()
    ).hexdigest()
    if fingerprint == known_fingerprint:
        return None
    trees, items, item_results = [], [], []
    for p in paths:
        try:
            t = load_tree_file(p)
        except TreeError:
            continue  # `inquitree trees validate` reports it; analyses of its episodes show NULLs
        trees.append(
            (
                t.id,
                t.content_hash,
                t.title,
                t.n,
                t.paper.get("published"),
                t.provenance["kind"],
                t.paper.get("it18_id"),
                t.paper.get("paper_subtopics"),
                str(p),
            )
        )
        for c in t.conclusions:
            items.append((t.id, t.content_hash, c.id, len(c.requires_results)))
            item_results += [(t.id, t.content_hash, c.id, r) for r in c.requires_results]
    reg = json.loads(REGISTRY_PATH.read_text())
    try:
        table = PriceTable(prices_path)
    except LimitError as exc:
        raise WarehouseError(str(exc)) from exc
    price_rows = [
        (
            model,
            p["input_per_mtok"],
            p.get("cached_input_per_mtok"),
            p.get("cache_write_per_mtok"),
            p["output_per_mtok"],
            p.get("as_of"),
            p.get("source"),
        )
        for model, p in table.prices.items()
    ]
    models = [
        (m["model"], alias.lower(), m.get("release"), m["cutoff"], m.get("source"))
        for m in reg["models"]
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
