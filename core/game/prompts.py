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
from typing import Any

from inquitree.core.game.template_files import FILES, TEMPLATES_DIR, TemplateError, confined_file, is_shipped

__all__ = ["FILES", "TEMPLATES_DIR", "TemplateError", "TemplateSet", "confined_file", "is_shipped"]


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
        # A set that is not shipped may come from anyone: its renders also run against a clock.
        self.shipped = is_shipped(name_or_dir)
        digest = hashlib.sha256()
        for key in sorted(FILES):
            digest.update(FILES[key].encode() + b"\0" + (path / FILES[key]).read_bytes() + b"\0")
        self.hash = digest.hexdigest()
        from inquitree.core.game.sandbox import compiled  # Jinja2: when a set is read, not at start-up

        self.env, self._compiled = compiled(path)
        self.system_prompt = (path / FILES["system"]).read_text(encoding="utf-8").rstrip("\n")

    def render(self, template_id: str, **values: Any) -> str:
        """The template filled in; any failure (refused by the sandbox, past a bound, an error of the
        template's own) is one TemplateError naming the template, never a traceback or a hang."""
        from inquitree.core.game.sandbox import render

        return render(self, template_id, values)
