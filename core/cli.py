"""The ``inquitree`` command: one click group; each command lives in its own module."""

from __future__ import annotations

import sys

import click

from inquitree import __version__
from inquitree.events.errors import InquiTreeError, is_damage


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
        except Exception as exc:  # a damaged database read by a driver of its own (the warehouse's reader)
            if not is_damage(exc):
                raise
            click.echo(
                f"inquitree: error: a database is damaged ({str(exc).strip().splitlines()[0][:200]}): "
                "`inquitree db verify` reports what is left of an event store",
                err=True,
            )
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
