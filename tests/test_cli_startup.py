"""`inquitree --help`, `--version` and each command's `--help` load only click and InquiTree's own
small modules: the heavy libraries load when a command runs."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sqlalchemy", "alembic", "duckdb", "polars", "openai", "numpy", "pyarrow", "onnxruntime", "jinja2")
HEAVY += ("ssl", "http.client")  # the model calls' HTTP (core/calls/chat_http.py): 40 ms, loaded when a model is made


def test_the_cli_group_and_every_help_import_no_heavy_library():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from inquitree.cli import main\n"
        "helps = [[], ['play'], ['replay'], ['suite', 'run'], ['warehouse', 'sync'], ['db', 'verify'], ['query'],"
        " ['extract'], ['judge'], ['control'], ['trees', 'validate']]\n"
        "for args in helps:\n"
        "    assert CliRunner().invoke(main, [*args, '--help']).exit_code == 0, args\n"
        "assert CliRunner().invoke(main, ['--version']).exit_code == 0\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


OTHER_COMMANDS = (
    "inquitree.cli.suite",
    "inquitree.cli.warehouse",
    "inquitree.cli.query",
    "inquitree.cli.compare",
    "inquitree.cli.report",
    "inquitree.cli.view",
    "inquitree.cli.db",
)
# what playing an episode needs and a listing does not: the model calls and their options, the run
# settings (cli/episodes.py is a module of its own for it). The game's face, which the listing's
# fold comes from, imports all of the game and nothing heavy (test_architecture.py holds it to that).
PLAYING = ("inquitree.cli.play", "inquitree.core.calls.models", "inquitree.core.run.spec")


def test_each_command_is_loaded_from_its_module_under_its_own_name():
    """The group loads a command's module when the command is asked for: every name it lists
    resolves to a command of that name, and a name it does not know is click's usual error."""
    import click

    from inquitree.cli import _COMMANDS, main

    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(_COMMANDS)
    for name in _COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name, name
    assert main.get_command(ctx, "nope") is None


def test_listing_episodes_loads_no_numpy_jinja_or_duckdb(tmp_path):
    """`episodes list` reads a page of streams and folds them: it needs the store and the engine's
    fold, not the numerics, the prompt templates, the warehouse or what playing needs (about
    0.15 s a listing took with them)."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.events.store import EventStore

    from enginekit import OracleAgent, play

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    tree = resolve_tree("synthetic-diamond-4")
    with EventStore(url) as store:
        play(tree, OracleAgent(tree), store=store)
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from inquitree.cli import main\n"
        f"r = CliRunner().invoke(main, ['episodes', 'list', '--db', {url!r}])\n"
        "assert r.exit_code == 0 and 'synthetic-diamond-4' in r.output, r.output\n"
        f"print(sorted(m for m in {HEAVY + OTHER_COMMANDS + PLAYING!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_campaign_worker_loads_neither_alembic_nor_the_openai_sdk(tmp_path):
    """A store already at head opens without Alembic, and model calls go over the direct HTTP
    transport without the SDK (core/calls/chat_http.py): what every `suite run --workers` process saves."""
    from inquitree.events.store import EventStore

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    EventStore(url).close()  # made (and migrated) here
    code = (
        "import sys\n"
        "from inquitree.events.store import EventStore\n"
        "from inquitree.core.calls.models import ChatModel\n"
        f"EventStore({url!r}).close()\n"
        "assert ChatModel('m', base_url='http://127.0.0.1:9/v1')._http.__class__.__name__ == 'Endpoint'\n"
        "print(sorted(m for m in ('alembic', 'openai') if m in sys.modules))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "INQUITREE_CHAT_HTTP"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_every_package_says_what_it_exports_and_each_name_resolves():
    """Public faces: each package lists what users may import (``__all__``), and every name loads."""
    import importlib

    for package in ("inquitree.api", "inquitree.events", "inquitree.warehouse", "inquitree.cli"):
        module = importlib.import_module(package)
        assert module.__all__, package
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{package}.{name}"


def test_a_query_loads_neither_the_sync_nor_sqlalchemy(tmp_path):
    """`inquitree query` reads the warehouse: importing the sync (the store's readers, SQLAlchemy)
    at its start was a fifth of its time on a small store."""
    from inquitree.cli import main as cli

    url, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    from click.testing import CliRunner

    for args in (["play", "--embedder", "hash", "--record", "-q"], ["warehouse", "sync", "--warehouse", wh]):
        assert CliRunner().invoke(cli, [*args, "--db", url]).exit_code == 0
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from inquitree.cli import main\n"
        f"out = CliRunner().invoke(main, ['query', 'table2_leaderboard', '--warehouse', {wh!r}, '--db', {url!r}])\n"
        "assert out.exit_code == 0, out.output\n"
        "print(sorted(m for m in ('sqlalchemy', 'alembic', 'inquitree.warehouse.sync') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
