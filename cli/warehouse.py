"""``inquitree warehouse``, ``inquitree query`` and ``inquitree sql``: the analytics side."""

from __future__ import annotations

import click

from inquitree.cli.common import (
    FINITE,
    FiniteFloat,
    db_option,
    echo,
    echo_data,
    output_file,
    progress,
    progress_done,
    progress_due,
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
    """--format, --out, --columns and --spreadsheet-safe, for the commands that print a table (see _emit)."""
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


def _scoped(wh, suites, one_off, db_url) -> str:
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


def interval_settings(fixed_papers: bool, joint_ranks: bool = False):
    """The statistics --fixed-papers and --joint-ranks ask for (the rest from the environment)."""
    import dataclasses

    from inquitree.warehouse import Settings

    return dataclasses.replace(
        Settings.from_env().about("these" if fixed_papers else "papers"), joint_ranks=joint_ranks
    )


@click.group()
def warehouse() -> None:
    """The DuckDB warehouse: an incremental projection of the event store."""


def _progress(n: int, pos: int) -> None:
    progress(f"  ... {n:,} events loaded (position {pos:,})")


@warehouse.command()
@db_option
@warehouse_option
@click.option(
    "--trees",
    "trees_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Extra directory of tree files (for episodes on trees that are not shipped).",
)
@click.option(
    "--prices",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Price table (default: $INQUITREE_PRICES, else ~/.config/inquitree/prices.json, else none).",
)
@registry_option
@click.option(
    "--memory",
    default=None,
    metavar="SIZE",
    help="Memory the warehouse may use, e.g. 320MB (the default) or 2GB; the sync's peak follows it, "
    "not the log's size. Default: $INQUITREE_WAREHOUSE_MEMORY or 320MB.",
)
def sync(db_url, warehouse_path, trees_dirs, prices, registry, memory) -> None:
    """Load the events recorded since the last sync."""
    from pathlib import Path

    from inquitree.warehouse import kept_only_if_used

    with kept_only_if_used(warehouse_path, memory=memory) as wh:
        r = wh.sync(
            db_url,
            progress=_progress,
            trees_dirs=list(trees_dirs),
            prices=Path(prices) if prices else None,
            registry=Path(registry) if registry else None,
        )
        progress_done()
        echo(f"{wh.path}: {r.events:,} new events in {r.seconds:.2f} s; checkpoint at position {r.last_position:,}")


@warehouse.command()
@db_option
@warehouse_option
@click.option("--trees", "trees_dirs", multiple=True, type=click.Path(file_okay=False))
@registry_option
def rebuild(db_url, warehouse_path, trees_dirs, registry) -> None:
    """Delete the warehouse and load every event again."""
    from pathlib import Path

    from inquitree.warehouse import default_warehouse_path
    from inquitree.warehouse import rebuild as do_rebuild

    path = warehouse_path or default_warehouse_path()
    r = do_rebuild(
        path, db_url, progress=_progress, trees_dirs=list(trees_dirs), registry=Path(registry) if registry else None
    )
    progress_done()
    echo(f"{path}: rebuilt from {r.events:,} events in {r.seconds:.2f} s")


@warehouse.command()
@warehouse_option
@click.option("--parquet", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write.")
def export(warehouse_path, out_dir) -> None:
    """Write every warehouse table as a Parquet file."""
    with _existing(warehouse_path) as wh:
        for p in wh.export_parquet(out_dir):
            echo(str(p))


MAX_SQL_FILE_BYTES = 1_000_000  # one statement
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


def _emit(
    df, fmt: str, out: str | None, columns: str | None = None, safe: bool = False, said: set[str] | None = None
) -> None:
    """Print or write ``df`` in ``fmt``; a terminal table with its methods and warnings under it
    (``said``: note lines an earlier table of the same output printed, not repeated)."""
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
    if fmt == "table" and not out and not columns and df.height and "judge_id" in df.columns:
        # One table per judge, its id above it: the judge is what tells two rows of one agent apart,
        # and as the last, longest column it was the one an 80-column screen dropped.
        said = set() if said is None else said
        for k, judge in enumerate(dict.fromkeys(df["judge_id"].to_list())):
            echo(("" if k == 0 else "\n") + (f"judge {judge}:" if judge is not None else "no judge:"))
            _emit(df.filter(pl.col("judge_id").eq_missing(judge)).drop("judge_id"), fmt, out, columns, said=said)
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

        width = _note_width()
        table, above, notes = (df, [], None) if out or columns else readable(df, width)
        shown = table if out or columns else _fitting(table)
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


def _note_width() -> int:
    """The width notes under a terminal table wrap to."""
    return screen_width()


def _say_once(lines: list[str], said: set[str] | None) -> None:
    """Print ``lines``, but those in ``said`` (printed under an earlier table), and remember them;
    when some were left out, one line points to them, so that every table says where its notes are."""
    again = [line for line in lines if said is not None and line in said and not line.startswith("  ")]
    for line in lines:
        if said is None or line not in said:
            echo(line)
        if said is not None:
            said.add(line)
    if again:
        echo(f"(and {len(again)} note(s) as under the first table)")


def _fitting(df):
    """The leading columns of ``df`` that fit the terminal's width as polars draws them."""
    import shutil

    import polars as pl

    width = shutil.get_terminal_size((120, 24)).columns
    text_cell = TEXT_CELL if width >= 100 else NARROW_CELL  # an 80-column screen keeps a number, not a title's end
    # Words are shortened to fit; an id is only useful whole, and so is a number with its interval.
    cuttable = {
        name
        for name in df.columns
        if df[name].dtype == pl.Utf8
        and not name.endswith("episode_id")
        and df[name].head(200).drop_nulls().str.contains(r"[A-Za-z]").any()
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


@click.command()
@click.argument("name", required=False)
@warehouse_option
@output_options
@click.option("--list", "list_", is_flag=True, help="List the queries with their first comment line.")
@fixed_papers_option
@joint_ranks_option
@scope_options
@db_option
def query(
    name, warehouse_path, fmt, out, columns, spreadsheet_safe, list_, fixed_papers, joint_ranks, suites, one_off, db_url
) -> None:
    """Run queries/NAME.sql against the warehouse, as last loaded by `inquitree warehouse sync`
    (this command does not sync; it says when the store holds events the warehouse has not loaded)."""
    from inquitree.warehouse import QUERIES_DIR, query_names

    if list_ or not name:
        for q in query_names():
            first = (QUERIES_DIR / f"{q}.sql").read_text().splitlines()[0].removeprefix("-- ")
            echo(f"{q:28} {first}")
        return
    with _existing(
        warehouse_path, read_only=True, settings=interval_settings(fixed_papers, joint_ranks)
    ) as wh:  # `sql`'s sandbox
        _scoped(wh, suites, one_off, db_url)
        _emit(wh.query(name), fmt, out, columns, spreadsheet_safe)


@click.command()
@click.argument("agents", nargs=-1, required=True)
@click.option(
    "--one-off/--suites-only",
    default=False,
    show_default=True,
    help="Also pair episodes played outside a suite (by their order in the cell).",
)
@click.option("--pairs", "show_pairs", is_flag=True, help="List the pairs of episodes each row was computed from.")
@warehouse_option
@output_options
@fixed_papers_option
def compare(agents, one_off, show_pairs, warehouse_path, fmt, out, columns, spreadsheet_safe, fixed_papers) -> None:
    """Paired comparison of two or more agents (B - A for every pair, in the order given).

    A pair is two episodes of the same suite, tree, randomness level, judge and run; episodes
    played outside a suite only with --one-off. Per pair of agents, headline metric, judge and
    level: both means, the difference B - A, the sign-flip test of the papers' mean differences
    (exact up to 20 papers) with the interval that inverts it (so the two never disagree), the
    smallest p the papers allow (p_min: with 5 papers or fewer no difference can reach 5%), and
    Holm's adjustment within each family, one metric at one level and judge over the pairs of agents
    (p_holm; holm_family is the family's size). Methods and warnings are printed under
    the table (queries/compare.sql; docs/statistics.md). Agents are named as in the warehouse's
    `agent` column (see `inquitree query table2_leaderboard`).
    """
    from inquitree.warehouse import PAIR_COLUMNS, WarehouseError

    if len(set(agents)) < 2:
        raise click.UsageError("name at least two different agents")
    with _existing(warehouse_path, read_only=True, settings=interval_settings(fixed_papers)) as wh:
        known = {r[0] for r in wh.con.execute("SELECT DISTINCT agent FROM episodes").fetchall()}
        for name in agents:
            if name not in known:
                raise WarehouseError(f"no episodes of agent {name!r}; agents: {', '.join(sorted(known)) or '(none)'}")
        df = wh.query("compare", {"agents": list(dict.fromkeys(agents)), "one_off": one_off})
    if df.is_empty() or not df["paired_cells"].max():
        raise WarehouseError(
            f"no cell was run by two of {', '.join(map(repr, agents))}: a pair needs the same suite, tree, "
            "randomness level, judge and run"
            + ("" if one_off else " (--one-off also pairs episodes played outside a suite)")
        )
    rows = df.drop(PAIR_COLUMNS)  # the table; the pairs are listed under it (--pairs), or kept in CSV/JSON
    pairs = list(dict.fromkeys(zip(rows["agent_a"].to_list(), rows["agent_b"].to_list(), strict=True)))
    if fmt == "table" and not out and not columns and len(pairs) > 1:
        # One table per pair of agents: in one table the two agent columns push the difference,
        # p and Holm's p off an 80-column screen.
        said: set[str] = set()
        for k, (a, b) in enumerate(pairs):
            echo(("" if k == 0 else "\n") + f"B - A = {b} - {a}:")
            pair = rows.filter((rows["agent_a"] == a) & (rows["agent_b"] == b)).drop("agent_a", "agent_b")
            _emit(pair, fmt, out, columns, said=said)
    else:
        _emit(rows if fmt == "table" else df, fmt, out, columns, spreadsheet_safe)
    if fmt == "table" and not out and not columns:
        from inquitree.warehouse import wrapped

        sizes = sorted(set(rows.filter(rows["role"] == "headline")["holm_family"].to_list()))
        text = (
            "Holm's families: the conclusion score is the headline, adjusted over the "
            f"{' or '.join(map(str, sizes)) or 'no'} comparison(s) of one level; the other metrics are "
            "exploratory, each adjusted in a family of its own (docs/statistics.md)"
        )
        echo("\n".join(wrapped(text, _note_width())))
    if show_pairs and fmt == "table" and not out:
        seen: set[tuple] = set()
        for row, these in zip(rows.iter_rows(named=True), df["pairs"].to_list(), strict=True):
            key = (row["agent_a"], row["agent_b"], row["judge_id"], row["randomness"], tuple(these or ()))
            if key in seen:
                continue
            seen.add(key)
            echo(f"pairs of {row['agent_a']} ~ {row['agent_b']}, judge {row['judge_id']}, level {row['randomness']}:")
            for pair in these or ():
                echo(f"  {pair}")


@click.command()
@click.option(
    "--difference", type=FINITE, required=True, help="The true difference B - A to detect (in the metric's units)."
)
@click.option("--agents", nargs=2, default=None, metavar="A B", help="A pilot: estimate the spreads from their pairs.")
@click.option(
    "--metric",
    type=click.Choice(["conclusion_score", "coverage", "steps", "redo_frequency"]),
    default="conclusion_score",
    show_default=True,
)
@click.option("--randomness", "-a", type=int, default=0, show_default=True, help="The pilot's level.")
@click.option("--one-off", is_flag=True, help="Let the pilot pair episodes played outside a suite.")
@click.option("--sd-between", type=FINITE, default=None, help="SD of the papers' true differences (no pilot).")
@click.option(
    "--sd-within", type=FINITE, default=None, help="SD of one pair's difference around its paper's (no pilot)."
)
@click.option("--runs", default="1,2,3,5", show_default=True, help="Pairs per paper to plan for, comma-separated.")
@click.option("--power", "target", type=FINITE, default=0.8, show_default=True)
@click.option("--simulations", type=int, default=2000, show_default=True, help="Simulated campaigns per paper count.")
@click.option(
    "--comparisons",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="The Holm family the comparison will belong to (compare's holm_family: the pairs of agents compared on "
    "the headline metric at one level, 3 for three agents); plans for p <= 0.05 / comparisons.",
)
@click.option(
    "--missing",
    type=FiniteFloat(0, 1, max_open=True),
    default=0.0,
    show_default=True,
    help="Share of papers expected to lose one run (failed or cut-short cells).",
)
@warehouse_option
def power(
    difference,
    agents,
    metric,
    randomness,
    one_off,
    sd_between,
    sd_within,
    runs,
    target,
    simulations,
    comparisons,
    missing,
    warehouse_path,
):
    """How many papers (and runs per paper) a paired comparison needs to detect DIFFERENCE with the
    given power at the 5% level: from a pilot of two agents in the warehouse (--agents A B), or from
    stated spreads (--sd-between, --sd-within). Simulated with the test `compare` prints (the
    sign-flip test over papers), normal differences; 5 papers or fewer can never reach p < 0.05.
    A plan from a pilot also says how many papers it needs if the pilot understated the spreads
    (their 80% upper bound from the pilot's papers): a pilot of a few papers is itself uncertain."""
    from inquitree import stats
    from inquitree.warehouse import WarehouseError

    try:
        plan = sorted({int(r) for r in runs.split(",") if r.strip()})
    except ValueError:
        raise click.BadParameter(f"{runs!r}: expected whole numbers such as 1,2,3", param_hint="--runs") from None
    if not plan or plan[0] < 1:
        raise click.BadParameter(f"{runs!r}: at least one run per paper", param_hint="--runs")
    if not 0 < target < 1:
        raise click.BadParameter(f"{target}: a share between 0 and 1", param_hint="--power")
    source, pilot_papers = "stated", 0
    if agents:
        if sd_between is not None or sd_within is not None:
            raise click.UsageError("--agents estimates the spreads: give either a pilot or --sd-between/--sd-within")
        sd_between, sd_within, source, pilot_papers = _pilot_spreads(
            agents, metric, randomness, one_off, warehouse_path
        )
    elif sd_between is None or sd_within is None:
        raise click.UsageError("give a pilot (--agents A B) or both --sd-between and --sd-within")
    if difference == 0:
        raise click.BadParameter(
            "0 cannot be detected: name the smallest difference worth finding", param_hint="--difference"
        )
    if sd_between < 0 or sd_within < 0:
        raise click.BadParameter("a standard deviation is at least 0", param_hint="--sd-between/--sd-within")
    if sd_between + sd_within == 0:
        raise WarehouseError(
            (f"the pilot's paired differences do not vary ({source})" if agents else "both spreads are 0")
            + ": with no spread any difference is certain, and no number of papers can be planned from it. "
            "Give the spreads you expect (--sd-between S --sd-within W), or a pilot whose agents differ "
            "from paper to paper."
        )
    echo(
        f"difference {difference:g} in {metric}; spreads ({source}): between papers {sd_between:.4g}, "
        f"within a paper {sd_within:.4g}"
    )
    plans = [("", sd_between, sd_within)]
    if pilot_papers:
        cautious_between, cautious_within, factor = stats.conservative_spreads(sd_between, sd_within, pilot_papers)
        why = f"if the spreads are {factor:.2f}x the pilot's (their 80% upper bound from {pilot_papers} papers):"
        plans.append((why, cautious_between, cautious_within))
    if comparisons > 1 or missing:
        echo(
            f"planned for a Holm family of {comparisons} comparison(s) (p <= {stats.ALPHA / comparisons:.3g})"
            + (f", {100 * missing:.3g}% of papers losing a run" if missing else "")
        )
    for heading, between, within in plans:
        if heading:
            echo(heading)
        method = _print_plan(difference, between, within, plan, target, simulations, comparisons, missing)
    echo(f"method: {method}")


def _pilot_spreads(
    agents, metric: str, randomness: int, one_off: bool, warehouse_path
) -> tuple[float, float, str, int]:
    """The spreads between and within papers estimated from a pilot of two agents' pairs, with a
    note on where they come from and the pilot's number of papers."""
    from inquitree import stats
    from inquitree.warehouse import WarehouseError

    with _existing(warehouse_path, read_only=True) as wh:
        df = wh.query("compare", {"agents": list(agents), "one_off": one_off})
    df = df.filter((df["metric"] == metric) & (df["randomness"] == randomness) & (df["paired_cells"] > 0))
    if df.is_empty():
        raise WarehouseError(
            f"no pair of {agents[0]!r} and {agents[1]!r} at level {randomness} for {metric}: a pilot needs both "
            "agents on the same suite cells" + ("" if one_off else " (--one-off pairs episodes outside a suite)")
        )
    row = df.row(0, named=True)
    between, within, note = stats.spreads(row["pair_trees"], row["pair_differences"])
    source = f"pilot: {row['papers']} papers, {row['paired_cells']} pairs, judge {row['judge_id']}; {note}"
    return between, within, source, int(row["papers"])


def _print_plan(difference, between, within, plan, target, simulations, comparisons, missing) -> str:
    """One line per number of pairs per paper: the papers needed, searched with progress lines.
    Returns the method's words."""
    from inquitree import stats

    due = progress_due()
    method = ""
    for r in plan:

        def searching(papers: int, reached: float, r=r) -> None:
            if due(False):
                progress(f"  {r} pair(s) per paper: simulated {papers} papers (power {reached:.2f}) ...")

        found = stats.papers_needed(
            difference,
            between,
            within,
            runs=r,
            power=target,
            simulations=simulations,
            progress=searching,
            comparisons=comparisons,
            missing=missing,
        )
        progress_done()
        method = found.method
        # the simulated power's own standard error: a share of `simulations` campaigns
        share = found.power if found.power is not None else float("nan")
        error = (share * (1 - share) / simulations) ** 0.5
        if found.papers is None:
            echo(f"  {r} pair(s) per paper: more than 200 papers (power {found.power:.2f} ± {error:.2f} at 200)")
        else:
            echo(
                f"  {r} pair(s) per paper: {found.papers} papers (simulated power {found.power:.3f} ± {error:.3f},"
                f" {simulations} simulations)"
            )
    return method


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
    with _existing(warehouse_path, read_only=True) as wh:
        _emit(wh.sql(text, one_statement=True), fmt, out, columns, spreadsheet_safe)


def _existing(warehouse_path: str | None, read_only: bool = False, settings=None):
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


@click.command()
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write.")
@warehouse_option
@db_option
@click.option("--sync/--no-sync", default=True, show_default=True, help="Sync the warehouse from the store first.")
@click.option("--max-episodes", default=200, show_default=True, help="Episode pages to write (the most recent).")
@registry_option
@fixed_papers_option
@joint_ranks_option
@scope_options
def report(
    out_dir, warehouse_path, db_url, sync, max_episodes, registry, fixed_papers, joint_ranks, suites, one_off
) -> None:
    """Write an HTML report: leaderboard, the paper's figures, and an episode viewer."""
    from pathlib import Path

    from inquitree.warehouse import kept_only_if_used, write_report

    if registry and not sync:
        raise click.UsageError("--registry is read by the sync: it needs --sync")
    with kept_only_if_used(warehouse_path, settings=interval_settings(fixed_papers, joint_ranks)) as wh:
        if sync:
            r = wh.sync(db_url, progress=_progress, registry=Path(registry) if registry else None)
            progress_done()
            echo(f"synced {r.events:,} new events", err=True)
        scope = _scoped(wh, suites, one_off, db_url)
        index = write_report(wh, out_dir, max_episodes=max_episodes, scope=scope)
    echo(f"wrote {index}")
