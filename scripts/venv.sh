# Sourced by the scripts: make .venv and install InquiTree into it (editable), once per change of pyproject.toml.
VENV=${INQUITREE_VENV:-.venv}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11) and f"InquiTree needs Python 3.11 or newer; {sys.executable} is {sys.version.split()[0]} (set PYTHON=...)")' || exit 1
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV with $("$PY" --version)"
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.inquitree-installed"
# The tests must import this checkout: a venv where `pip install .` (the README's first line) put a
# copy of the package into site-packages is installed again, editable.
here=$("$VENV/bin/python" -c 'import inquitree, os; print(os.path.realpath(os.path.dirname(inquitree.__file__)))' 2>/dev/null || true)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$here" != "$(pwd -P)" ]; then
  echo "== installing InquiTree and its test dependencies into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/python" -m pip install -q -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/python" -c 'import inquitree.cli' && touch "$stamp"
fi
