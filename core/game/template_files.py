"""A template set's files: the names every set has, where the shipped sets live, and the rule
that a set reads only files of its own folder. Apart from ``prompts.py`` so that the sandbox
(``sandbox.py``, Jinja2) and the template set (``prompts.py``) both read them without importing
each other.
"""

from __future__ import annotations

from pathlib import Path

from inquitree.boundary.errors import InquiTreeError

TEMPLATES_DIR = Path(__file__).resolve().parent / "prompt_sets"
FILES = {
    "system": "system.txt",
    "C.1.1": "C.1.1.j2",
    "C.1.2": "C.1.2.j2",
    "C.1.3": "C.1.3.j2",
    "C.2.1": "C.2.1.j2",
    "C.2.2": "C.2.2.j2",
    "C.3.1": "C.3.1.j2",
    "C.3.2": "C.3.2.j2",
    "C.4.1": "C.4.1.j2",
    "C.4.2": "C.4.2.j2",
    "C.5": "C.5.j2",
    "C.6": "C.6.j2",
}


class TemplateError(InquiTreeError):
    pass


def is_shipped(name_or_dir: str) -> bool:
    """Whether ``name_or_dir`` names a shipped set (a bare name; anything with a separator is a path)."""
    return "/" not in name_or_dir and "\\" not in name_or_dir and (TEMPLATES_DIR / name_or_dir).is_dir()


def confined_file(root: Path, name: str) -> Path:
    """``root/name`` when its real path (links followed) lies inside ``root``'s real path; else a
    TemplateError: a link in a set's folder must not make it read a file elsewhere."""
    real_root = root.resolve()
    where = (root / name).resolve()
    if where != real_root and not where.is_relative_to(real_root):
        raise TemplateError(
            f"template set {root}: {name} leads outside the set's folder (to {where}); a template set's files "
            "must be its own, not links to files elsewhere"
        )
    return where
