"""Research trees from papers: the extraction pipeline (``tree_from_paper``, paper App. D) that turns
a paper's text into a tree and a review report."""

from __future__ import annotations

from inquitree.core.extract.tree_from_paper import ExtractError, Extraction, extract_tree, slugify, tokens_note

__all__ = [
    "ExtractError",
    "Extraction",
    "extract_tree",
    "slugify",
    "tokens_note",
]
