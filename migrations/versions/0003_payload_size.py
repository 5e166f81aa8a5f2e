"""The database refuses an event whose payload is over the store's limit.

The store refuses such an event before it writes anything (``MAX_EVENT_BYTES``, 4 MiB), but a
client that writes rows itself (PostgreSQL's writer role may INSERT) could add one row of any
size, and a 200 MB row stopped every warehouse sync. A trigger on INSERT holds every writer to
the same limit; ``db verify`` reports it missing like the immutability triggers.

Revision ID: 0003_payload_size
Revises: 0002_log_chain
Create Date: 2026-12-03
"""

from alembic import op

revision = "0003_payload_size"
down_revision = "0002_log_chain"
branch_labels = None
depends_on = None

MAX_PAYLOAD_BYTES = 4 * 1024 * 1024  # the store's MAX_EVENT_BYTES when this revision was made

SQLITE_TRIGGER = f"""CREATE TRIGGER events_payload_size BEFORE INSERT ON events
       WHEN length(CAST(NEW.payload AS BLOB)) > {MAX_PAYLOAD_BYTES}
       BEGIN SELECT RAISE(ABORT, 'an event payload over {MAX_PAYLOAD_BYTES} bytes is refused'); END"""

POSTGRES_TRIGGERS = [
    f"""CREATE FUNCTION inquitree_events_payload_size() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF octet_length(NEW.payload) > {MAX_PAYLOAD_BYTES} THEN
           RAISE EXCEPTION 'an event payload over {MAX_PAYLOAD_BYTES} bytes is refused';
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER events_payload_size BEFORE INSERT ON events
       FOR EACH ROW EXECUTE FUNCTION inquitree_events_payload_size()""",
]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for ddl in {"sqlite": [SQLITE_TRIGGER], "postgresql": POSTGRES_TRIGGERS}.get(dialect, []):
        op.execute(ddl)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.execute("DROP TRIGGER IF EXISTS events_payload_size" + (" ON events" if dialect == "postgresql" else ""))
    if dialect == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS inquitree_events_payload_size()")
