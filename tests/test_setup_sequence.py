"""The README's two commands in sequence: after `pip install .` (the first line) has left `build/`
and other leftovers in the checkout, the type check and the lint of the second line still check the
repository's own files only, in a folder of any name.

The first line once left `build/lib/inquitree`, mypy then found a second copy of the package through
`.mypy/inquitree` and failed on types that were the same class under two names, so the test command
failed right after the install command on every fresh clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LEFTOVERS = (".venv", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache", "__pycache__", "build", "dist", "logs")


def copy_checkout(dest: Path) -> Path:
    """The working tree as a user has it, without what the tools made in it."""
    shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(*LEFTOVERS, "*.sqlite*", "*.duckdb"))
    return dest


@pytest.mark.skipif(not (BIN / "mypy").exists(), reason="mypy and ruff come with the test extras")
def test_type_check_and_lint_after_pip_install_in_a_copy(tmp_path):
    checkout = copy_checkout(tmp_path / "my-clone")  # a folder not named inquitree
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path / "site"), "."],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert (checkout / "build" / "lib" / "inquitree" / "warehouse" / "sync.py").exists(), "pip left no build/ here"
    # What else a user's first hour leaves: another venv, a store, a half-made dist/, with code in them
    # that would fail both checks if they were read.
    bad = "import os\nx: int = 'not an int'\n"
    for folder in ("venv-other/lib", "dist/inquitree", "logs"):
        (checkout / folder).mkdir(parents=True, exist_ok=True)
        (checkout / folder / "leftover.py").write_text(bad)
    (checkout / "inquitree.sqlite").write_bytes(b"")
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy-cache"), "VENV": str(BIN.parent)}
    checked = subprocess.run(
        ["bash", "scripts/checks.sh"], cwd=checkout, capture_output=True, text=True, timeout=900, env=env
    )
    assert checked.returncode == 0, (checked.stdout + checked.stderr)[-3000:]
    assert "leftover" not in checked.stdout and "build/lib" not in checked.stdout
