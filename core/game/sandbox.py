"""Jinja2's sandbox as InquiTree renders a template set in it: bounded in what a template may
reach (the immutable sandbox), in the work a render may do (loops, a clock for a set that is not
shipped) and in the size of what it makes; the set's files read only from its own folder.

Apart from ``prompts.py`` so that Jinja2 is imported when a set is read, not when the game's
face is (the command line imports faces at start-up).
"""

from __future__ import annotations

import contextvars
import sys
import time
from pathlib import Path
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from inquitree.core.game.template_files import FILES, TemplateError, confined_file

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


class _ConfinedLoader(jinja2.FileSystemLoader):
    """A template set's loader: a file (an include too) is read only when its real path, after
    following every link, lies inside the set's folder."""

    def __init__(self, root: Path):
        super().__init__(str(root))
        self.root = root

    def get_source(self, environment: jinja2.Environment, template: str):
        confined_file(self.root, template)
        return super().get_source(environment, template)


def compiled(path: Path) -> tuple[BoundedSandbox, dict[str, Any]]:
    """The sandbox of the set in ``path`` and its templates, compiled (a template that does not
    compile is a TemplateError naming its file)."""
    env = BoundedSandbox(
        loader=_ConfinedLoader(path),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    try:
        templates = {key: env.get_template(f) for key, f in FILES.items() if f.endswith(".j2")}
    except TemplateError:
        raise
    except jinja2.TemplateError as exc:
        where = getattr(exc, "filename", None) or path
        raise TemplateError(f"template set {path}: {where}: {exc}") from exc
    return env, templates


def render(templates: Any, template_id: str, values: dict[str, Any]) -> str:
    """The template ``template_id`` of ``templates`` (a ``TemplateSet``) filled in; any failure
    (refused by the sandbox, past a bound, an error of the template's own) is one TemplateError
    naming the template, never a traceback or a hang."""
    budget = _BudgetScope(None if templates.shipped else RENDER_SECONDS)
    try:
        with budget:
            out, size = [], 0
            for chunk in templates._compiled[template_id].generate(**values):
                size += len(chunk)
                if size > MAX_RENDERED_CHARS:
                    raise SecurityError(f"the rendered text passed {MAX_RENDERED_CHARS:,} characters")
                out.append(chunk)
        return "".join(out).rstrip("\n")
    except SecurityError as exc:
        raise TemplateError(
            f"template {template_id} in {templates.path}: refused by the sandbox ({exc}); a template may use the "
            "values it is given (the paper's placeholders), not Python's objects, within bounds"
        ) from None
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(
            f"template {template_id} in {templates.path}: it includes {exc.name!r}, which is not a file of this set"
        ) from None
    except TemplateError:
        raise
    except jinja2.TemplateError as exc:
        raise TemplateError(f"template {template_id} in {templates.path}: {exc}") from None
    except (ArithmeticError, ValueError, TypeError, LookupError, MemoryError, RecursionError) as exc:
        raise TemplateError(f"template {template_id} in {templates.path}: {type(exc).__name__}: {exc}") from None


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
