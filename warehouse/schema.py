"""The warehouse's tables: raw events, one typed table per event type, dimensions.

Layers (dbt-style): ``raw_events`` lists every event (position, stream, type, time; the
payload itself stays in the store, and everything analyses need is in the typed tables); the ``ev_*``
tables hold each event type's fields as typed columns, parsed from the JSON
once, at load; the dimensions ``trees``, ``tree_item_results`` and
``model_registry`` come from the tree files and the model registry; the
analyses in ``queries/*.sql`` read only these.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from inquitree.warehouse.errors import WarehouseError

WAREHOUSE_ENV = "INQUITREE_WAREHOUSE"
MEMORY_ENV = "INQUITREE_WAREHOUSE_MEMORY"


def default_warehouse_path() -> str:
    return os.environ.get(WAREHOUSE_ENV) or "inquitree.duckdb"


def memory_bytes(text: str) -> int:
    """'512MB', '2GB', '1.5GiB' -> bytes; a clear error for anything else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(KB|MB|GB|KiB|MiB|GiB)\s*", text, flags=re.I)
    if not m:
        raise WarehouseError(f"${MEMORY_ENV}={text!r}: expected a size such as 512MB or 2GB")
    unit = m.group(2).lower()
    scale = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}[unit]
    value = int(float(m.group(1)) * scale)
    if value < 64 * 10**6:
        raise WarehouseError(f"${MEMORY_ENV}={text!r}: at least 64MB")
    return value


COMMON = [
    ("global_position", "BIGINT"),
    ("stream_id", "VARCHAR"),
    ("episode_id", "VARCHAR"),
    ("stream_version", "INTEGER"),
    ("recorded_at", "TIMESTAMP"),
]

# a model call's token usage and latency, as AgentReplied, JudgeVerdict and ControlAnswered record them
CALL_COLUMNS = [
    ("input_tokens", "BIGINT", "usage.input"),
    ("cached_input_tokens", "BIGINT", "usage.cached_input"),
    ("cache_write_tokens", "BIGINT", "usage.cache_write"),
    ("output_tokens", "BIGINT", "usage.output"),
    ("latency_ms", "DOUBLE", "latency_ms"),
    ("cache_hit", "BOOLEAN", "cache_hit"),
]

# event type -> (table, [(column, SQL type, JSON path under the payload)])
TYPED: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "EpisodeStarted": (
        "ev_episode_started",
        [
            ("tree_id", "VARCHAR", "tree_id"),
            ("tree_hash", "VARCHAR", "tree_hash"),
            ("n_subtopics", "INTEGER", "n_subtopics"),
            ("tau", "DOUBLE", "params.tau"),
            ("tau_study", "DOUBLE", "params.tau_study"),  # NULL: tau at both states (#1)
            ("match_rule", "VARCHAR", "params.match_rule.name"),  # NULL: the paper's rule (core/game/matching.py)
            ("match_rule_version", "INTEGER", "params.match_rule.version"),
            ("max_hints", "INTEGER", "params.max_hints"),
            ("max_turns", "INTEGER", "params.max_turns"),
            ("randomness", "INTEGER", "params.randomness"),
            ("seed", "BIGINT", "params.seed"),
            ("draw_rule", "INTEGER", "params.draw_rule"),  # NULL: rule 1, recorded before rules had numbers
            ("embedder", "VARCHAR", "params.embedder"),
            ("template_set", "VARCHAR", "params.template_set"),
            ("agent_kind", "VARCHAR", "agent.kind"),
            ("agent_model", "VARCHAR", "agent.model"),
            ("agent_label", "VARCHAR", "agent.label"),
            ("max_reasks", "INTEGER", "params.max_reasks"),
            ("judge_kind", "VARCHAR", "judge.kind"),
            ("code_version", "VARCHAR", "code_version"),
        ],
    ),
    "ObservationEmitted": (
        "ev_observation_emitted",
        [
            ("step", "INTEGER", "step"),
            ("state", "VARCHAR", "state"),
            ("templates", "VARCHAR[]", "templates"),
            ("text", "VARCHAR", "text"),
        ],
    ),
    "AgentReplied": (
        "ev_agent_replied",
        [
            ("step", "INTEGER", "step"),
            ("state", "VARCHAR", "state"),
            ("model", "VARCHAR", "model"),
            *CALL_COLUMNS,
            ("truncated_from", "INTEGER", "truncated_from"),
            ("finish_reason", "VARCHAR", "finish_reason"),  # NULL for replies recorded before v3
            ("output_chunks", "BIGINT", "usage.output_chunks"),  # a stream without usage: its chunks, counted
            ("reasoning_tokens", "BIGINT", "usage.reasoning"),  # a reasoning model's, inside output_tokens
            ("raw", "VARCHAR", "raw"),
            ("action", "VARCHAR", "action"),
            ("reasoning", "VARCHAR", "reasoning"),  # the thinking a reasoning model sent apart from its answer
            ("system_as_user", "BOOLEAN", "system_as_user"),  # NULL: sent as a system message
        ],
    ),
    "MatchScored": (
        "ev_match_scored",
        [
            ("step", "INTEGER", "step"),
            ("state", "VARCHAR", "state"),
            ("best", "VARCHAR", "best"),
            ("best_cosine", "DOUBLE", "best_cosine"),
            ("tau", "DOUBLE", "tau"),
            ("accepted", "BOOLEAN", "accepted"),
            ("probability", "DOUBLE", "rule.probability"),  # NULL: the paper's rule decided (no fitted rule)
            ("rule_threshold", "DOUBLE", "rule.threshold"),
        ],
    ),
    "DependencyBlocked": (
        "ev_dependency_blocked",
        [("step", "INTEGER", "step"), ("subtopic_id", "VARCHAR", "subtopic_id"), ("missing", "VARCHAR[]", "missing")],
    ),
    "HintIssued": (
        "ev_hint_issued",
        [
            ("step", "INTEGER", "step"),
            ("state", "VARCHAR", "state"),
            ("target", "VARCHAR", "target"),
            ("level", "INTEGER", "level"),
            ("final", "BOOLEAN", "final"),
        ],
    ),
    "Transitioned": (
        "ev_transitioned",
        [
            ("step", "INTEGER", "step"),
            ("from_state", "VARCHAR", "from_state"),
            ("to_state", "VARCHAR", "to_state"),
            ("node", "VARCHAR", "node"),
            ("forced", "BOOLEAN", "forced"),
            ("reason", "VARCHAR", "reason"),
        ],
    ),
    "ResultDrawn": (
        "ev_result_drawn",
        [
            ("step", "INTEGER", "step"),
            ("study_id", "VARCHAR", "study_id"),
            ("result_id", "VARCHAR", "result_id"),
            ("probability", "DOUBLE", "probability"),
            ("draw", "DOUBLE", "draw"),
            ("fake", "BOOLEAN", "fake"),
            ("fake_index", "INTEGER", "fake_index"),
            ("redo", "BOOLEAN", "redo"),
        ],
    ),
    "DecisionParsed": (
        "ev_decision_parsed",
        [("step", "INTEGER", "step"), ("decision", "VARCHAR", "decision"), ("valid", "BOOLEAN", "valid")],
    ),
    "TurnLimitReached": ("ev_turn_limit_reached", [("step", "INTEGER", "step"), ("max_turns", "INTEGER", "max_turns")]),
    "ConclusionSubmitted": ("ev_conclusion_submitted", [("items", "VARCHAR[]", "items")]),
    "JudgeVerdict": (
        "ev_judge_verdict",
        [
            ("judge_id", "VARCHAR", "judge_id"),
            ("judge_kind", "VARCHAR", "judge.kind"),
            ("judge_model", "VARCHAR", "judge.model"),
            ("prompt_version", "VARCHAR", "prompt_version"),
            ("item_id", "VARCHAR", "item_id"),
            ("score", "DOUBLE", "score"),
            ("error", "BOOLEAN", "error"),
            ("rationale", "VARCHAR", "rationale"),
            ("model", "VARCHAR", "model"),
            *CALL_COLUMNS,
            ("finish_reason", "VARCHAR", "finish_reason"),  # NULL for verdicts recorded before v2
        ],
    ),
    "EpisodeScored": (
        "ev_episode_scored",
        [
            ("judge_id", "VARCHAR", "judge_id"),
            ("coverage", "DOUBLE", "coverage"),
            ("q_sum", "DOUBLE", "q_sum"),
            ("q_norm", "DOUBLE", "q_norm"),
            ("k", "INTEGER", "k"),
            ("steps", "INTEGER", "steps"),
            ("lower_bound", "INTEGER", "lower_bound"),
            ("upper_bound", "INTEGER", "upper_bound"),
            ("within_bounds", "BOOLEAN", "within_bounds"),
            ("hints_issued", "INTEGER", "hints_issued"),
            ("forced_transitions", "INTEGER", "forced_transitions"),
        ],
    ),
    "ControlAnswered": (
        "ev_control_answered",
        [
            ("agent_kind", "VARCHAR", "agent.kind"),
            ("agent_model", "VARCHAR", "agent.model"),
            ("agent_label", "VARCHAR", "agent.label"),
            ("tree_id", "VARCHAR", "tree_id"),
            ("result_id", "VARCHAR", "result_id"),
            ("shown_fake", "BOOLEAN", "shown_fake"),
            ("answer", "VARCHAR", "answer"),
            ("correct", "BOOLEAN", "correct"),
            *CALL_COLUMNS,
        ],
    ),
    "EpisodeFailed": (
        "ev_episode_failed",
        [
            ("step", "INTEGER", "step"),
            ("error", "VARCHAR", "error"),
            ("retryable", "BOOLEAN", "retryable"),
            ("error_class", "VARCHAR", "error_class"),
            ("kind", "VARCHAR", "kind"),
        ],
    ),
    "LimitReached": (
        "ev_limit_reached",
        [
            ("step", "INTEGER", "step"),
            ("limit_name", "VARCHAR", "limit"),
            ("threshold", "DOUBLE", "threshold"),
            ("used", "DOUBLE", "used"),
        ],
    ),
    "EpisodeResumed": ("ev_episode_resumed", [("step", "INTEGER", "step"), ("after_error", "VARCHAR", "after_error")]),
    "EpisodeInterrupted": (
        "ev_episode_interrupted",
        [("step", "INTEGER", "step"), ("reason", "VARCHAR", "reason"), ("during", "VARCHAR", "during")],
    ),
    # a person's reading of a sampled move or conclusion (inquitree label): episode_id is the stream's
    # (labels/<sample>); the labelled episode is labelled_stream[9:]
    "LabelRecorded": (
        "ev_label_recorded",
        [
            ("labeller", "VARCHAR", "labeller"),
            ("sample_id", "VARCHAR", "sample_id"),
            ("kind", "VARCHAR", "kind"),
            ("suite", "VARCHAR", "suite"),
            ("seed", "BIGINT", "seed"),
            ("size", "INTEGER", "size"),
            ("labelled_stream", "VARCHAR", "stream_id"),
            ("labelled_version", "INTEGER", "position"),
            ("item_id", "VARCHAR", "item_id"),
            ("answer", "VARCHAR", "answer"),
        ],
    ),
}

DIMENSIONS = """
CREATE TABLE IF NOT EXISTS trees (tree_id VARCHAR, tree_hash VARCHAR, title VARCHAR, n_subtopics INTEGER,
    published VARCHAR, published_from DATE, published_to DATE,
    provenance_kind VARCHAR, it18_id INTEGER, paper_subtopics INTEGER, source VARCHAR);
CREATE TABLE IF NOT EXISTS tree_items (tree_id VARCHAR, tree_hash VARCHAR, item_id VARCHAR, n_required INTEGER);
CREATE TABLE IF NOT EXISTS tree_item_results (tree_id VARCHAR, tree_hash VARCHAR, item_id VARCHAR, result_id VARCHAR);
CREATE TABLE IF NOT EXISTS model_registry (model VARCHAR, alias VARCHAR, release VARCHAR, cutoff DATE, source VARCHAR,
    registry VARCHAR);
CREATE TABLE IF NOT EXISTS prices (model VARCHAR, input_per_mtok DOUBLE, cached_input_per_mtok DOUBLE,
    cache_write_per_mtok DOUBLE, output_per_mtok DOUBLE, as_of VARCHAR, source VARCHAR, usd_per_hour DOUBLE,
    serves DOUBLE);
CREATE TABLE IF NOT EXISTS dimension_state (fingerprint VARCHAR);
"""

RAW_COLUMNS = [
    ("global_position", "BIGINT"),
    ("stream_id", "VARCHAR"),
    ("stream_version", "INTEGER"),
    ("event_type", "VARCHAR"),
    ("schema_version", "INTEGER"),
    ("recorded_at", "TIMESTAMP"),
]


# raw_events holds the store's notification columns (events/store.py) but the payload, in that
# order; tests/test_warehouse.py keeps the two in step.


def column_list(cols: list[tuple[str, str]]) -> str:
    return ", ".join(f"{c} {t}" for c, t in cols)


BASE = f"""
CREATE TABLE IF NOT EXISTS sync_state (source VARCHAR, last_position BIGINT, events BIGINT, synced_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS raw_events ({column_list(RAW_COLUMNS)});
"""


# Per-episode quantities derived from the events (views.sql's episode_facts_of and
# episode_evidence_of), kept up to date by each sync for the episodes it touched (sync.py), so that
# an analysis reads one row per episode, or per episode and item, whatever the store's size. The
# columns are the macros' own (tests/test_warehouse.py keeps them equal); touched_episodes lists
# the episodes a sync's open transaction has loaded events of, empty between syncs.
FACTS = """
CREATE TABLE IF NOT EXISTS episode_facts (episode_id VARCHAR, tree_id VARCHAR, tree_hash VARCHAR, n_subtopics INTEGER,
    agent VARCHAR, agent_kind VARCHAR, agent_model VARCHAR, judge_kind VARCHAR, randomness INTEGER, seed BIGINT,
    tau DOUBLE, tau_study DOUBLE, draw_rule INTEGER, match_rule VARCHAR, embedder VARCHAR, max_hints INTEGER,
    max_turns INTEGER, started_at TIMESTAMP, status VARCHAR, ended_by VARCHAR, last_failure_kind VARCHAR,
    steps INTEGER, lower_bound INTEGER, upper_bound INTEGER, within_bounds BOOLEAN, visited_all BOOLEAN,
    coverage DOUBLE, own_coverage DOUBLE, hints_issued BIGINT, forced_transitions BIGINT, result_observations BIGINT,
    fake_observations BIGINT, true_observations BIGINT, redo_decisions BIGINT, invalid_decisions BIGINT,
    repeat_subtopic_visits BIGINT, first_position BIGINT);
CREATE TABLE IF NOT EXISTS episode_evidence (episode_id VARCHAR, item_id VARCHAR, n_required INTEGER, p DOUBLE);
CREATE TABLE IF NOT EXISTS touched_episodes (episode_id VARCHAR, first_seen BIGINT);
"""
FACT_MACROS = {"episode_facts": "episode_facts_of", "episode_evidence": "episode_evidence_of"}  # table: views.sql's


def _structure(cols: list[tuple[str, str, str]]) -> str:
    """The json_transform structure for a list of (column, type, dotted path)."""
    tree: dict = {}
    for _, typ, path in cols:
        node = tree
        parts = path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = typ
    import json

    return json.dumps(tree)


def create_typed(table: str, cols: list[tuple[str, str, str]]) -> str:
    return f"CREATE TABLE IF NOT EXISTS {table} ({column_list(COMMON + [(c, t) for c, t, _ in cols])})"


def table_statements() -> list[str]:
    """The DDL of every table of the warehouse, in order (its views are ``views.sql``)."""
    return [BASE, DIMENSIONS, *(create_typed(table, cols) for table, cols in TYPED.values()), FACTS]


def insert_typed(event_type: str, table: str, cols: list[tuple[str, str, str]], source: str) -> str:
    """INSERT ... SELECT parsing each payload once with json_transform."""
    fields = ", ".join("j." + ".".join(f'"{p}"' for p in path.split(".")) + f" AS {c}" for c, _, path in cols)
    return (
        f"INSERT INTO {table} SELECT global_position, stream_id, "
        f"CASE WHEN starts_with(stream_id, 'episode/') THEN stream_id[9:] ELSE stream_id END AS episode_id, "
        f"stream_version, recorded_at, {fields} "
        f"FROM (SELECT *, json_transform(payload, '{_structure(cols)}') AS j FROM {source} "
        f"WHERE event_type = '{event_type}')"
    )


def refresh_facts(con: Any, everything: bool = False) -> None:
    """Recompute ``episode_facts`` and ``episode_evidence`` for the episodes in ``touched_episodes``
    (for every episode: ``everything``, as when the trees or the views that define them changed),
    in the caller's transaction, and empty ``touched_episodes``. An episode's events all come at or
    after its start, so the recomputation reads from the earliest start among them."""
    if everything:
        since = 0
        for table in FACT_MACROS:
            con.execute(f"DELETE FROM {table}")
    else:
        since, touched = con.execute(
            "SELECT min(coalesce(f.first_position, t.first_seen)), count(*) "
            "FROM touched_episodes t LEFT JOIN episode_facts f USING (episode_id)"
        ).fetchone()
        if not touched:
            return
        for table in FACT_MACROS:
            con.execute(f"DELETE FROM {table} WHERE episode_id IN (SELECT episode_id FROM touched_episodes)")
    for table, macro in FACT_MACROS.items():
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {macro}(?, ?)", [since, everything])
    con.execute("DELETE FROM touched_episodes")


def checkpoint(con: Any) -> tuple[str | None, int]:
    """(the store a warehouse was filled from, the last global position loaded), or (None, 0):
    empty. Here, beside the tables, so that a reader of the warehouse never imports the sync."""
    rows = con.execute("SELECT source, last_position FROM sync_state").fetchall()
    return (rows[0][0], rows[0][1]) if rows else (None, 0)


VIEWS_PATH = Path(__file__).resolve().parent / "views.sql"
# The schema stamp: the tables' hash, then the views'. A warehouse whose tables match takes this
# code's views when a writer opens it (views hold no data: replacing them needs no rebuild), and a
# reader, which cannot write them, reads through this code's views made for its connection alone;
# other tables must be rebuilt. A stamp of one hash (0.1.0's first stamps) matches no tables.
TABLES_HASH = hashlib.sha256((json.dumps(TYPED, sort_keys=True) + BASE + DIMENSIONS + FACTS).encode()).hexdigest()
_VIEWS_TEXT = VIEWS_PATH.read_text()
VIEWS_HASH = hashlib.sha256(_VIEWS_TEXT.encode()).hexdigest()
SCHEMA_HASH = f"{TABLES_HASH}:{VIEWS_HASH}"


def views_sql(temporary: bool = False) -> str:
    """views.sql's statements; ``temporary``: each view made for the connection alone (a reader's)."""
    if not temporary:
        return _VIEWS_TEXT
    return _VIEWS_TEXT.replace("CREATE OR REPLACE VIEW ", "CREATE OR REPLACE TEMP VIEW ").replace(
        "CREATE OR REPLACE MACRO ", "CREATE OR REPLACE TEMP MACRO "
    )
