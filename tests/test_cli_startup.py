"""`inquitree --help`, `--version` and each command's `--help` load only click and InquiTree's own
small modules: the heavy libraries load when a command runs."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sqlalchemy", "alembic", "duckdb", "polars", "openai", "numpy", "pyarrow", "onnxruntime", "jinja2")


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
