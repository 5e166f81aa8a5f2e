"""How well the instrument behind a table's figures reads, as SQL functions the queries call:
``judge_validity(judge_id)`` and ``matcher_validity(embedder, tau, tau_study, match_rule)`` give the measured
agreement of a judge and the measured rates of a matcher (``inquitree.core.instrument``: the
shipped record and a lab's own), or "unmeasured" (DECISIONS #32). A table's ``*_validity``
columns are printed under it as notes (``notes.py``), beside its methods and warnings."""

from __future__ import annotations

from inquitree.core.instrument import judge_reading, matcher_reading


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
