"""The ``inquitree`` command: one click group; each command group lives in a module of this
package (``common`` holds the options several commands share), and each command is a thin layer
over a Python call a user can make too (``core.run.runner.run_episode``, ``core.run.campaign.run_suite``,
``warehouse.warehouse.Warehouse``, ...). A package of its own, outside ``core/``: the engine and its
models do not depend on the command line, and ``core`` and ``warehouse`` no longer import each
other through it."""

from __future__ import annotations

import sys

import click

from inquitree import __version__
from inquitree.events.errors import InquiTreeError, is_damage
from inquitree.events.names import printable

__all__ = ["main"]


class _Group(click.Group):
    """Turns InquiTree's own errors into one line on stderr and exit code 2 (no traceback)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InquiTreeError as exc:
            click.echo(f"inquitree: error: {printable(str(exc))}", err=True)
            sys.exit(2)
        except click.UsageError as exc:  # a bad option or argument: the same one line, exit 2
            hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            click.echo(f"inquitree: error: {printable(exc.format_message())}{hint}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"inquitree: error: {printable(exc.format_message())}", err=True)
            sys.exit(2)
        except RecursionError:  # a file nested past Python's recursion limit (JSON, TOML): refused, not a traceback
            click.echo(
                "inquitree: error: an input file is nested too deeply to read (arrays or tables inside each other)",
                err=True,
            )
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
    from inquitree.cli import db, extract, judge, play, suite, trees, view, warehouse

    main.add_command(db.db)
    main.add_command(trees.trees)
    main.add_command(play.play)
    main.add_command(play.replay)
    main.add_command(play.episodes)
    main.add_command(warehouse.warehouse)
    main.add_command(warehouse.query)
    main.add_command(warehouse.compare)
    main.add_command(warehouse.power)
    main.add_command(warehouse.sql)
    main.add_command(warehouse.report)
    main.add_command(suite.suite)
    main.add_command(judge.judge)
    main.add_command(judge.control)
    main.add_command(extract.extract)
    main.add_command(view.view)


_register()
