"""Where InquiTree keeps what it can compute again (embeddings, which tree files passed the
schema): ``$INQUITREE_CACHE``, else ``$XDG_CACHE_HOME/inquitree``, else ``~/.cache/inquitree``.
Deleting it loses nothing but time."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "INQUITREE_CACHE"


def cache_dir() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "inquitree"
    )
    return Path(base)
