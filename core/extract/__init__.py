"""Research trees from papers: the extraction pipeline (``tree_from_paper``, paper App. D) that turns
a paper's text into a tree and a review report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.core.extract.tree_from_paper import ExtractError as ExtractError
    from inquitree.core.extract.tree_from_paper import Extraction as Extraction
    from inquitree.core.extract.tree_from_paper import extract_tree as extract_tree
    from inquitree.core.extract.tree_from_paper import slugify as slugify
    from inquitree.core.extract.tree_from_paper import tokens_note as tokens_note

_EXPORTS = {
    "ExtractError": "tree_from_paper",
    "Extraction": "tree_from_paper",
    "extract_tree": "tree_from_paper",
    "slugify": "tree_from_paper",
    "tokens_note": "tree_from_paper",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
