"""The store's exceptions: one library exception per thing a user can act on."""

from __future__ import annotations

from inquitree.boundary.errors import InquiTreeError


class StoreError(InquiTreeError):
    """The event store cannot be used as asked (unreachable, wrong schema, ...)."""


class StoreDamaged(StoreError):
    """The database file is damaged (SQLite cannot read it, or part of it): ``db verify`` reports what is left."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message


DAMAGE_SIGNS = ("malformed", "not a database", "file is encrypted", "disk i/o error", "database corrupt")


def is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` (from sqlite3, SQLAlchemy or an ADBC driver) says the database file is damaged."""
    text = str(getattr(exc, "orig", None) or exc).lower()
    return any(sign in text for sign in DAMAGE_SIGNS)


class ConcurrencyError(StoreError):
    """An append's expected version did not match the stream's current version."""

    def __init__(self, stream_id: str, expected: int, actual: int | None = None):
        self.stream_id, self.expected, self.actual = stream_id, expected, actual
        got = "" if actual is None else f", but it is at version {actual}"
        super().__init__(f"stream {stream_id!r}: append expected version {expected}{got}")


class UnknownEventType(StoreError):
    def __init__(self, type_name: str, where: str = ""):
        self.type_name = type_name
        super().__init__(f"unknown event type {type_name!r}{where}: this InquiTree version has no such event")


class UnknownEventVersion(StoreError):
    def __init__(self, type_name: str, version: int, current: int, missing_upcaster: bool = False):
        self.type_name, self.version, self.current = type_name, version, current
        if missing_upcaster:
            msg = f"event {type_name} v{version}: no upcaster to v{current}"
        else:
            msg = (
                f"event {type_name} v{version} is newer than this InquiTree knows "
                f"(it reads up to v{current}); upgrade InquiTree"
            )
        super().__init__(msg)
