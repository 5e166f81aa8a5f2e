"""What the analytics commands (``warehouse``, ``query``, ``sql``, ``compare``, ``power``,
``report``) share: their options (the warehouse, the scope of episodes, the statistics, the
output), opening a warehouse that holds a sync, a sync's progress line, and how a table is
printed (the columns that fit the terminal, its notes once, CSV safe for a spreadsheet)."""

from __future__ import annotations

import click

from inquitree.cli.common import (
    echo,
    echo_data,
    output_file,
    progress,
    screen_width,
)


def warehouse_option(f):
    return click.option(
        "--warehouse",
        "warehouse_path",
        envvar="INQUITREE_WAREHOUSE",
        default=None,
        metavar="PATH",
        help="DuckDB file (default: $INQUITREE_WAREHOUSE or ./inquitree.duckdb).",
    )(f)


def registry_option(f):
    return click.option(
        "--registry",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="Model registry file (cutoffs for Fig. 4) that extends the shipped one, or replaces it "
        'with "replace": true; an entry for a listed model replaces it (default: $INQUITREE_REGISTRY).',
    )(f)


def output_options(f):
    """--format, --out, --columns and --spreadsheet-safe, for the commands that print a table (see emit)."""
    f = click.option(
        "--spreadsheet-safe",
        "spreadsheet_safe",
        is_flag=True,
        help="CSV for a spreadsheet: a cell that starts with =, +, -, @, a tab or a carriage return gets a "
        "leading ' so that the spreadsheet shows it instead of running it as a formula (model replies and "
        "tree texts may hold one). Use it for any CSV that will be opened in Excel, LibreOffice or Sheets.",
    )(f)
    f = click.option("--out", default=None, type=click.Path(dir_okay=False))(f)
    f = click.option(
        "--columns",
        default=None,
        metavar="A,B,...",
        help="Only these columns (the table format otherwise shows the columns that fit the terminal).",
    )(f)
    return click.option(
        "--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table", show_default=True
    )(f)


def fixed_papers_option(f):
    """--fixed-papers: intervals and tests about exactly these papers (docs/DECISIONS.md #26)."""
    return click.option(
        "--fixed-papers",
        is_flag=True,
        help="Intervals and tests about exactly these papers (only the runs vary), not papers like these.",
    )(f)


def complete_case_option(f):
    """--complete-case: the finished episodes alone, not every cell under the failure rule (#33)."""
    return click.option(
        "--complete-case",
        is_flag=True,
        help="The finished episodes alone (each row says so), not every cell of the campaign with a "
        "failed, interrupted or missing cell scored 0 (docs/DECISIONS.md #33).",
    )(f)


def joint_ranks_option(f):
    """--joint-ranks: rank intervals that hold for every agent at once."""
    return click.option(
        "--joint-ranks",
        is_flag=True,
        help=(
            "Rank intervals that hold for every agent at once (simultaneous), not each agent's on its own, "
            "when each pair's differences spread symmetrically over papers (rows warn when that is not shown)."
        ),
    )(f)


def scope_options(f):
    """--suite NAME (repeatable) and --one-off: which episodes an analysis speaks about (Warehouse.scope)."""
    f = click.option(
        "--one-off",
        is_flag=True,
        help="Only the episodes played outside a suite (`play --record`, the inspect task).",
    )(f)
    return click.option(
        "--suite",
        "suites",
        multiple=True,
        metavar="NAME",
        help="Only this campaign's episodes (repeatable). Default: every campaign's, never mixed with "
        "episodes played outside a suite (those alone when there is no campaign).",
    )(f)


def scoped(wh, suites, one_off, db_url) -> str:
    """Set the warehouse's scope and say in one line (on stderr) what is left out and what the store
    holds that the warehouse has not loaded; returns the scope's line."""
    line = wh.scope(suites, one_off)
    if line:
        echo(f"episodes: {line}", err=True)
    behind = _not_loaded(wh, db_url)
    if behind:
        echo(behind, err=True)
    return line


def _not_loaded(wh, db_url: str | None) -> str:
    """'' or one line: the store holds events this warehouse has not loaded yet."""
    from pathlib import Path

    from inquitree.events import default_url, redact

    url = db_url or default_url()
    source, position = wh.checkpoint()
    if source is None or source != redact(url):
        return ""  # the warehouse was filled from another store: nothing to say about this one
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return ""
    try:
        from inquitree.events import EventStore

        store = EventStore(url, read_only=True)
        try:
            head = store.last_position()
        finally:
            store.close()
    except Exception:  # a store that cannot be read says nothing here: `warehouse sync` will say why
        return ""
    if head <= position:
        return ""
    return (
        f"the store holds {head - position:,} event(s) recorded after this warehouse's last sync: "
        "`inquitree warehouse sync` loads them"
    )


def interval_settings(fixed_papers: bool, joint_ranks: bool = False, complete_case: bool = False):
    """The statistics --fixed-papers, --joint-ranks and --complete-case ask for (the rest from the environment)."""
    import dataclasses

    from inquitree.warehouse import Settings

    return dataclasses.replace(
        Settings.from_env().about("these" if fixed_papers else "papers"),
        joint_ranks=joint_ranks,
        complete_case=complete_case,
    )


def sync_progress(n: int, pos: int) -> None:
    progress(f"  ... {n:,} events loaded (position {pos:,})")


def existing(warehouse_path: str | None, read_only: bool = False, settings=None):
    """The warehouse, which must exist and hold a sync: a query on an empty one says what to do."""
    from pathlib import Path

    from inquitree.warehouse import Warehouse, WarehouseError, default_warehouse_path

    path = warehouse_path or default_warehouse_path()
    if not Path(path).exists():
        raise WarehouseError(f"no warehouse at {path}: run `inquitree warehouse sync` first (it reads the store)")
    wh = Warehouse(path, read_only=read_only, settings=settings)
    if not wh.con.execute("SELECT count(*) FROM sync_state").fetchall()[0][0]:
        wh.close()
        raise WarehouseError(f"the warehouse {path} holds nothing yet: run `inquitree warehouse sync` first")
    return wh


TEXT_CELL = 28  # characters of a text cell in the terminal table (NARROW_CELL below 100 columns)
NARROW_CELL = 20


def _flat(df):
    """``df`` with each list or struct column as JSON text: CSV has no nested values (a list column
    used to end ``inquitree sql --format csv`` in a polars traceback)."""
    import json

    import polars as pl

    nested = [name for name, dtype in df.schema.items() if dtype.is_nested()]
    return df.with_columns(
        pl.Series(name, [None if v is None else json.dumps(v, default=str) for v in df[name].to_list()], pl.String)
        for name in nested
    )


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may run as a formula


def formula_safe(df):
    """Every text cell that a spreadsheet would read as a formula, with a leading ' (OWASP's advice
    for CSV injection); numbers stay numbers."""
    import polars as pl

    texts = [name for name, dtype in df.schema.items() if dtype == pl.String]
    return df.with_columns(
        pl.when(pl.col(c).str.starts_with(FORMULA_START[0]) | pl.col(c).str.contains(r"^[+\-@\t\r]"))
        .then(pl.lit("'") + pl.col(c))
        .otherwise(pl.col(c))
        .alias(c)
        for c in texts
    )


# What fills a table that has no row yet: said instead of an empty box.
EMPTY = {
    "control_accuracy": "no control answers yet: `inquitree control --agent SPEC` records them",
    "judge_agreement": "no two judges have scored the same items yet: `inquitree judge --all --judge SPEC` "
    "adds a second judge's verdicts",
}


def emit_or_say_empty(df, fmt: str, out: str | None, columns, safe: bool, name: str | None = None) -> None:
    """:func:`emit`, but a terminal table without rows is a sentence that says so (``name``: the
    query's, for what would fill it), never an empty box."""
    if fmt == "table" and not out and df.height == 0:
        echo(f"{name + ': ' if name else ''}{EMPTY.get(name or '', 'no rows')}")
        return
    emit(df, fmt, out, columns, safe)


# The costs query's levels, as the terminal prints them: one table each, totals first. The
# episodes' table puts its long ids after the numbers (in one table with the totals, the ids took
# an 80-column screen's every number).
LEVELS = {"model": "per model", "campaign": "per campaign and model", "episode": "per episode"}


def emit(
    df,
    fmt: str,
    out: str | None,
    columns: str | None = None,
    safe: bool = False,
    said: set[str] | None = None,
    last: tuple[str, ...] = (),
) -> None:
    """Print or write ``df`` in ``fmt``; a terminal table with its methods and warnings under it
    (``said``: note lines an earlier table of the same output printed, not repeated; ``last``:
    columns the terminal shows after the numbers)."""
    import polars as pl

    if columns:
        wanted = [c.strip() for c in columns.split(",") if c.strip()]
        unknown = [c for c in wanted if c not in df.columns]
        if unknown:
            raise click.UsageError(f"--columns: no column {', '.join(unknown)}; the columns: {', '.join(df.columns)}")
        df = df.select(wanted)
    if fmt == "parquet":
        if not out:
            raise click.UsageError("--format parquet needs --out FILE")
        import io

        buffer = io.BytesIO()
        df.write_parquet(buffer)
        output_file(out, buffer.getvalue())
        echo(f"wrote {df.height} rows to {out}", err=True)
        return
    if fmt == "table" and not out and not columns and df.height and _split(df, fmt, said):
        return
    note = ""
    if safe and fmt != "csv":
        raise click.UsageError("--spreadsheet-safe is for --format csv")
    if fmt == "csv":
        text = (formula_safe(_flat(df)) if safe else _flat(df)).write_csv()
    elif fmt == "json":
        text = df.write_json()
    else:
        from inquitree.warehouse import readable, wrapped

        width = note_width()
        table, above, notes = (df, [], None) if out or columns else readable(df, width, last)
        shown = table if out or columns else fitting(table)
        if shown.width < table.width:
            rest = [c for c in table.columns if c not in shown.columns]
            note = "\n".join(
                wrapped(f"{len(rest)} more column(s) do not fit: {', '.join(rest)}", width)
                + ["(--columns A,B,... picks columns; --format csv or json shows them all)"]
            )
        with pl.Config(
            tbl_rows=200,
            tbl_cols=-1,
            fmt_str_lengths=1_000,
            tbl_width_chars=10_000,
            tbl_hide_dataframe_shape=True,
            tbl_hide_column_data_types=True,
            float_precision=4,
        ):
            text = str(shown)
    if out:
        output_file(out, text)
    else:
        for line in above if fmt == "table" else []:
            echo(line)
        (echo if fmt == "table" else echo_data)(text, nl=not text.endswith("\n"))
        if fmt == "table":
            from inquitree.warehouse import table_notes

            _say_once(notes if notes is not None else table_notes(df, width), said)
        if note:
            echo(note, err=True)


def _split(df, fmt: str, said: set[str] | None) -> bool:
    """Print a terminal table as one table per judge, or per level of the costs query, each under
    its heading; False when ``df`` is one table."""
    import polars as pl

    said = set() if said is None else said
    if "judge_id" in df.columns:
        # The judge is what tells two rows of one agent apart, and as the last, longest column it
        # was the one an 80-column screen dropped.
        for k, judge in enumerate(dict.fromkeys(df["judge_id"].to_list())):
            echo(("" if k == 0 else "\n") + (f"judge {judge}:" if judge is not None else "no judge:"))
            emit(df.filter(pl.col("judge_id").eq_missing(judge)).drop("judge_id"), fmt, None, said=said)
        return True
    levels = set(df["level"]) if "level" in df.columns else set()
    if len(levels) > 1 and levels <= set(LEVELS):
        for k, level in enumerate(lv for lv in LEVELS if lv in levels):
            echo(("" if k == 0 else "\n") + f"{LEVELS[level]}:")
            part = df.filter(pl.col("level") == level).drop("level")
            emit(part, fmt, None, said=said, last=("episode_id",) if level == "episode" else ())
        return True
    return False


def note_width() -> int:
    """The width notes under a terminal table wrap to."""
    return screen_width()


def _say_once(lines: list[str], said: set[str] | None) -> None:
    """Print ``lines``, but the notes in ``said`` (printed under an earlier table), and remember them;
    when some were left out, one line points to them, so that every table says where its notes are.
    A note is its first line with the indented lines that continue it, and is left out only whole:
    two notes may wrap to a line they share."""
    notes: list[list[str]] = []
    for line in lines:
        if notes and line.startswith("  "):
            notes[-1].append(line)
        else:
            notes.append([line])
    again = 0
    for note in notes:
        key = "\n".join(note)
        if said is not None and key in said:
            again += 1
            continue
        for line in note:
            echo(line)
        if said is not None:
            said.add(key)
    if again:
        echo(f"(and {again} note(s) as under the first table)")


def fitting(df):
    """The leading columns of ``df`` that fit the terminal's width as polars draws them."""
    import shutil

    import polars as pl

    width = shutil.get_terminal_size((120, 24)).columns
    text_cell = TEXT_CELL if width >= 100 else NARROW_CELL  # an 80-column screen keeps a number, not a title's end
    # Words are shortened to fit; an id is only useful whole, and so is a number with its interval
    # ("1.00 [no interval] (0.00)" has words, and cut there it lost the agent's own coverage).
    cuttable = {
        name
        for name in df.columns
        if df[name].dtype == pl.Utf8
        and not name.endswith("episode_id")
        and (values := df[name].head(200).drop_nulls()).str.contains(r"[A-Za-z]").any()
        and not values.str.contains(r"^-?\d[\d.]* \[").all()
    }
    used, keep = 1, []
    for name in df.columns:
        col = df[name].head(200)
        if col.dtype == pl.Utf8:
            cap = text_cell + 1 if name in cuttable else 200
            cells = [min(len(v), cap) for v in col.drop_nulls().to_list()]
        elif col.dtype.is_float():
            cells = [len(f"{v:.4f}") for v in col.drop_nulls().to_list()]
        else:
            cells = [len(str(v)) for v in col.drop_nulls().to_list()]
        need = max([len(name), *cells]) + 3  # a cell's padding and its border (no dtype line is drawn)
        if keep and used + need > width:
            break
        keep.append(name)
        used += need
    shortened = [
        pl.col(c).str.slice(0, text_cell - 1)
        + pl.when(pl.col(c).str.len_chars() >= text_cell).then(pl.lit("…")).otherwise(pl.lit(""))
        for c in keep
        if c in cuttable
    ]
    return df.select(keep).with_columns(shortened)
