"""The events table, with immutability enforced by the database.

Revision ID: 0001_events
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_events"
down_revision = None
branch_labels = None
depends_on = None

SQLITE_TRIGGERS = [
    """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
       BEGIN SELECT RAISE(ABORT, 'events are immutable: UPDATE is not allowed'); END""",
    """CREATE TRIGGER events_no_delete BEFORE DELETE ON events
       BEGIN SELECT RAISE(ABORT, 'events are immutable: DELETE is not allowed'); END""",
]

POSTGRES_TRIGGERS = [
    """CREATE FUNCTION inquitree_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'events are immutable: % is not allowed', TG_OP; END $$""",
    """CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
       FOR EACH ROW EXECUTE FUNCTION inquitree_events_immutable()""",
    """CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
       FOR EACH STATEMENT EXECUTE FUNCTION inquitree_events_immutable()""",
]


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "global_position",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("stream_version", sa.Integer(), nullable=False),
        sa.Column("event_type", sa.String(100), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("global_position", name="pk_events"),
        sa.UniqueConstraint("stream_id", "stream_version", name="uq_events_stream_id_stream_version"),
    )
    dialect = op.get_bind().dialect.name
    for ddl in {"sqlite": SQLITE_TRIGGERS, "postgresql": POSTGRES_TRIGGERS}.get(dialect, []):
        op.execute(ddl)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS events_no_truncate ON events")
        op.execute("DROP TRIGGER IF EXISTS events_no_update_delete ON events")
        op.execute("DROP FUNCTION IF EXISTS inquitree_events_immutable()")
    op.drop_table("events")
