"""Episodes as JSON lines, one event a line: {"type", "version", "payload"}.

The format of ``inquitree episodes export`` and of the golden logs under
``tests/golden/`` that every CI run replays.
"""

from __future__ import annotations

from pathlib import Path

from inquitree.events.base import Event, canonical_json, decode, parse_json
from inquitree.events.errors import InquiTreeError


def dump_jsonl(events: list[Event]) -> str:
    return "".join(
        canonical_json({"type": e.TYPE, "version": e.VERSION, "payload": e.to_payload()}) + "\n" for e in events
    )


def load_jsonl(path: str | Path) -> list[Event]:
    events = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = parse_json(line)
            events.append(decode(row["type"], row["version"], row["payload"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InquiTreeError(f"{path}: line {n}: not an exported event ({type(exc).__name__}: {exc})") from exc
    if not events:
        raise InquiTreeError(f"{path}: no events")
    return events
