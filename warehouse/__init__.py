"""The analytics side: a DuckDB warehouse kept in step with the event store, the paper's metrics
as SQL (``queries/``), their intervals (``intervals.py``, on ``inquitree.stats``) and the HTML report.

``Warehouse(path).sync(url)``, then ``.query(name)`` or ``.sql(text)`` (Polars DataFrames). What a
user may import from here is listed in ``__all__``, loaded on first use (DuckDB and Polars are
heavy, and the command line imports this package only when it needs it)."""

from __future__ import annotations

from inquitree import lazy_exports

_EXPORTS = {
    "Warehouse": "warehouse",
    "query_names": "warehouse",
    "Settings": "intervals",
    "WarehouseError": "errors",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
