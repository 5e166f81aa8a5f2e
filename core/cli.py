"""The ``inquitree`` command: one click group; each command lives in its own module."""

from __future__ import annotations

import atexit
import gc
import sys

import click

from inquitree import __version__
from inquitree.events.errors import InquiTreeError

# Extension modules that report the objects still alive at exit as leaks (nanobind's check).
_COUNT_LEAKS_AT_EXIT = ("duckdb",)


def _no_last_collection() -> None:
    """At exit, after the other handlers: the objects still alive leave the collector's sight, so
    the interpreter does not walk them all once more while it tears modules down (0.1 s per
    command once SQLAlchemy is loaded, bench/cli_startup.py). A command has closed what it
    opened by then. Not where a loaded module would report those objects as leaks."""
    if not any(name in sys.modules for name in _COUNT_LEAKS_AT_EXIT):
        gc.freeze()


def entry() -> None:
    """The ``inquitree`` program (console script, ``python -m inquitree``). In-process callers
    (tests, other programs) call :func:`main`, and keep their interpreter's usual exit."""
    atexit.register(_no_last_collection)
    main()


class _Group(click.Group):
    """Turns InquiTree's own errors into one line on stderr and exit code 2 (no traceback)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InquiTreeError as exc:
            click.echo(f"inquitree: error: {exc}", err=True)
            sys.exit(2)
        except click.UsageError as exc:  # a bad option or argument: the same one line, exit 2
            hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            click.echo(f"inquitree: error: {exc.format_message()}{hint}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"inquitree: error: {exc.format_message()}", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="inquitree")
def main() -> None:
    """InquiTree: evaluate AI research agents on paper-derived research trees.

    Every fact of an episode is an event in an append-only store (SQLite by
    default, PostgreSQL with --db or $INQUITREE_DB).
    """


def _register() -> None:
    from inquitree.core import cli_db, cli_extract, cli_judge, cli_play, cli_suite, cli_trees, cli_warehouse

    main.add_command(cli_db.db)
    main.add_command(cli_trees.trees)
    main.add_command(cli_play.play)
    main.add_command(cli_play.replay)
    main.add_command(cli_play.episodes)
    main.add_command(cli_warehouse.warehouse)
    main.add_command(cli_warehouse.query)
    main.add_command(cli_warehouse.compare)
    main.add_command(cli_warehouse.sql)
    main.add_command(cli_warehouse.report)
    main.add_command(cli_suite.suite)
    main.add_command(cli_judge.judge)
    main.add_command(cli_judge.control)
    main.add_command(cli_extract.extract)


_register()
