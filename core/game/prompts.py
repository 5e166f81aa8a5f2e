"""Prompt templates (paper Appendix A and C) as a named template set.

The shipped set ``inquitree`` is the paper's text exactly as printed (see
``core/game/prompts_in_paper.py``); another directory with the same file names can be
chosen per run. A set's identity is its name plus a hash of its files, both
recorded in ``EpisodeStarted``. Every set renders in Jinja2's sandbox: a set may come from a
suite written by someone else.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from inquitree.events.errors import InquiTreeError

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


class _ConfinedLoader(jinja2.FileSystemLoader):
    """A template set's loader: a file (an include too) is read only when its real path, after
    following every link, lies inside the set's folder."""

    def __init__(self, root: Path):
        super().__init__(str(root))
        self.root = root

    def get_source(self, environment: jinja2.Environment, template: str):
        confined_file(self.root, template)
        return super().get_source(environment, template)


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


class TemplateSet:
    def __init__(self, name_or_dir: str = "inquitree"):
        """A shipped set by name (always from the package, whatever the current directory holds),
        or a directory given as a path (one with a ``/`` in it, or a name no shipped set has)."""
        path = TEMPLATES_DIR / name_or_dir if is_shipped(name_or_dir) else Path(name_or_dir)
        if not path.is_dir():
            shipped = ", ".join(sorted(p.name for p in TEMPLATES_DIR.iterdir() if p.is_dir()))
            raise TemplateError(f"template set {name_or_dir!r}: no such directory or shipped set (shipped: {shipped})")
        missing = [f for f in FILES.values() if not (path / f).is_file()]
        if missing:
            raise TemplateError(f"template set {path}: missing {', '.join(missing)}")
        self.name = name_or_dir if (TEMPLATES_DIR / name_or_dir) == path else str(path.resolve())
        self.path = path
        # Sandboxed: a set may come from a suite or a user's folder, and a plain Environment lets a
        # template reach Python objects (``cycler.__init__.__globals__.os``) and run anything.
        for f in FILES.values():  # every file, before anything is read from it
            confined_file(path, f)
        self.env = ImmutableSandboxedEnvironment(
            loader=_ConfinedLoader(path),
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            undefined=jinja2.StrictUndefined,
            autoescape=False,
        )
        digest = hashlib.sha256()
        for key in sorted(FILES):
            digest.update(FILES[key].encode() + b"\0" + (path / FILES[key]).read_bytes() + b"\0")
        self.hash = digest.hexdigest()
        try:
            self._compiled = {key: self.env.get_template(f) for key, f in FILES.items() if f.endswith(".j2")}
        except TemplateError:
            raise
        except jinja2.TemplateError as exc:
            where = getattr(exc, "filename", None) or path
            raise TemplateError(f"template set {path}: {where}: {exc}") from exc
        self.system_prompt = (path / FILES["system"]).read_text(encoding="utf-8").rstrip("\n")

    def render(self, template_id: str, **values) -> str:
        try:
            return self._compiled[template_id].render(**values).rstrip("\n")
        except SecurityError as exc:
            raise TemplateError(
                f"template {template_id} in {self.path}: refused by the sandbox ({exc}); a template may use the "
                "values it is given (the paper's placeholders), not Python's objects"
            ) from exc
        except jinja2.TemplateNotFound as exc:
            raise TemplateError(
                f"template {template_id} in {self.path}: it includes {exc.name!r}, which is not a file of this set"
            ) from exc
        except jinja2.TemplateError as exc:
            raise TemplateError(f"template {template_id} in {self.path}: {exc}") from exc
