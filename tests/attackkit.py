"""Attacks on a recorded SQLite store by someone who can write to the database file.

The attacker drops the immutability triggers, changes the log with plain SQL, and where it helps
recomputes every hash the way InquiTree does (sha256 needs no key). Each attack is a function of
a ``sqlite3`` connection; ``tests/test_integrity_attacks.py`` checks what ``verify`` finds without
a key, with an anchor and with a key, and ``bench/attacks.py`` prints the same as a table.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Callable

from inquitree.core.game.engine import Engine, EpisodeState, Params
from inquitree.core.game.prompts import TemplateSet
from inquitree.core.game.tree import resolve_tree
from inquitree.events.base import canonical_json, decode, parse_json
from inquitree.events.chain import GENESIS_HASH, chain_hash, log_hash
from inquitree.events.database import utc_now
from inquitree.events.signing import checkpoint_message, generate, load_signer
from inquitree.events.store import EventStore
from inquitree.events.verify import Anchor

from enginekit import OracleAgent, RandomAgent, play

TREE = "synthetic-diamond-4"
EPISODES = 5


@dataclasses.dataclass
class Lab:
    """A store recorded with a signing key, its anchor, and the keys."""

    db: Path
    anchor: Path
    private_key: Path
    public_key: Path


def record_lab(directory: Path) -> Lab:
    """Five episodes (random and oracle agents) recorded with checkpoints signed per episode, then anchored."""
    private, public = generate(directory / "lab")
    db = directory / "lab.sqlite"
    signer = load_signer(private)
    tree = resolve_tree(TREE)
    with EventStore(f"sqlite:///{db}", signer=signer) as store:
        for i in range(EPISODES):
            agent = RandomAgent(tree, seed=i) if i % 2 == 0 else OracleAgent(tree)
            play(tree, agent, store=store, seed=i, randomness=3)
        report = store.verify()
        anchor = Anchor.of(report, signer=signer)
    anchor_path = directory / "lab.anchor.json"
    anchor_path.write_text(anchor.to_json())
    return Lab(db, anchor_path, private, public)


# -- the attacker's tools -------------------------------------------------------------------------
def _open(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    for trigger in ("events_no_update", "events_no_delete", "checkpoints_no_update", "checkpoints_no_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    return conn


def _rows(conn: sqlite3.Connection) -> list[dict]:
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM events ORDER BY global_position")]
    conn.row_factory = None
    return rows


def _streams(conn: sqlite3.Connection) -> list[str]:
    """Stream ids in the order they were started."""
    return [r[0] for r in conn.execute("SELECT stream_id FROM events GROUP BY stream_id ORDER BY min(global_position)")]


def _stream_hash(prev: str, r: dict) -> str:
    """The stream hash of row ``r`` after ``prev``, as InquiTree computes it."""
    return chain_hash(
        prev, r["stream_id"], r["stream_version"], r["event_type"], r["schema_version"], r["recorded_at"], r["payload"]
    )


def rechain(conn: sqlite3.Connection) -> None:
    """Recompute every stream hash and log hash over the log as it now is, as InquiTree would."""
    heads: dict[str, tuple[int, str]] = {}
    prev_log = GENESIS_HASH
    for r in _rows(conn):
        _, prev = heads.get(r["stream_id"], (0, GENESIS_HASH))
        digest = _stream_hash(prev, r)
        prev_log = log_hash(prev_log, r["global_position"], digest)
        conn.execute(
            "UPDATE events SET prev_hash = ?, hash = ?, log_hash = ? WHERE global_position = ?",
            (prev, digest, prev_log, r["global_position"]),
        )
        heads[r["stream_id"]] = (r["stream_version"], digest)


def forge_verdicts(conn: sqlite3.Connection, stream: str) -> tuple[float | None, float | None]:
    """Give every judge verdict of ``stream`` the top score and re-score the episode with the engine
    (the same code InquiTree runs); returns q_norm before and after."""
    rows = [r for r in _rows(conn) if r["stream_id"] == stream]
    events = [decode(r["event_type"], r["schema_version"], parse_json(r["payload"])) for r in rows]
    started = events[0]
    params = Params.from_dict(started.params)
    engine = Engine(resolve_tree(started.tree_id), params, TemplateSet(params.template_set))
    state, before, after = EpisodeState(), None, None
    for r, ev in zip(rows, events, strict=False):
        if ev.TYPE == "JudgeVerdict":
            ev = dataclasses.replace(ev, score=1.0, rationale="Matches the ground truth.")
        if ev.TYPE == "EpisodeScored":
            before = ev.q_norm
            ev = engine.score(state, ev.judge_id)
            after = ev.q_norm
        else:
            state.apply(ev)
        conn.execute(
            "UPDATE events SET payload = ? WHERE global_position = ?",
            (canonical_json(ev.to_payload()), r["global_position"]),
        )
    return before, after


# -- the attacks ------------------------------------------------------------------------------------
def edit_payload(conn):
    conn.execute("UPDATE events SET payload = payload || ' ' WHERE global_position = 12")


def edit_payload_rehash_event(conn):
    edit_payload(conn)
    r = next(r for r in _rows(conn) if r["global_position"] == 12)
    digest = _stream_hash(r["prev_hash"], r)
    conn.execute("UPDATE events SET hash = ? WHERE global_position = 12", (digest,))


def edit_timestamp(conn):
    conn.execute("UPDATE events SET recorded_at = '2025-01-01T00:00:00.000000Z' WHERE global_position = 30")


def delete_last_event(conn):
    conn.execute("DELETE FROM events WHERE global_position = (SELECT max(global_position) FROM events)")


def delete_last_five(conn):
    conn.execute("DELETE FROM events WHERE global_position > (SELECT max(global_position) - 5 FROM events)")


def delete_middle_stream(conn):
    conn.execute("DELETE FROM events WHERE stream_id = ?", (_streams(conn)[1],))


def delete_last_stream(conn):
    conn.execute("DELETE FROM events WHERE stream_id = ?", (_streams(conn)[-1],))


def delete_last_stream_and_its_checkpoint(conn):
    last = _streams(conn)[-1]
    start = conn.execute("SELECT min(global_position) FROM events WHERE stream_id = ?", (last,)).fetchone()[0]
    conn.execute("DELETE FROM events WHERE stream_id = ?", (last,))
    conn.execute(
        "DELETE FROM checkpoints WHERE (kind = 'log' AND position >= ?) OR (kind = 'stream' AND subject = ?)",
        (start, last),
    )


def swap_positions(conn):
    a, b = 20, 80  # events of two different episodes
    conn.execute("UPDATE events SET global_position = -1 WHERE global_position = ?", (a,))
    conn.execute("UPDATE events SET global_position = ? WHERE global_position = ?", (a, b))
    conn.execute("UPDATE events SET global_position = ? WHERE global_position = -1", (b,))


def swap_positions_rechain(conn):
    swap_positions(conn)
    rechain(conn)


def forge_verdicts_rechain(conn):
    forge_verdicts(conn, _streams(conn)[0])
    rechain(conn)


def forge_last_verdicts_rechain(conn):
    forge_verdicts(conn, _streams(conn)[-1])
    rechain(conn)


def _raw_insert_at_end(conn, with_hashes: bool) -> None:
    last = _rows(conn)[-1]
    payload = canonical_json({"step": 99, "text": "an extra observation"})
    version, position = last["stream_version"] + 1, last["global_position"] + 1
    digest = chain_hash(last["hash"], last["stream_id"], version, "ObservationEmitted", 1, last["recorded_at"], payload)
    lhash = log_hash(last["log_hash"], position, digest) if with_hashes else "0" * 64
    conn.execute(
        "INSERT INTO events VALUES (?, ?, ?, 'ObservationEmitted', 1, ?, ?, ?, ?, ?)",
        (position, last["stream_id"], version, last["recorded_at"], payload, last["hash"], digest, lhash),
    )


def raw_insert_at_end(conn):
    _raw_insert_at_end(conn, with_hashes=False)


def raw_insert_at_end_hashed(conn):
    _raw_insert_at_end(conn, with_hashes=True)


def raw_insert_in_middle_rechain(conn):
    """A new event in the first episode: every later position moves up by one, and all is re-hashed."""
    first = _streams(conn)[0]
    rows = [r for r in _rows(conn) if r["stream_id"] == first]
    at = rows[5]
    conn.execute(
        "UPDATE events SET global_position = -global_position WHERE global_position > ?", (at["global_position"],)
    )
    conn.execute("UPDATE events SET global_position = 1 - global_position WHERE global_position < 0")
    conn.execute(
        "UPDATE events SET stream_version = -stream_version WHERE stream_id = ? AND stream_version > ?",
        (first, at["stream_version"]),
    )
    conn.execute(
        "UPDATE events SET stream_version = 1 - stream_version WHERE stream_id = ? AND stream_version < 0", (first,)
    )
    conn.execute(
        "INSERT INTO events VALUES (?, ?, ?, 'ObservationEmitted', 1, ?, ?, '', '', '')",
        (
            at["global_position"] + 1,
            first,
            at["stream_version"] + 1,
            at["recorded_at"],
            canonical_json({"step": 1, "text": "an extra observation"}),
        ),
    )
    rechain(conn)


def forge_rechain_drop_checkpoints(conn):
    """Rewrite the first episode, re-hash, and remove every checkpoint the rewrite contradicts."""
    forge_verdicts_rechain(conn)
    ok = {(r[0], r[1]) for r in conn.execute("SELECT global_position, log_hash FROM events")}
    for seq, position, digest in conn.execute(
        "SELECT seq, position, hash FROM checkpoints WHERE kind = 'log'"
    ).fetchall():
        if (position, digest) not in ok:
            conn.execute("DELETE FROM checkpoints WHERE seq = ?", (seq,))


def forge_rechain_sign_with_own_key(conn, directory: Path):
    """Rewrite and re-hash, then sign the new head with a key of the attacker's own."""
    forge_rechain_drop_checkpoints(conn)
    private, _ = generate(directory / "attacker")
    signer = load_signer(private)
    position, digest = conn.execute(
        "SELECT global_position, log_hash FROM events ORDER BY global_position DESC"
    ).fetchone()
    at = utc_now()
    conn.execute(
        "INSERT INTO checkpoints (kind, subject, position, hash, signed_at, key_id, signature) VALUES "
        "('log', 'log', ?, ?, ?, ?, ?)",
        (position, digest, at, signer.key_id, signer.sign(checkpoint_message("log", "log", position, digest, at))),
    )


def move_checkpoint(conn):
    """Point the first checkpoint at a later position (with that position's real log hash)."""
    seq = conn.execute("SELECT min(seq) FROM checkpoints").fetchone()[0]
    position, digest = conn.execute(
        "SELECT global_position, log_hash FROM events ORDER BY global_position DESC"
    ).fetchone()
    conn.execute("UPDATE checkpoints SET position = ?, hash = ? WHERE seq = ?", (position, digest, seq))


ATTACKS: list[tuple[str, Callable]] = [
    ("edit a payload, hash left alone", edit_payload),
    ("edit a payload and re-hash that event", edit_payload_rehash_event),
    ("edit an event's timestamp", edit_timestamp),
    ("delete the last event of a stream (the log's last)", delete_last_event),
    ("delete the last five events of a stream", delete_last_five),
    ("delete a whole stream (not the last)", delete_middle_stream),
    ("delete the last stream", delete_last_stream),
    ("swap two events' global positions", swap_positions),
    ("swap two events' global positions, re-chain", swap_positions_rechain),
    ("forge judge verdicts, re-score, re-chain", forge_verdicts_rechain),
    ("forge the last episode's verdicts, re-score, re-chain", forge_last_verdicts_rechain),
    ("raw INSERT at the end, no log hash", raw_insert_at_end),
    ("raw INSERT at the end, hashes computed", raw_insert_at_end_hashed),
    ("raw INSERT in the middle, positions moved, re-chain", raw_insert_in_middle_rechain),
    ("re-chain after forging, delete contradicted checkpoints", forge_rechain_drop_checkpoints),
    ("re-chain after forging, sign with the attacker's key", forge_rechain_sign_with_own_key),
    ("delete the last stream and its checkpoint", delete_last_stream_and_its_checkpoint),
    ("move a checkpoint to another position", move_checkpoint),
]


def attacked_copy(lab: Lab, attack: Callable, directory: Path) -> Path:
    """A copy of the lab's store with ``attack`` applied."""
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "attacked.sqlite"
    shutil.copy(lab.db, db)
    conn = _open(db)
    try:
        if attack is forge_rechain_sign_with_own_key:
            attack(conn, directory)
        else:
            attack(conn)
    finally:
        conn.close()
    return db


def anchor_of(lab: Lab) -> dict:
    return json.loads(lab.anchor.read_text())
