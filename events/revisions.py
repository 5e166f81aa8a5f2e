"""The store's schema revisions, read from the Alembic version files without Alembic (a line
``revision = "..."`` and ``down_revision = ...`` per file), so that a reader of the store (the
warehouse, every command at start-up) can check a store's revision without importing Alembic;
a test keeps this in step with Alembic's own reading. Here in ``events/``, which owns the schema,
so that ``migrations/`` depends on ``events/`` and not the other way round."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

__all__ = ["MIGRATIONS_DIR", "head", "revision_problem", "revisions"]

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
_REVISION = re.compile(r'^revision\s*=\s*["\']([^"\']+)["\']', re.M)
_DOWN = re.compile(r'^down_revision\s*=\s*(?:["\']([^"\']+)["\']|None)', re.M)


@lru_cache(maxsize=1)
def revisions() -> dict[str, str | None]:
    """Each revision with the one it follows (None for the first)."""
    out: dict[str, str | None] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        rev, down = _REVISION.search(text), _DOWN.search(text)
        if rev and down:
            out[rev.group(1)] = down.group(1)
    return out


def head() -> str:
    """The revision that no other follows."""
    revs = revisions()
    heads = set(revs) - {d for d in revs.values() if d}
    if len(heads) != 1:
        raise RuntimeError(f"the migrations have {len(heads)} heads: {sorted(heads)}")
    return heads.pop()


def revision_problem(
    where: str, rev: str | None, current: str | None = None, known: set[str] | None = None
) -> str | None:
    """What is wrong with a store at schema revision ``rev`` for this code, in the words every
    command uses (None: it is at the head). ``where`` names the store (its URL without password);
    ``current`` and ``known`` default to the revisions read from the version files."""
    current = current or head()
    if rev == current:
        return None
    if rev is None:
        return f"{where} has no InquiTree schema: run `inquitree db upgrade --db {where}`"
    if rev not in (known if known is not None else set(revisions())):
        return (
            f"{where} is at schema revision {rev!r}, which this InquiTree version does not know "
            f"(it knows up to {current!r}): the database was made by a newer InquiTree; upgrade InquiTree"
        )
    return f"{where} is at schema revision {rev!r}, older than {current!r}: run `inquitree db upgrade --db {where}`"
