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
