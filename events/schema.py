"""The events table: the single source of truth (Message DB's shape).

One row per event: a global position (for projections), a per-stream version
(the optimistic-concurrency check is the unique key on (stream_id,
stream_version)), the type and schema version, a UTC timestamp, the canonical
JSON payload, and the two integrity chains (``events/chain.py``): the stream chain
(prev_hash -> hash) and the log chain (log_hash, over the global position).
The checkpoints table holds signed heads of the log (and of imported streams),
made with a key the database does not hold (``events/signing.py``).

Timestamps are ISO-8601 UTC text (``2026-11-22T04:00:00.123456Z``) and payloads
are canonical JSON text on every backend, so the bytes the hash covers are the
bytes stored, whatever the database.
The schema only changes through Alembic migrations (``migrations/``).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

events = sa.Table(
    "events",
    metadata,
    sa.Column(
        "global_position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
    ),
    sa.Column("stream_id", sa.String(200), nullable=False),
    sa.Column("stream_version", sa.Integer(), nullable=False),
    sa.Column("event_type", sa.String(100), nullable=False),
    sa.Column("schema_version", sa.Integer(), nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    sa.Column("payload", sa.Text(), nullable=False),
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Column("log_hash", sa.String(64), nullable=True),
    sa.UniqueConstraint("stream_id", "stream_version"),
)

checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(10), nullable=False),  # "log" or "stream"
    sa.Column("subject", sa.String(200), nullable=False),  # "log", or the stream id
    sa.Column("position", sa.BigInteger(), nullable=False),  # global position, or stream version
    sa.Column("hash", sa.String(64), nullable=False),  # the log hash, or the stream hash, there
    sa.Column("signed_at", sa.String(32), nullable=False),
    sa.Column("key_id", sa.String(16), nullable=False),
    sa.Column("signature", sa.Text(), nullable=False),
    sa.Column("note", sa.Text(), nullable=True),
)
