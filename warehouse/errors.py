"""The warehouse's own error."""

from __future__ import annotations

from inquitree.boundary.errors import InquiTreeError


class WarehouseError(InquiTreeError):
    pass
