#!/usr/bin/env bash
# Lint (ruff), format check (ruff format) and types (mypy) of the repository's own files: its folders
# and top-level modules by name, never whatever else lies in the checkout (build/ and dist/ from
# `pip install .`, a venv of any name, stores, logs). Settings are in pyproject.toml; mypy's own
# list of folders is its `exclude` there. Run by scripts/test.sh; VENV names the venv (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
OWN=(__init__.py __main__.py stats.py bench boundary cli core docs events migrations queries scripts studies suites tests trees viewer warehouse)
"$VENV/bin/ruff" check --force-exclude "${OWN[@]}"
"$VENV/bin/ruff" format --check --force-exclude "${OWN[@]}"
"$VENV/bin/mypy"
