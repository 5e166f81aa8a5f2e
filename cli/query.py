"""``inquitree query`` and ``inquitree sql``: the shipped queries and one statement of your own,
on a read-only warehouse."""

from __future__ import annotations

import click

from inquitree.cli.common import (
    db_option,
    echo,
)
from inquitree.cli.tables import (
    complete_case_option,
    emit_or_say_empty,
    existing,
    fixed_papers_option,
    interval_settings,
    joint_ranks_option,
    output_options,
    scope_options,
    scoped,
    warehouse_option,
)

MAX_SQL_FILE_BYTES = 1_000_000  # one statement


def query_summary(sql: str) -> str:
    """What a query is, as its header comment's first sentence says it (its first line alone
    stopped mid-sentence)."""
    import re

    words: list[str] = []
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        words.append(line.removeprefix("--").strip())
    text = " ".join(w for w in words if w)
    end = re.search(r"\.(?=\s+[A-Z(`]|\s*$)", text)
    return text[: end.end()] if end else text


@click.command()
@click.argument("name", required=False)
@warehouse_option
@output_options
@click.option("--list", "list_", is_flag=True, help="List the queries with their first comment line.")
@fixed_papers_option
@joint_ranks_option
@complete_case_option
@scope_options
@db_option
def query(
    name,
    warehouse_path,
    fmt,
    out,
    columns,
    spreadsheet_safe,
    list_,
    fixed_papers,
    joint_ranks,
    complete_case,
    suites,
    one_off,
    db_url,
) -> None:
    """Run queries/NAME.sql against the warehouse, as last loaded by `inquitree warehouse sync`
    (this command does not sync; it says when the store holds events the warehouse has not loaded)."""
    from inquitree.warehouse import QUERIES_DIR, query_names

    if list_ or not name:
        import textwrap

        from inquitree.cli.common import screen_width

        width = screen_width()
        for q in query_names():
            said = textwrap.wrap(
                query_summary((QUERIES_DIR / f"{q}.sql").read_text()),
                max(width - 29, 30),
                max_lines=3,
                placeholder=" …",  # at a word's end; the file's header says it whole
            ) or [""]
            echo(f"{q:28} {said[0]}")
            for line in said[1:]:
                echo(" " * 29 + line)
        echo(f"(each query's whole description and its SQL: {QUERIES_DIR}/NAME.sql)")
        return
    with existing(
        warehouse_path, read_only=True, settings=interval_settings(fixed_papers, joint_ranks, complete_case)
    ) as wh:  # `sql`'s sandbox
        scoped(wh, suites, one_off, db_url)
        emit_or_say_empty(wh.query(name), fmt, out, columns, spreadsheet_safe, name)


@click.command()
@click.argument("text", required=False)
@click.option(
    "--file", "sql_file", type=click.Path(dir_okay=False), default=None, help="Read the statement from this file."
)
@warehouse_option
@output_options
def sql(text, sql_file, warehouse_path, fmt, out, columns, spreadsheet_safe) -> None:
    """Run one SQL statement (TEXT, or --file FILE) against the warehouse, on a read-only connection
    (it cannot change it, nor read any file)."""
    if (text is None) == (sql_file is None):
        raise click.UsageError("give the statement as TEXT or with --file FILE, one of the two")
    if text is None:  # a regular file of at most MAX_SQL_FILE_BYTES, read once
        from inquitree.boundary.files import read_file

        text = read_file(sql_file, MAX_SQL_FILE_BYTES, what="--file").decode("utf-8", "replace")
    with existing(warehouse_path, read_only=True) as wh:
        emit_or_say_empty(wh.sql(text, one_statement=True), fmt, out, columns, spreadsheet_safe)
