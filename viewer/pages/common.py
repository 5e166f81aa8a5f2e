"""What several pages share: strict paging parameters, list links that keep their state, and
short forms of campaign summaries and durations."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlencode

LIST_FILTERS = (("agent", "agent"), ("tree", "tree_id"), ("a", "randomness"), ("judge", "judge"), ("status", "status"))


_PAGE = re.compile(r"[0-9]{1,7}")  # ASCII digits only ("²".isdigit() is true), and bounded before int()


def page_number(q: Any, name: str = "page", pages: int = 1_000_000) -> int:
    """A page number from the URL's parameter ``name``: 0 when absent, not 1 to 7 ASCII digits, or
    not below ``pages`` (any other value is ignored, never an error)."""
    asked = q.get(name, "")
    return int(asked) if _PAGE.fullmatch(asked) and int(asked) < pages else 0


def list_link(path: str, state: dict[str, Any], page: int, anchor: str) -> Any:
    """The URL of a list at ``path`` in ``state`` (sort, direction, filters) and ``page``, as a
    function of ``changes`` to it (None drops a parameter; page 0 is the default)."""

    def link(to: str = anchor, **changes: Any) -> str:  # ``to``: another part of the page to land on
        merged = {**state, "page": page or None, **changes}
        return f"{path}?" + urlencode({k: v for k, v in merged.items() if v not in (None, "", 0)}) + f"#{to}"

    return link


def natural(value: Any) -> Any:
    """A sort key that puts numbers in numeric order, and text in text order."""
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def campaign_brief(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """A campaign's one-line summary: counts, times, tokens and cost, as text the pages show."""
    if state is None:
        return None
    counts = state["counts"]
    done = counts["finished"] + counts["limit"] + counts["failed"]
    eta = state["eta_s"]
    unpriced = state["unpriced_calls"]
    if unpriced and not state["cost_usd"]:
        cost = f"unknown (no price for the {unpriced} call(s))"
    else:
        cost = f"${state['cost_usd']:.4f}" + (f" (+{unpriced} call(s) with no price)" if unpriced else "")
    return {
        "key": state["key"],
        "name": state["name"],
        "progress": f"{done} of {state['cells']} cells ended",
        "counts": ", ".join(f"{n} {s}" for s, n in counts.items() if n),
        "status": state["status"],
        "status_note": state["status_note"],
        "elapsed": duration(state["elapsed_s"]),
        "eta": (duration(eta) if eta is not None else "unknown until a cell ends") if state["active"] else "—",
        "tokens": f"{state['tokens']:,}",
        "cost": cost,
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["latest_started"])),
        "runs": state["runs"],
    }


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"
