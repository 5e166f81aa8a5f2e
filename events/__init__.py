"""The append-only event log: event types, serialization, the store."""

from inquitree.events import types as _types  # noqa: F401  (registers the episode events)
from inquitree.events.base import Event, canonical_json, decode, event_type, registered_types, upcast, upcaster
from inquitree.events.errors import ConcurrencyError, StoreError, UnknownEventType, UnknownEventVersion

__all__ = [
    "Event",
    "canonical_json",
    "decode",
    "event_type",
    "registered_types",
    "upcast",
    "upcaster",
    "ConcurrencyError",
    "StoreError",
    "UnknownEventType",
    "UnknownEventVersion",
]
