"""Prompt templates (paper Appendix A and C) as a named template set.

The shipped set ``inquitree`` is the paper's text exactly as printed (see
``core/game/prompts_in_paper.py``); another directory with the same file names can be
chosen per run. A set's identity is its name plus a hash of its files, both
recorded in ``EpisodeStarted``. Every set renders in Jinja2's sandbox: a set may come from a
suite written by someone else.
"""

from __future__ import annotations

import contextvars
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

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


# What one render of a template may take: the text it makes, the iterations every range() of it
# yields together, the largest number a call may take, and (for a set that is not shipped) time.
MAX_RENDERED_CHARS = 200_000
MAX_RANGE_TOTAL = 100_000
MAX_CALL_NUMBER = 100_000
RENDER_SECONDS = 2.0
# Filters that cannot make a text much longer than what they are given: the rest (center, indent,
# format, wordwrap, replace, ...) can turn a few characters of a template into gigabytes.
SAFE_FILTERS = [
    "abs",
    "capitalize",
    "count",
    "d",
    "default",
    "e",
    "escape",
    "first",
    "float",
    "int",
    "join",
    "last",
    "length",
    "list",
    "lower",
    "max",
    "min",
    "round",
    "safe",
    "string",
    "striptags",
    "title",
    "trim",
    "truncate",
    "upper",
    "wordcount",
]
# String methods that pad or format to a width the template chooses.
_WIDENING = frozenset({"format", "format_map", "center", "ljust", "rjust", "zfill", "expandtabs"})


class _Budget:
    """What one render has used; set for the render's thread by :meth:`TemplateSet.render`."""

    def __init__(self, seconds: float | None):
        self.ranged = 0
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.lines = 0

    def trace(self, frame: Any, event: str, arg: Any) -> Any:
        """A trace function for the render's thread: past the deadline, the template stops."""
        self.lines += 1
        if self.deadline is not None and self.lines % 256 == 0 and time.monotonic() > self.deadline:
            raise SecurityError(f"the render took longer than {RENDER_SECONDS:g} s")
        return self.trace


_BUDGET: contextvars.ContextVar[_Budget] = contextvars.ContextVar("template_budget")


def _bounded_range(*args: int) -> range:
    r = range(*args)
    budget = _BUDGET.get(None)
    if budget is not None:
        budget.ranged += len(r)
        if budget.ranged > MAX_RANGE_TOTAL:
            raise SecurityError(f"the loops of one render may take {MAX_RANGE_TOTAL:,} steps in all")
    return r


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox, bounded in work and size as well as in what it may reach: a
    template may loop and compute, but no expression, call or filter may make a text or a number
    far larger than what the template is given (see the limits above)."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.globals = {"range": _bounded_range, "namespace": self.globals["namespace"], "dict": dict}
        self.filters = {name: self.filters[name] for name in SAFE_FILTERS}

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and (_number(right) and abs(right) > 64 or _number(left) and abs(left) > 2**20):
            raise SecurityError("a power too large for a template")
        if operator == "*":
            sized, times = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
            if isinstance(sized, (str, list, tuple)) and _number(times) and len(sized) * times > MAX_RENDERED_CHARS:
                raise SecurityError("a repetition longer than a rendered template may be")
        if operator == "%" and isinstance(left, str):
            raise SecurityError("printf-style formatting of text (it pads to any width)")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - as Jinja's
        if getattr(__obj, "__name__", "") in _WIDENING:
            raise SecurityError(f"{__obj.__name__}() (it pads or formats to any width)")
        if any(_number(a) and abs(a) > MAX_CALL_NUMBER for a in (*args, *kwargs.values())):
            raise SecurityError(f"a call with a number above {MAX_CALL_NUMBER:,}")
        return super().call(__context, __obj, *args, **kwargs)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
        self.env = BoundedSandbox(
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

    def render(self, template_id: str, **values: Any) -> str:
        """The template filled in; any failure (refused by the sandbox, past a bound, an error of the
        template's own) is one TemplateError naming the template, never a traceback or a hang."""
        budget = _BudgetScope(None if self.shipped else RENDER_SECONDS)
        try:
            with budget:
                out, size = [], 0
                for chunk in self._compiled[template_id].generate(**values):
                    size += len(chunk)
                    if size > MAX_RENDERED_CHARS:
                        raise SecurityError(f"the rendered text passed {MAX_RENDERED_CHARS:,} characters")
                    out.append(chunk)
            return "".join(out).rstrip("\n")
        except SecurityError as exc:
            raise TemplateError(
                f"template {template_id} in {self.path}: refused by the sandbox ({exc}); a template may use the "
                "values it is given (the paper's placeholders), not Python's objects, within bounds"
            ) from None
        except jinja2.TemplateNotFound as exc:
            raise TemplateError(
                f"template {template_id} in {self.path}: it includes {exc.name!r}, which is not a file of this set"
            ) from None
        except TemplateError:
            raise
        except jinja2.TemplateError as exc:
            raise TemplateError(f"template {template_id} in {self.path}: {exc}") from None
        except (ArithmeticError, ValueError, TypeError, LookupError, MemoryError, RecursionError) as exc:
            raise TemplateError(f"template {template_id} in {self.path}: {type(exc).__name__}: {exc}") from None


class _BudgetScope:
    """A render's budget for its thread: the range count, and for a set that is not shipped a
    trace function that stops the template at its deadline (restored afterwards)."""

    def __init__(self, seconds: float | None):
        self.budget = _Budget(seconds)

    def __enter__(self) -> _Budget:
        self.token = _BUDGET.set(self.budget)
        self.tracer = sys.gettrace()
        if self.budget.deadline is not None:
            sys.settrace(self.budget.trace)
        return self.budget

    def __exit__(self, *exc: object) -> None:
        if self.budget.deadline is not None:
            sys.settrace(self.tracer)
        _BUDGET.reset(self.token)
