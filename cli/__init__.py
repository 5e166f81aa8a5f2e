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
from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.text import printable
from inquitree.events import is_damage

__all__ = ["main"]


# Each command and the module that defines it, imported when the command is asked for: a command
# loads its own module only (`episodes list` needs the store and the fold, not the options of
# `play`, the suite runner or the warehouse). `inquitree --help` loads them all for their help lines.
_COMMANDS: dict[str, tuple[str, str]] = {
    "db": ("db", "db"),
    "trees": ("trees", "trees"),
    "play": ("play", "play"),
    "replay": ("play", "replay"),
    "episodes": ("episodes", "episodes"),
    "warehouse": ("warehouse", "warehouse"),
    "query": ("query", "query"),
    "compare": ("compare", "compare"),
    "power": ("compare", "power"),
    "sql": ("query", "sql"),
    "report": ("report", "report"),
    "suite": ("suite", "suite"),
    "judge": ("judge", "judge"),
    "control": ("judge", "control"),
    "extract": ("extract", "extract"),
    "view": ("view", "view"),
    "instrument": ("instrument", "instrument"),
    "label": ("label", "label"),
}


class _Group(click.Group):
    """Loads each command's module when the command is asked for (``_COMMANDS``), and turns
    InquiTree's own errors into one line on stderr and exit code 2 (no traceback)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _COMMANDS:
            import importlib

            module, attr = _COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(f"inquitree.cli.{module}"), attr), cmd_name)
        return self.commands.get(cmd_name)

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
