"""Whether a sync has anything to do, answered without the sync: a warehouse that holds every
event of its store under this code's schema, with its dimensions read from files that have not
changed since, is left as it is. A writer would copy the file, take the lock, make its views again
and publish a copy equal to the one it read; this reads the warehouse read-only, the store's last
position and the dimension files' fingerprint, and imports neither the sync nor PyArrow.

`inquitree warehouse sync` asks this first; whenever the answer is not a plain yes (no warehouse
yet, another schema, another store, an error of any kind) the sync runs and says what it finds.
"""

from __future__ import annotations

import os
from pathlib import Path

from inquitree.events import EventStore, default_url, redact
from inquitree.warehouse.dimensions import dimension_fingerprint
from inquitree.warehouse.schema import MEMORY_ENV, SCHEMA_HASH, checkpoint, default_warehouse_path, memory_bytes

__all__ = ["up_to_date"]


def up_to_date(
    path: str | None = None,
    store_url: str | None = None,
    trees_dirs: list[Path] | None = None,
    prices: Path | None = None,
    registry: Path | None = None,
    memory: str | None = None,
) -> int | None:
    """The checkpoint's position when a sync of ``store_url`` into the warehouse at ``path`` would
    load no event and write nothing (``trees_dirs``, ``prices``, ``registry`` and ``memory`` as
    the sync's: a memory setting it would refuse is refused here too); None when a sync must run."""
    import duckdb

    if memory or os.environ.get(MEMORY_ENV):
        memory_bytes(memory or os.environ[MEMORY_ENV])
    path = path or default_warehouse_path()
    if not Path(path).is_file():
        return None
    url = store_url or default_url()
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{path.replace(chr(39), chr(39) * 2)}' AS warehouse (READ_ONLY)")
        con.execute("USE warehouse")
        con.execute("SET enable_external_access = false")  # a file's own views read nothing outside it
        stamp = con.execute("SELECT schema_hash FROM warehouse_schema").fetchall()
        source, position = checkpoint(con)
        kept = con.execute("SELECT fingerprint FROM dimension_state").fetchall()
    except duckdb.Error:
        return None
    finally:
        con.close()
    if stamp != [(SCHEMA_HASH,)] or source != redact(url) or not kept:
        return None
    try:
        if kept[0][0] != dimension_fingerprint(trees_dirs, prices, registry):
            return None
        store = EventStore(url, read_only=True)
        try:
            last = store.last_position()
        finally:
            store.close()
    except Exception:  # the sync meets it again, and says what it is
        return None
    return position if last == position else None
