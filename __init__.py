"""InquiTree: an event-sourced engine that evaluates AI research agents in the
scientific inquiry loop, over research trees derived from papers.

The repository root is this package: ``core/`` is ``inquitree.core``,
``events/`` is ``inquitree.events`` and so on.
"""

from typing import Any, Callable

__version__ = "0.3.0"


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``(__all__, __getattr__)`` for a package whose public names (name -> module of the package)
    are loaded on first use: the command line imports the packages at start-up, and nothing heavy
    may come with them."""
    import importlib

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    return sorted(exports), __getattr__


# The repository's folders that are not the package's: an editable install maps ``inquitree`` onto
# the repository root, where Python would import each of them as a namespace package
# (``inquitree.tests``) that `pip install .` does not ship. Such an import fails here as it does
# in an installed copy, so nothing comes to depend on them.
_NOT_SHIPPED = frozenset({"bench", "docs", "scripts", "studies", "tests"})


class _NotShipped:
    """The import system's finder for ``inquitree.<folder>`` of ``_NOT_SHIPPED``: not found."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        head, _, rest = name.partition(".")
        if head == "inquitree" and rest.partition(".")[0] in _NOT_SHIPPED:
            raise ModuleNotFoundError(
                f"No module named {name!r}: {rest.partition('.')[0]}/ is the repository's, not the package's", name=name
            )
        return None


def _guard_the_repository() -> None:
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    if any(os.path.isdir(os.path.join(here, folder)) for folder in _NOT_SHIPPED):
        sys.meta_path.insert(0, _NotShipped)


_guard_the_repository()
