"""What a bench needs beyond the README's install (``pip install .``), said in one line.

Every bench runs on the README's install, or names what it lacks and how to add it from the
checkout, then skips (exit 0): the reader learns what to install instead of reading a traceback."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

EXTRAS = {"starlette": "view", "uvicorn": "view", "httpx": "test", "playwright": "test", "inspect_ai": "inspect"}


def missing(*modules: str) -> list[str]:
    """The modules of ``modules`` that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def how(modules: list[str]) -> str:
    extras = sorted({EXTRAS.get(m, "test") for m in modules})
    return f"pip install -e '.[{','.join(extras)}]' in the checkout"


def need(*modules: str) -> None:
    """Skip the whole bench, with one line, unless every one of ``modules`` imports."""
    lacking = missing(*modules)
    if lacking:
        print(f"{Path(sys.argv[0]).name}: skipped: needs {', '.join(lacking)} ({how(lacking)})")
        raise SystemExit(0)


def browser_missing() -> str | None:
    """Why the headless browser part of a bench cannot run, or None when it can."""
    lacking = missing("playwright")
    if lacking:
        return f"needs playwright ({how(lacking)})"
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "needs Chromium (apt-get install chromium)"
    return None


def code_commit() -> str | None:
    """The checkout's commit (short), recorded beside each result: a figure names the code it measured."""
    import subprocess

    r = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).resolve().parent
    )
    return r.stdout.strip() or None


def keep_run(out: str | Path, result: dict) -> None:
    """Append ``result`` to the list of runs in ``out`` (newest last): the machine is shared, and one
    run is not the truth."""
    import json

    path = Path(out)
    runs = json.loads(path.read_text()) if path.exists() else []
    runs = runs if isinstance(runs, list) else [runs]
    path.write_text(json.dumps([*runs, result], indent=2) + "\n")
