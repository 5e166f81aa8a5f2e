"""The warehouse's own error."""

from __future__ import annotations

from inquitree.events.errors import InquiTreeError


class WarehouseError(InquiTreeError):
    pass
