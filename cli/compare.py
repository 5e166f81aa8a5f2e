"""``inquitree compare`` and ``inquitree power``: paired differences between agents, and how many
papers and runs a comparison needs."""

from __future__ import annotations

import click

from inquitree.cli.common import (
    FINITE,
    FiniteFloat,
    echo,
    progress,
    progress_done,
    progress_due,
    say,
)
from inquitree.cli.tables import (
    complete_case_option,
    emit,
    existing,
    fixed_papers_option,
    interval_settings,
    note_width,
    output_options,
    warehouse_option,
)


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
@complete_case_option
def compare(
    agents, one_off, show_pairs, warehouse_path, fmt, out, columns, spreadsheet_safe, fixed_papers, complete_case
) -> None:
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
    with existing(
        warehouse_path, read_only=True, settings=interval_settings(fixed_papers, complete_case=complete_case)
    ) as wh:
        known = {r[0] for r in wh.con.execute("SELECT DISTINCT agent FROM episodes").fetchall()}
        for name in agents:
            if name not in known:
                raise WarehouseError(f"no episodes of agent {name!r}; agents: {', '.join(sorted(known)) or '(none)'}")
        wanted = {"agents": list(dict.fromkeys(agents)), "one_off": one_off}
        # the pairs themselves (two ids each): listed with --pairs, kept in CSV, JSON and files
        df = wh.query("compare", {**wanted, "compare_pairs": bool(show_pairs or fmt != "table" or out)})
    if df.is_empty() or not df["paired_cells"].max():
        raise WarehouseError(
            f"no cell was run by two of {', '.join(map(repr, agents))}: a pair needs the same suite, tree, "
            "randomness level, judge and run"
            + ("" if one_off else " (--one-off also pairs episodes played outside a suite)")
        )
    rows = df.drop(PAIR_COLUMNS)  # the table; the pairs are listed under it (--pairs), or kept in CSV/JSON
    if fmt == "table" and not out and not columns:
        rows = _without_unpaired(rows)
    pairs = list(dict.fromkeys(zip(rows["agent_a"].to_list(), rows["agent_b"].to_list(), strict=True)))
    if fmt == "table" and not out and not columns and len(pairs) > 1:
        # One table per pair of agents: in one table the two agent columns push the difference,
        # p and Holm's p off an 80-column screen.
        said: set[str] = set()
        for k, (a, b) in enumerate(pairs):
            echo(("" if k == 0 else "\n") + f"B - A = {b} - {a}:")
            pair = rows.filter((rows["agent_a"] == a) & (rows["agent_b"] == b)).drop("agent_a", "agent_b")
            emit(pair, fmt, out, columns, said=said)
    else:
        emit(rows if fmt == "table" else df, fmt, out, columns, spreadsheet_safe)
    if fmt == "table" and not out and not columns:
        from inquitree.warehouse import wrapped

        sizes = sorted(set(rows.filter(rows["role"] == "headline")["holm_family"].to_list()))
        text = (
            "Holm's families: the conclusion score is the headline, adjusted over the "
            f"{' or '.join(map(str, sizes)) or 'no'} comparison(s) of one level; the other metrics are "
            "exploratory, each adjusted in a family of its own (docs/statistics.md)"
        )
        echo("\n".join(wrapped(text, note_width())))
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


def _without_unpaired(rows):
    """The table's rows but those of a judge that scored no cell for both agents of a pair (one
    whose verdicts failed for one agent's episodes): a table of empty cells said nothing; a line
    says why instead."""
    import polars as pl

    keys = ["judge_id", "agent_a", "agent_b"]
    groups = rows.group_by(keys, maintain_order=True).agg(
        pl.col("paired_cells").max(), pl.col("only_a").max(), pl.col("only_b").max()
    )
    empty = groups.filter(pl.col("paired_cells") == 0)
    for g in empty.iter_rows(named=True):
        say(
            f"judge {g['judge_id']}: no cell of {g['agent_a']} and {g['agent_b']} has its scores for both: it scored "
            f"{g['only_a']} cell(s) of {g['agent_a']} alone and {g['only_b']} of {g['agent_b']} alone "
            "(`inquitree query judge_flags` says why verdicts failed; --format csv keeps its rows)"
        )
    return rows.join(empty.select(keys), on=keys, how="anti", nulls_equal=True) if empty.height else rows


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

    with existing(warehouse_path, read_only=True) as wh:
        df = wh.query("compare", {"agents": list(agents), "one_off": one_off})  # its pairs: the pilot reads them
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
