"""InquiTree inside inspect_ai: the task (``task``, registered through inspect's entry point), the
offline models it registers (``model``) and the export of recorded episodes as eval logs
(``export``). Imports inspect_ai; nothing else in InquiTree does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.core.inspect.export import eval_logs as eval_logs
    from inquitree.core.inspect.export import write_logs as write_logs

_EXPORTS = {
    "eval_logs": "export",
    "write_logs": "export",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
