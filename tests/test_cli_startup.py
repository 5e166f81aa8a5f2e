"""`inquitree --help`, `--version` and each command's `--help` load only click and InquiTree's own
small modules: the heavy libraries load when a command runs."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sqlalchemy", "alembic", "duckdb", "polars", "openai", "numpy", "pyarrow", "onnxruntime", "jinja2")
HEAVY += ("ssl", "http.client")  # the model calls' HTTP (core/chat_http.py): 40 ms, loaded when a model is made


def test_the_cli_group_and_every_help_import_no_heavy_library():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from inquitree.core.cli import main\n"
        "helps = [[], ['play'], ['replay'], ['suite', 'run'], ['warehouse', 'sync'], ['db', 'verify'], ['query'],"
        " ['extract'], ['judge'], ['control'], ['trees', 'validate']]\n"
        "for args in helps:\n"
        "    assert CliRunner().invoke(main, [*args, '--help']).exit_code == 0, args\n"
        "assert CliRunner().invoke(main, ['--version']).exit_code == 0\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_campaign_worker_loads_neither_alembic_nor_the_openai_sdk(tmp_path):
    """A store already at head opens without Alembic, and model calls go over the direct HTTP
    transport without the SDK (core/chat_http.py): what every `suite run --workers` process saves."""
    from inquitree.events.store import EventStore

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    EventStore(url).close()  # made (and migrated) here
    code = (
        "import sys\n"
        "from inquitree.events.store import EventStore\n"
        "from inquitree.core.models import ChatModel\n"
        f"EventStore({url!r}).close()\n"
        "assert ChatModel('m', base_url='http://127.0.0.1:9/v1')._http.__class__.__name__ == 'Endpoint'\n"
        "print(sorted(m for m in ('alembic', 'openai') if m in sys.modules))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "INQUITREE_CHAT_HTTP"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_program_skips_the_last_collection_at_exit_unless_duckdb_would_count_leaks():
    """`inquitree` (not an in-process caller of `main`) freezes what is alive as it exits, which
    saves the interpreter's last walk over it (bench/cli_startup.py); with DuckDB loaded it does
    not, since DuckDB's bindings would print every object left as a leak."""
    code = (
        "import atexit, gc, sys\n"
        "if sys.argv[1] == 'duckdb':\n"
        "    import duckdb\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))  # runs after entry()'s\n"
        "sys.argv = ['inquitree', '--version']\n"
        "from inquitree.core.cli import entry\n"
        "entry()\n"
    )
    plain = subprocess.run([sys.executable, "-c", code, "plain"], capture_output=True, text=True)
    assert plain.returncode == 0 and plain.stdout.splitlines()[-1] == "frozen True", plain.stdout + plain.stderr
    with_duckdb = subprocess.run([sys.executable, "-c", code, "duckdb"], capture_output=True, text=True)
    assert with_duckdb.stdout.splitlines()[-1] == "frozen False" and "leaked" not in with_duckdb.stderr


def test_the_installed_program_and_python_m_use_that_exit():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["inquitree"] == "inquitree.core.cli:entry"
    assert "entry()" in (root / "__main__.py").read_text()
