#!/usr/bin/env bash
# The whole test suite, on SQLite and on a throwaway PostgreSQL cluster.
# Creates .venv (Python 3.11+) and installs the project with its test extras if needed,
# starts PostgreSQL on loopback, runs pytest, and stops the cluster whatever happens.
# Lint (ruff), format check (ruff format) and types (mypy) of the repository's own files run first (scripts/checks.sh).
# Extra arguments go to pytest (e.g. scripts/test.sh -k store).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh

if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing PostgreSQL (Debian package)"; apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
  else
    echo "test.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1
  fi
fi
# Debian's Chromium (the report's and the viewer's browser tests) and Graphviz (the viewer's tree pictures).
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v dot >/dev/null 2>&1 || missing="$missing graphviz"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing$missing (Debian packages) for the browser tests"; apt-get update -qq && apt-get install -y -qq $missing >/dev/null
  else
    echo "test.sh: not installed:$missing (apt-get install$missing); the browser tests will fail" >&2
  fi
fi
pgdir=$(mktemp -d /tmp/inquitree-pg.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
trap 'scripts/pg-throwaway.sh stop "$pgdir"' EXIT
echo "== starting a throwaway PostgreSQL on 127.0.0.1:$port"
INQUITREE_PYTHON="$VENV/bin/python" scripts/pg-throwaway.sh start "$pgdir" "$port" >/dev/null
# The tests make a database per test as the administrator and connect to it as its writer role.
export INQUITREE_TEST_PG=$(cat "$pgdir/admin-url")
export INQUITREE_REQUIRE_PG=1
echo "== ruff (lint and format check) and mypy"
VENV="$VENV" scripts/checks.sh
echo "== pytest"
"$VENV/bin/python" -m pytest "$@"
