"""What is known of how an instrument reads, in the words a table prints beside its figures.

Two records of measurements (each a JSON object with ``matchers`` and ``judges``, lists of what
:func:`~inquitree.core.instrument.matching.measure_matcher` and
:func:`~inquitree.core.instrument.judging.measure_judge` return): the one InquiTree ships
(``core/data/instrument/measured.json``, made by ``studies/instrument_record.py`` and checked by
tests/test_instrument.py), and a lab's own (``instrument measure --record`` adds to it; the file is
``$INQUITREE_INSTRUMENT``, else ``instrument.json`` in InquiTree's cache folder). A lab's
measurement of the same instrument comes first. An instrument in neither is "unmeasured".
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Any

from inquitree.core.cache import cache_dir

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "instrument" / "measured.json"
RECORD_ENV = "INQUITREE_INSTRUMENT"
UNMEASURED = "unmeasured"


def lab_record_path() -> Path:
    """Where ``instrument measure --record`` keeps a lab's measurements."""
    return Path(os.environ.get(RECORD_ENV) or cache_dir() / "instrument.json")


MAX_RECORD_BYTES = 16 * 1024 * 1024  # a record is a few kB a measurement


def _read(path: Path) -> dict[str, list[dict]]:
    """The record at ``path``, read with the bounded reader (a pipe, a device or a huge file is
    refused, never waited on or read whole) and its numbers within float's range."""
    from inquitree.boundary.files import InputRefused, finite_number, read_file

    if not path.exists():
        return {"matchers": [], "judges": []}
    try:
        found = json.loads(
            read_file(path, MAX_RECORD_BYTES, what="record of measurements").decode("utf-8"), parse_int=finite_number
        )
    except InputRefused as exc:
        raise ValueError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a record of measurements ({exc})") from None
    if not isinstance(found, dict) or not all(isinstance(found.get(k, []), list) for k in ("matchers", "judges")):
        raise ValueError(f"{path}: not a record of measurements (an object with 'matchers' and 'judges' lists)")
    record = {"matchers": list(found.get("matchers", [])), "judges": list(found.get("judges", []))}
    for kind, fields in (("matchers", _MATCHER_FIELDS), ("judges", _JUDGE_FIELDS)):
        for n, entry in enumerate(record[kind]):
            for field, expected in fields:
                value: Any = entry
                for part in field.split("."):
                    value = value.get(part) if isinstance(value, dict) else _MISSING
                if not expected(value):
                    raise ValueError(f"{path}: {kind}[{n}].{field} is {value!r}: {_EXPECTED[expected]}")
    return record


_MISSING = object()


def _text(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _rate(v: Any) -> bool:  # a rate or kappa: a finite number, or null where it is undefined
    return v is None or _number(v)


def _span(v: Any) -> bool:  # an interval: two finite numbers, or null
    return v is None or (isinstance(v, list) and len(v) == 2 and all(_number(x) for x in v))


_EXPECTED = {
    _text: "expected a non-empty string",
    _number: "expected a finite number",
    _rate: "expected a finite number or null",
    _span: "expected [low, high] (finite numbers) or null",
}
# What the readings print of each entry, checked when a record is read: a lab's record is a file
# anyone may hand over, and a table must fail with the field named rather than print it.
_MATCHER_FIELDS = (
    [("embedder", _text), ("tau", _number), ("tau_study", _number), ("actions", _number)]
    + [
        (f"{state}.held_out.{rate}", _rate)
        for state in ("topic", "subtopic")
        for rate in ("recognised", "false_match", "wrong_candidate")
    ]
    + [("topic.held_out.intervals.recognised", _span)]
)
_JUDGE_FIELDS = [
    ("judge", _text),
    ("held_out.items", _number),
    ("held_out.kappa", _rate),
    ("held_out.agreement", _rate),
    ("held_out.kappa_interval", _span),
]


@functools.lru_cache(maxsize=8)
def _records(lab: str, stamp: float) -> list[dict[str, list[dict]]]:
    return [_read(Path(lab)), _read(SHIPPED)]


def records() -> list[dict[str, list[dict]]]:
    """The lab's record, then the shipped one (read again when the lab's file changes)."""
    lab = lab_record_path()
    try:
        stamp = lab.stat().st_mtime
    except OSError:
        stamp = 0.0
    return _records(str(lab), stamp)


def record(found: dict[str, Any], path: Path | None = None) -> Path:
    """Keep one measurement in the lab's record, replacing an earlier one of the same instrument."""
    from inquitree.boundary.files import write_file

    path = path or lab_record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = _read(path)
    kind = "judges" if "judge" in found else "matchers"
    kept[kind] = [m for m in kept[kind] if _key(m) != _key(found)] + [found]
    write_file(path, json.dumps(kept, indent=1) + "\n")
    return path


def _key(m: dict) -> tuple:
    if "judge" in m:
        return ("judge", m["judge"])
    return ("matcher", m["embedder"], m.get("rule", "paper"), float(m["tau"]), float(m["tau_study"]))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _percent_span(interval: list[float] | None) -> str:
    return "" if not interval else f" [{100 * interval[0]:.0f}, {100 * interval[1]:.0f}]"


def counted(rate: float | None, n: int | None, of: int | None, span: list[float] | None = None) -> str:
    """A rate with its counts, ``8% 8/94``, and ``(n < 20)`` when it rests on fewer than 20 items
    (FEW of core/instrument/matching.py): too few to be read as a rate."""
    from inquitree.core.instrument.matching import FEW

    if n is None or of is None:
        return _pct(rate) + _percent_span(span)
    if not of:
        return "- 0/0"
    return f"{_pct(rate)}{_percent_span(span)} {n}/{of}" + (f" (n < {FEW})" if of < FEW else "")


def state_reading(h: dict[str, Any], with_span: bool = False) -> str:
    """One state's held-out rates as a table prints them: recognised and wrong over the intended
    moves, false over the actions that mean none, each with its counts. A measurement made before
    the counts were kept (a lab's older record) has false over all actions, and says so."""
    span = h["intervals"]["recognised"] if with_span else None
    if "n_null" not in h:
        return (
            f"recognised {_pct(h['recognised'])}{_percent_span(span)}, false {_pct(h['false_match'])} of all actions "
            f"(an older measurement: measure again), wrong {_pct(h['wrong_candidate'])}"
        )
    c = h["counts"]
    return (
        f"recognised {counted(h['recognised'], c['recognised'], h['n_intended'], span)}, "
        f"false {counted(h['false_match'], c['false_match'], h['n_null'])}, "
        f"wrong {counted(h['wrong_candidate'], c['wrong_candidate'], h['n_intended'])}"
    )


def matcher_reading(
    embedder: str | None, tau: float | None, tau_study: float | None, match_rule: str | None = None
) -> str:
    """How the matcher of episodes played with ``embedder`` at ``tau``/``tau_study`` (None: tau at
    both states, as episodes recorded before tau_study) reads real moves on held-out trees; under
    a fitted match rule (``match_rule``, its name and version: ``fitted-1``; None: the paper's)
    the thresholds are the rule's own."""
    if embedder is None or tau is None:
        return UNMEASURED
    if match_rule is not None:  # its name and version (fitted-1): its thresholds are its own
        found = [
            m for rec in records() for m in rec["matchers"] if (m["embedder"], m.get("rule")) == (embedder, match_rule)
        ]
        key = _key(found[0]) if found else ("matcher", embedder, match_rule, float("nan"), float("nan"))
        at = f"the {match_rule} match rule"
    else:
        key = ("matcher", embedder, "paper", float(tau), float(tau if tau_study is None else tau_study))
        at = f"tau {key[3]}/{key[4]}"
    for rec in records():
        for m in rec["matchers"]:
            if _key(m) == key:
                t, s = m["topic"]["held_out"], m["subtopic"]["held_out"]
                return (
                    f"{embedder} at {at}, on held-out trees: Topic {state_reading(t, with_span=True)}; "
                    f"Subtopic {state_reading(s)} (false: of the actions meaning none; {m['actions']} "
                    f"labelled actions of one 1.5B model, not this campaign's agents; docs/instrument.md)"
                )
    return f"{UNMEASURED} ({embedder} at {at}: inquitree instrument measure)"


def judge_reading(judge_id: str | None) -> str:
    """How the judge ``judge_id`` agrees with a careful reading on held-out trees."""
    if judge_id is None:
        return UNMEASURED
    for rec in records():
        for m in rec["judges"]:
            if m["judge"] == judge_id:
                h = m["held_out"]
                interval = h.get("kappa_interval")
                span = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
                kappa = "-" if h["kappa"] is None else f"{h['kappa']:.2f}"
                return (
                    f"kappa {kappa}{span} against a careful reading of {h['items']} held-out items "
                    f"(agreement {_pct(h['agreement'])}; docs/instrument.md)"
                )
    return f"{UNMEASURED} (inquitree instrument measure --judge ...)"
