"""What a table's numbers rest on, as lines of text: every distinct interval method once and every
row's warning, so that the terminal (``cli/tables.py``), the report and the viewer print them
under the table, where a reader sees them, rather than in a column a narrow screen hides."""

from __future__ import annotations

import textwrap


def wrapped(text: str, width: int | None) -> list[str]:
    """A note as the lines a terminal shows: wrapped to ``width`` with the continuation indented
    (None: one line)."""
    return textwrap.wrap(text, width, subsequent_indent="  ") if width else [text]


def table_notes(df, width: int | None = 100) -> list[str]:
    """Lines for the ``*method`` columns (each distinct value once, with how many rows use it when
    the rows differ) and the ``*warning`` columns (each warning once, with the leading values of
    the rows it is about), wrapped to ``width`` (None: one line each)."""
    keys = [c for c in df.columns[:5] if not c.endswith(NOTE_COLUMNS) and not df[c].dtype.is_float()][:4]
    lines: list[str] = []

    def add(text: str) -> None:
        lines.extend(wrapped(text, width))

    for column in [c for c in df.columns if c.endswith(("method", "validity"))]:
        values = [v for v in df[column].to_list() if v]
        for value in dict.fromkeys(values):
            count = values.count(value)
            add(f"{column}: {value}" + (f" ({count} rows)" if count > 1 and len(values) > count else ""))
    for column in [c for c in df.columns if c.endswith("warning")]:
        rows: dict[str, list[str]] = {}
        for row in df.select(keys + [column]).iter_rows():
            if row[-1]:
                rows.setdefault(row[-1], []).append(" / ".join(str(v) for v in row[:-1] if v is not None))
        for text, where in rows.items():
            about = "every row" if len(where) == df.height > 1 else "; ".join(where)
            add(f"WARNING [{about}]: {text}")
    return lines


# Columns said under a table rather than in it: how its intervals were made, what not to trust, and
# how well the instrument that read its figures reads (warehouse/instrument.py).
NOTE_COLUMNS = ("method", "warning", "validity")


# -- the table a person reads: estimates with their intervals in one cell, methods tied to rows -----
HIDDEN = ("p_min", "holm_family", "paired_cells", "only_a", "only_b", "pair_trees", "pair_differences", "pairs")


def readable(df, width: int | None = 100, last_columns: tuple[str, ...] = ()):
    """``(table, above, below)``: ``df`` as a person reads it: each estimate with its 95% interval in one cell
    (``0.93 [0.71, 1.00]``), each rank with its interval (``1 [1, 2]``), a row number first; the
    interval's bounds, standard errors (which belong to one method only) and bookkeeping columns
    left out; ``above``: what every row shares (a column with one value), said once; ``below``: the
    methods and warnings, as lines that name the rows they are about. ``--columns`` or
    ``--format csv|json`` give every column as the query returns it. ``last_columns``: shown after
    the numbers (an id too long to leave room for them)."""
    import polars as pl

    columns = list(df.columns)
    triples = [c for c in columns if f"{c}_ci_low" in columns and f"{c}_ci_high" in columns]
    out = {"#": [str(i + 1) for i in range(df.height)]}
    dropped = {f"{c}_{s}" for c in triples for s in ("ci_low", "ci_high", "se")} | set(HIDDEN)
    if {"rank", "rank_low", "rank_high"} <= set(columns):
        dropped |= {"rank_low", "rank_high"}
    if "failed_verdicts" in columns and not any(df["failed_verdicts"].to_list()):
        dropped.add("failed_verdicts")  # shown beside the score only when a verdict failed
    if {"coverage", "own_coverage"} <= set(triples):  # coverage never shown without the agent's own part
        dropped |= {"coverage", "own_coverage", "own_coverage_ci_low", "own_coverage_ci_high"}
        own = [None if v is None else f"{v:.2f}" for v in df["own_coverage"].to_list()]
        out[COVERAGE] = [
            c if not c else f"{c} ({o or 'none'})"
            for c, o in zip(
                _with_interval(
                    df["coverage"].to_list(), df["coverage_ci_low"].to_list(), df["coverage_ci_high"].to_list()
                ),
                own,
                strict=True,
            )
        ]
    if {"mean_a", "mean_b"} <= set(columns):  # both agents' means in one cell, A's first as in B - A
        dropped |= {"mean_a", "mean_b"}
        out[MEANS] = [
            "" if a is None and b is None else f"{_number(a)} → {_number(b)}"
            for a, b in zip(df["mean_a"].to_list(), df["mean_b"].to_list(), strict=True)
        ]
    for c in columns:
        if c in dropped or c.endswith(NOTE_COLUMNS):
            continue
        if c in triples:
            out[c] = _with_interval(df[c].to_list(), df[f"{c}_ci_low"].to_list(), df[f"{c}_ci_high"].to_list())
        elif c == "rank" and "rank_low" in columns:
            out[c] = [
                "" if r is None else f"{r} [{lo}, {hi}]" if lo is not None else str(r)
                for r, lo, hi in zip(
                    df["rank"].to_list(), df["rank_low"].to_list(), df["rank_high"].to_list(), strict=True
                )
            ]
        elif c.startswith("p_") or c == "p_value":
            out[c] = ["" if v is None else f"{v:.3g}" if v >= 0.001 else "<0.001" for v in df[c].to_list()]
        elif df[c].dtype.is_float():
            out[c] = ["" if v is None else f"{v:.{_digits([v])}f}" for v in df[c].to_list()]
        else:
            out[c] = ["" if v is None else str(v) for v in df[c].to_list()]
    # A reader's order: who and what first, then the headline numbers, then the rest.
    last = [c for c in out if c in LAST or c in last_columns or c.endswith(LAST_SUFFIXES)]
    first = [
        c
        for c in out
        if c in IDENTITY or (c != "#" and c not in NUMBERS_FIRST and c not in last and not _numeric(df, c))
    ]
    order = ["#", *first, *[c for c in NUMBERS_FIRST if c in out]]
    order += [c for c in out if c not in order and c not in last] + last
    table = pl.DataFrame({SHORT.get(c, c): out[c] for c in order})
    # A column with one value in every row is said once, above the notes, not repeated in each row;
    # one empty in every row (a rank where no row has a score) is left out, the headline score kept.
    empty = [c for c in table.columns[1:] if c != NUMBERS_FIRST[0] and not any(table[c].to_list())]
    same = [
        c
        for c in table.columns[1:]
        if table.height > 1 and c not in NUMBERS_FIRST and c not in empty and table[c].n_unique() == 1
    ]
    above = [f"{c} (every row): {table[c][0]}" for c in same]
    return table.drop(same + empty), above, row_notes(df, width)


# Both agents' means of a comparison, in one cell: two columns cost an 80-column screen one of them.
MEANS = "means A → B"
# Coverage and, in brackets, the agent's own coverage (reached by its own moves, not forced): a
# constant agent's coverage is the oracle's, and the column that told them apart was the one cut.
COVERAGE = "coverage (own)"


def _number(v: float | None) -> str:
    return "none" if v is None else f"{v:.{_digits([v])}f}"


# Headers whose values are short: the table a person reads names them shortly (the randomness
# level a is one digit, and its ten-letter header cost an 80-column screen the Holm's p column).
SHORT = {
    "randomness": "level",
    "lower_bound": "3n",
    "upper_bound": "n(2H+3)",
    "conclusion_score_corrected": "corrected",
}
# The numbers a reader looks for first, in this order; what is long and rarely read goes last.
NUMBERS_FIRST = (
    "conclusion_score",
    "conclusion_score_corrected",
    COVERAGE,
    "failed_verdicts",
    "difference",
    "rank",
    "p_value",
    "p_holm",
    MEANS,
    "mean_steps",
    "lower_bound",
    "upper_bound",
    "share_within_bounds",
    "cost_usd",  # the costs query's: what was spent, before how
    "calls",
    "input_tokens",
    "output_tokens",
)
LAST = ("role", "judge_id", "judge", "contradicting_examples", "cells")  # cells: said in full in the notes
LAST_SUFFIXES = ("_why", "_by")  # a row's explanation in words: read after its numbers
IDENTITY = ("agent", "agent_a", "agent_b", "metric", "randomness", "tree_id", "split", "model")


def _numeric(df, column: str) -> bool:
    return column in df.columns and (df[column].dtype.is_numeric() or f"{column}_ci_low" in df.columns)


def _digits(values: list[float]) -> int:
    top = max((abs(v) for v in values), default=0.0)
    return 1 if top >= 10 else 2


def _with_interval(estimates: list, lows: list, highs: list) -> list[str]:
    cells = []
    for e, lo, hi in zip(estimates, lows, highs, strict=True):
        digits = _digits([v for v in (e, lo, hi) if v is not None])  # per row: a column may mix metrics
        if e is None:
            cells.append("")
        elif lo is None or hi is None:
            cells.append(f"{e:.{digits}f} [no interval]")
        else:
            cells.append(f"{e:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]")
    return cells


def row_notes(df, width: int | None = 100) -> list[str]:
    """The methods and warnings of a table, each once, with the rows (numbered from 1, as the
    readable table's ``#`` column) it is about."""
    lines: list[str] = []

    def add(text: str) -> None:
        lines.extend(wrapped(text, width))

    for column in [c for c in df.columns if c.endswith(NOTE_COLUMNS)]:
        rows: dict[str, list[int]] = {}
        for i, value in enumerate(df[column].to_list(), start=1):
            if value:
                rows.setdefault(value, []).append(i)
        label = "WARNING" if column.endswith("warning") else column.replace("_", " ")
        for text, where in rows.items():
            about = "every row" if len(where) == df.height > 1 else _rows(where)
            add(f"{label} ({about}): {text}")
    return lines


def _rows(numbers: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``rows 1-3, 5``."""
    spans: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(f"{start}-{prev}" if prev > start else f"{start}")
        if n is not None:
            start = prev = n
    return ("row " if len(numbers) == 1 else "rows ") + ", ".join(spans)
