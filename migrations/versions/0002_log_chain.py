"""The log chain (each event's log_hash covers its global position and everything before it)
and the checkpoints table (signed heads of the log and of imported streams), immutable like
the events.

Existing events get their log hashes here, once, in global position order. The upgrade first
checks every stream chain and refuses a log whose content no longer matches its hashes: the log
chain must not bless a change made before it existed.

Revision ID: 0002_log_chain
Revises: 0001_events
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

from inquitree.events.chain import GENESIS_HASH, link_problem, log_hash

revision = "0002_log_chain"
down_revision = "0001_events"
branch_labels = None
depends_on = None

SQLITE_TRIGGERS = [
    """CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
       BEGIN SELECT RAISE(ABORT, 'checkpoints are immutable: UPDATE is not allowed'); END""",
    """CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
       BEGIN SELECT RAISE(ABORT, 'checkpoints are immutable: DELETE is not allowed'); END""",
]
SQLITE_EVENTS_NO_UPDATE = """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
       BEGIN SELECT RAISE(ABORT, 'events are immutable: UPDATE is not allowed'); END"""

POSTGRES_TRIGGERS = [
    """CREATE FUNCTION inquitree_checkpoints_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'checkpoints are immutable: % is not allowed', TG_OP; END $$""",
    """CREATE TRIGGER checkpoints_no_update_delete BEFORE UPDATE OR DELETE ON checkpoints
       FOR EACH ROW EXECUTE FUNCTION inquitree_checkpoints_immutable()""",
    """CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON checkpoints
       FOR EACH STATEMENT EXECUTE FUNCTION inquitree_checkpoints_immutable()""",
]


def _fill_log_hashes(conn: sa.Connection) -> None:
    rows = conn.exec_driver_sql(
        "SELECT global_position, stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
        "prev_hash, hash FROM events ORDER BY global_position"
    )
    heads: dict[str, tuple[int, str]] = {}
    prev_log, updates = GENESIS_HASH, []
    for pos, sid, version, etype, sver, at, payload, prev_hash, digest in rows:
        if link_problem(heads.get(sid, (0, GENESIS_HASH)), sid, version, etype, sver, at, payload, prev_hash, digest):
            raise RuntimeError(
                f"cannot add the log chain: stream {sid!r} version {version} (global position {pos}) does not match "
                "its stream chain, so the log was changed before this upgrade (`inquitree db verify` names it)"
            )
        heads[sid] = (version, digest)
        prev_log = log_hash(prev_log, pos, digest)
        updates.append({"h": prev_log, "p": pos})
    for start in range(0, len(updates), 10_000):
        conn.execute(
            sa.text("UPDATE events SET log_hash = :h WHERE global_position = :p"), updates[start : start + 10_000]
        )


def upgrade() -> None:
    conn = op.get_bind()
    dialect = conn.dialect.name
    op.add_column("events", sa.Column("log_hash", sa.String(64), nullable=True))
    if dialect == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_no_update")
        _fill_log_hashes(conn)
        op.execute(SQLITE_EVENTS_NO_UPDATE)
    elif dialect == "postgresql":
        op.execute("ALTER TABLE events DISABLE TRIGGER events_no_update_delete")
        _fill_log_hashes(conn)
        op.execute("ALTER TABLE events ENABLE TRIGGER events_no_update_delete")
    else:
        _fill_log_hashes(conn)
    op.create_table(
        "checkpoints",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("signed_at", sa.String(32), nullable=False),
        sa.Column("key_id", sa.String(16), nullable=False),
        sa.Column("signature", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("seq", name="pk_checkpoints"),
    )
    for ddl in {"sqlite": SQLITE_TRIGGERS, "postgresql": POSTGRES_TRIGGERS}.get(dialect, []):
        op.execute(ddl)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS checkpoints_no_truncate ON checkpoints")
        op.execute("DROP TRIGGER IF EXISTS checkpoints_no_update_delete ON checkpoints")
        op.execute("DROP FUNCTION IF EXISTS inquitree_checkpoints_immutable()")
    op.drop_table("checkpoints")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("log_hash")
