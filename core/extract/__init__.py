"""Research trees from papers: the extraction pipeline (``tree_from_paper``, paper App. D) that turns
a paper's text into a tree and a review report."""

from inquitree import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__, {name: "tree_from_paper" for name in ("extract_tree", "ExtractError", "Extraction", "slugify")}
)
