"""Small helpers shared by test modules."""

from __future__ import annotations

import dataclasses

from inquitree.events import Event, event_type, registered_types

if "TestNoted" in registered_types():
    Noted = registered_types()["TestNoted"]
else:

    @event_type
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Noted(Event):
        TYPE = "TestNoted"
        n: int
        text: str = ""
