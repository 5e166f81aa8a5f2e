"""Event base type, registry, canonical serialization and upcasting.

Every event class is a frozen, keyword-only dataclass with a ``TYPE`` name and a schema
``VERSION``, made so by ``@event_type``, which also registers it. The registry holds the
*current* class of each type; older stored versions are brought forward on read by chained
upcasters (v1 -> v2 -> v3), so code only ever sees the current shape.

``Event`` writes ``__eq__``, ``__hash__`` and ``__repr__`` once, with a dataclass's meaning, for
every event class: the dataclass module writes each of them anew per class, as source it
compiles, which took more than half the time of importing the event types, a cost every
command pays at start (``bench/cli_startup.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, TypeVar, dataclass_transform

import orjson

from inquitree.events.errors import UnknownEventType, UnknownEventVersion

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]

_REGISTRY: dict[str, type["Event"]] = {}
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}
_ADDS_ONLY: set[tuple[str, int]] = set()  # upcasters that only add "not recorded" fields


@dataclasses.dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class Event:
    """Base of every event. Subclasses set ``TYPE`` and ``VERSION``."""

    TYPE: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1
    # Fields written only when they differ from their default: fields added to a type without a new
    # version, so that every log recorded before them stays byte for byte what it was (and decodes
    # with the default, which is what they meant then).
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name, _, _ in _fields(type(self)))

    # What @dataclass(frozen=True) would write: equal when of the same class with equal fields;
    # hashed by the fields (an event holding a dict or a list is not hashable, as before).
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n, _, _ in _fields(type(self)))
        return f"{type(self).__qualname__}({fields})"

    def to_payload(self) -> Payload:
        """The fields as stored: every field, but an ``OPTIONAL`` one only when it is not its default."""
        fields = _fields(type(self))
        values = self.__dict__
        # a copy of the instance's fields when they are held in declared order, as __init__ and
        # from_payload hold them (a fifth of the time of reading each by name, on every append)
        payload = dict(values) if tuple(values) == _names(type(self)) else {n: getattr(self, n) for n, _, _ in fields}
        for name, default, factory in _optional(type(self)) if self.OPTIONAL else ():
            if payload[name] == (factory() if factory is not _MISSING else default):
                del payload[name]
        return payload

    def to_json(self) -> bytes:
        """The payload as stored, UTF-8: the fields in their declared order, keys of nested objects
        sorted, no whitespace (orjson; ``as_stored`` in core/run/golden.py writes a parsed payload back the same)."""
        if not self.OPTIONAL:
            return orjson.dumps(self, option=orjson.OPT_SORT_KEYS)
        return orjson.dumps(self.to_payload(), option=orjson.OPT_SORT_KEYS)

    @classmethod
    def from_payload(cls, payload: Payload) -> "Event":
        """The event a stored payload holds: keys that are not fields are left out, a missing field
        takes its default, and one without a default is a TypeError, as calling the class would
        give. Made without the class's ``__init__`` (:func:`frozen_from_dict`): decoding is what
        reading a log does for every event."""
        values: dict[str, Any] = {}
        for name, default, factory in _fields(cls):
            if name in payload:
                values[name] = payload[name]
            elif default is not _MISSING:
                values[name] = default
            elif factory is not _MISSING:
                values[name] = factory()
            else:
                raise TypeError(f"{cls.__qualname__} needs the field {name!r}")
        return frozen_from_dict(cls, values)


T = TypeVar("T")
_MISSING: Any = dataclasses.MISSING
_FIELDS: dict[type[Event], tuple[tuple[str, Any, Any], ...]] = {}


def _fields(cls: type[Event]) -> tuple[tuple[str, Any, Any], ...]:
    """(name, default, default factory) of each field of an event class, in order, looked up once
    per class: decoding a log asks for each event."""
    known = _FIELDS.get(cls)
    if known is None:
        known = _FIELDS[cls] = tuple((f.name, f.default, f.default_factory) for f in dataclasses.fields(cls))
    return known


_NAMES: dict[type[Event], tuple[str, ...]] = {}
_OPTIONAL: dict[type[Event], tuple[tuple[str, Any, Any], ...]] = {}


def _optional(cls: type[Event]) -> tuple[tuple[str, Any, Any], ...]:
    """(name, default, default factory) of each ``OPTIONAL`` field of an event class."""
    known = _OPTIONAL.get(cls)
    if known is None:
        known = _OPTIONAL[cls] = tuple(f for f in _fields(cls) if f[0] in cls.OPTIONAL)
    return known


def _names(cls: type[Event]) -> tuple[str, ...]:
    """The field names of an event class, in declared order (looked up once per class)."""
    known = _NAMES.get(cls)
    if known is None:
        known = _NAMES[cls] = tuple(name for name, _, _ in _fields(cls))
    return known


def frozen_from_dict(cls: type[T], values: dict[str, Any]) -> T:
    """An instance of the frozen dataclass ``cls`` whose fields are ``values`` (every field, in
    declared order), made without its ``__init__``, which sets each field through
    ``object.__setattr__``: that was half the time of decoding a page of events
    (``bench/episodes_list.py``). Only for a class without ``__post_init__`` (``@event_type``
    refuses one), and values the caller has checked are every field."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    return obj


E = TypeVar("E", bound=Event)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field,))
def event_type(cls: type[E]) -> type[E]:
    """Class decorator: make ``cls`` a frozen, keyword-only dataclass (its equality, hash and
    repr are ``Event``'s) and register it as the current version of its TYPE."""
    cls = dataclasses.dataclass(frozen=True, kw_only=True, repr=False, eq=False)(cls)
    if not cls.TYPE:
        raise TypeError(f"{cls.__name__} has no TYPE")
    if hasattr(cls, "__post_init__"):  # Event.from_payload does not call __init__
        raise TypeError(f"{cls.__name__}: an event class has no __post_init__")
    existing = _REGISTRY.get(cls.TYPE)
    if existing is not None and existing is not cls:
        raise TypeError(f"event type {cls.TYPE!r} registered twice ({existing.__name__}, {cls.__name__})")
    _REGISTRY[cls.TYPE] = cls
    return cls


def upcaster(type_name: str, from_version: int, adds_only: bool = False) -> Callable[[Upcaster], Upcaster]:
    """Decorator: register a function turning a v``from_version`` payload into v+1.

    ``adds_only``: the step only adds fields whose value says "not recorded" (None, an empty
    list), so a reader of the JSON that takes a missing field as NULL (the warehouse) may read
    the older payload as it is (``adds_only_from``)."""

    def register(fn: Upcaster) -> Upcaster:
        key = (type_name, from_version)
        if key in _UPCASTERS:
            raise TypeError(f"two upcasters for {type_name} v{from_version}")
        _UPCASTERS[key] = fn
        if adds_only:
            _ADDS_ONLY.add(key)
        return fn

    return register


def adds_only_from(type_name: str, version: int) -> bool:
    """True if every step from v``version`` to the current version only adds "not recorded" fields."""
    cls = _REGISTRY.get(type_name)
    return cls is not None and all((type_name, v) in _ADDS_ONLY for v in range(version, cls.VERSION))


def registered_types() -> dict[str, type[Event]]:
    return dict(_REGISTRY)


def upcast(type_name: str, version: int, payload: Payload) -> Payload:
    """Bring a stored payload of ``type_name`` v``version`` to the current version."""
    cls = _REGISTRY.get(type_name)
    if cls is None:
        raise UnknownEventType(type_name)
    if version > cls.VERSION:
        raise UnknownEventVersion(type_name, version, cls.VERSION)
    while version < cls.VERSION:
        fn = _UPCASTERS.get((type_name, version))
        if fn is None:
            raise UnknownEventVersion(type_name, version, cls.VERSION, missing_upcaster=True)
        payload = fn(dict(payload))
        version += 1
    return payload


def decode(type_name: str, version: int, payload: Payload) -> Event:
    """Build the current event object from a stored (type, version, payload)."""
    current = upcast(type_name, version, payload)  # raises on unknown type/version
    return _REGISTRY[type_name].from_payload(current)


def canonical_json(payload: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 text (orjson).

    Floats are written in their shortest round-trip form. orjson writes NaN and
    infinities as null, so code that makes floats (cosines, scores) checks
    that they are finite before they become events.
    """
    return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode()


def parse_json(text: str | bytes) -> Payload:
    parsed: Payload = orjson.loads(text)
    return parsed
