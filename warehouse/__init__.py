"""The analytics side: a DuckDB warehouse kept in step with the event store, the paper's metrics
as SQL (``queries/``), their intervals (``intervals.py``, on ``inquitree.stats``) and the HTML report.

``Warehouse(path).sync(url)``, then ``.query(name)`` or ``.sql(text)`` (Polars DataFrames). What a
user may import from here is listed in ``__all__``, loaded on first use (DuckDB and Polars are
heavy, and the command line imports this package only when it needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.warehouse.errors import WarehouseError as WarehouseError
    from inquitree.warehouse.intervals import Settings as Settings
    from inquitree.warehouse.notes import readable as readable
    from inquitree.warehouse.notes import table_notes as table_notes
    from inquitree.warehouse.notes import wrapped as wrapped
    from inquitree.warehouse.report import episode_items as episode_items
    from inquitree.warehouse.report import figures as figures
    from inquitree.warehouse.report import table_html as table_html
    from inquitree.warehouse.report import write_report as write_report
    from inquitree.warehouse.schema import default_warehouse_path as default_warehouse_path
    from inquitree.warehouse.uptodate import up_to_date as up_to_date
    from inquitree.warehouse.warehouse import PAIR_COLUMNS as PAIR_COLUMNS
    from inquitree.warehouse.warehouse import QUERIES_DIR as QUERIES_DIR
    from inquitree.warehouse.warehouse import Warehouse as Warehouse
    from inquitree.warehouse.warehouse import kept_only_if_used as kept_only_if_used
    from inquitree.warehouse.warehouse import query_names as query_names
    from inquitree.warehouse.warehouse import rebuild as rebuild

_EXPORTS = {
    "WarehouseError": "errors",
    "Settings": "intervals",
    "readable": "notes",
    "table_notes": "notes",
    "wrapped": "notes",
    "episode_items": "report",
    "figures": "report",
    "table_html": "report",
    "write_report": "report",
    "PAIR_COLUMNS": "warehouse",
    "QUERIES_DIR": "warehouse",
    "Warehouse": "warehouse",
    "default_warehouse_path": "schema",
    "up_to_date": "uptodate",
    "kept_only_if_used": "warehouse",
    "query_names": "warehouse",
    "rebuild": "warehouse",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
