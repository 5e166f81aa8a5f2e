"""How well the instrument behind a table's figures reads, as SQL functions the queries call:
``judge_validity(judge_id)`` and ``matcher_validity(embedder, tau, tau_study, match_rule)`` give the measured
agreement of a judge and the measured rates of a matcher (``inquitree.core.instrument``: the
shipped record and a lab's own), or "unmeasured" (DECISIONS #32); ``moves_reading`` and
``conclusions_reading`` the same instruments measured on the table's own labelled episodes
(``inquitree label``), NULL where none is labelled. A table's ``*_validity``
columns are printed under it as notes (``notes.py``), beside its methods and warnings."""

from __future__ import annotations

import pyarrow as pa

from inquitree.core.instrument import conclusions_reading, judge_reading, matcher_reading, moves_reading


def _lists(function, arity: int):
    """An Arrow UDF over lists: each row's lists as Python lists (a NULL list as empty), then its count."""
    import inspect

    def run(*columns):
        rows = zip(*(c.to_pylist() for c in columns), strict=True)
        return pa.array([function(*[x if x is not None else [] for x in row[:-1]], row[-1] or 0) for row in rows])

    positional = inspect.Parameter.POSITIONAL_ONLY
    run.__signature__ = inspect.Signature([inspect.Parameter(f"arg{k}", positional) for k in range(arity)])  # type: ignore[attr-defined]
    return run


def register(con) -> None:
    """Make the instrument's readings callable on a DuckDB connection."""
    con.create_function(
        "judge_validity", judge_reading, ["VARCHAR"], "VARCHAR", null_handling="special", side_effects=False
    )
    con.create_function(
        "matcher_validity",
        matcher_reading,
        ["VARCHAR", "DOUBLE", "DOUBLE", "VARCHAR"],
        "VARCHAR",
        null_handling="special",
        side_effects=False,
    )
    con.create_function(
        "moves_reading",
        _lists(moves_reading, 3),
        ["VARCHAR[]", "BOOLEAN[]", "INTEGER"],
        "VARCHAR",
        type="arrow",
        null_handling="special",
        side_effects=False,
    )
    con.create_function(
        "conclusions_reading",
        _lists(conclusions_reading, 4),
        ["VARCHAR[]", "DOUBLE[]", "DOUBLE[]", "INTEGER"],
        "VARCHAR",
        type="arrow",
        null_handling="special",
        side_effects=False,
    )
