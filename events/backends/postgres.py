"""PostgreSQL as an event store's database, through SQLAlchemy's pool and psycopg: appends are
serialized by a transaction-level advisory lock, many rows go in as one INSERT, a walk over the log
reads a server-side cursor, and the immutability guards are triggers and the roles' grants
(``events/roles.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inquitree.boundary.text import install_extra
from inquitree.events.backends import MAX_PAYLOAD_BYTES, SIZE_GUARD, Backend
from inquitree.events.errors import StoreError

if TYPE_CHECKING:
    import sqlalchemy as sa

APPEND_LOCK = 0x1A7E_7EE  # the advisory-lock key that serializes appends (and signing) on PostgreSQL
MIGRATION_LOCK = 0x1D7E_0002  # the advisory-lock key that serializes schema migrations (appends use another)
COPY_FROM = 10  # rows an append sends by COPY from; fewer go in one INSERT

_GUARDS = {
    "events_no_update_delete": ("events", "UPDATE OR DELETE", "ROW", "inquitree_events_immutable"),
    "events_no_truncate": ("events", "TRUNCATE", "STATEMENT", "inquitree_events_immutable"),
    "checkpoints_no_update_delete": ("checkpoints", "UPDATE OR DELETE", "ROW", "inquitree_checkpoints_immutable"),
    "checkpoints_no_truncate": ("checkpoints", "TRUNCATE", "STATEMENT", "inquitree_checkpoints_immutable"),
    SIZE_GUARD[0]: (*SIZE_GUARD[1:], "ROW", "inquitree_events_payload_size"),
}
_FUNCTION = """CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION '{table} are immutable: % is not allowed', TG_OP; END $$"""
_SIZE_FUNCTION = f"""CREATE OR REPLACE FUNCTION inquitree_events_payload_size() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF octet_length(NEW.payload) > {MAX_PAYLOAD_BYTES} THEN
           RAISE EXCEPTION 'an event payload over {MAX_PAYLOAD_BYTES} bytes is refused';
         END IF;
         RETURN NEW;
       END $$"""
# Each guard's function and trigger as `db upgrade` puts them back (the migrations made them so).
_CREATE = {
    name: (
        _SIZE_FUNCTION if name == SIZE_GUARD[0] else _FUNCTION.format(name=function, table=table),
        f"CREATE TRIGGER {name} BEFORE {'INSERT' if name == SIZE_GUARD[0] else what} ON {table} "
        f"FOR EACH {level} EXECUTE FUNCTION {function}()",
    )
    for name, (table, what, level, function) in _GUARDS.items()
}
_GRANTS = """SELECT c.relname, coalesce(r.rolname, 'PUBLIC'), a.privilege_type
    FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
    WHERE c.relname IN ('events', 'checkpoints') AND c.relnamespace = current_schema()::regnamespace
      AND a.privilege_type IN ('UPDATE', 'DELETE', 'TRUNCATE') AND a.grantee <> c.relowner
    ORDER BY 1, 2, 3"""


def engine(url: sa.URL, read_only: bool, shown: str) -> sa.Engine:
    """A pooled engine (each connection checked before use); ``read_only`` connections refuse to
    write in the server itself (default_transaction_read_only)."""
    import sqlalchemy as sa

    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    args = {"options": "-c default_transaction_read_only=on"} if read_only else {}
    try:
        return sa.create_engine(url, pool_pre_ping=True, connect_args=args)
    except ModuleNotFoundError as exc:
        raise StoreError(f"{shown}: PostgreSQL needs psycopg: {install_extra('postgres')}") from exc


class Postgres(Backend):
    name = "postgresql"
    mark = "%s"
    guards = _GUARDS

    def engine(self, url: sa.URL, read_only: bool, shown: str) -> sa.Engine:
        return engine(url, read_only, shown)

    def begin_append(self, cur: Any) -> None:
        cur.execute(f"SELECT pg_advisory_xact_lock({APPEND_LOCK})")

    def begin_write(self, cur: Any) -> None:
        """The driver opens a transaction with the first statement."""

    def hold_off_appends(self, cur: Any) -> None:
        cur.execute(f"SELECT pg_advisory_xact_lock({APPEND_LOCK})")

    def insert_rows(self, cur: Any, insert_one: str, columns: int, rows: list[tuple[Any, ...]]) -> None:
        # Ten rows or more go by COPY, which fires the same triggers and raises the same errors: a
        # multi-row INSERT (its statement parsed and planned with ten parameters a row) ran at 0.71
        # of psycopg's executemany on 1,000-event appends, and executemany runs in pipeline mode,
        # which prints "error ignored terminating <psycopg.Pipeline [INERROR]>" on stderr when a
        # unique-key conflict aborts it. Below ten rows the one INSERT is quicker than a COPY's
        # round trips (bench/store_append.py measures both).
        head, _, one = insert_one.partition(" VALUES ")
        if len(rows) < COPY_FROM:
            cur.execute(f"{head} VALUES {', '.join([one] * len(rows))}", tuple(v for row in rows for v in row))
            return
        with cur.copy(f"COPY {head.removeprefix('INSERT INTO ')} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def migration_lock(self) -> str | None:
        return f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"

    def scan_cursor(self, driver: Any) -> Any:
        return driver.cursor(name="inquitree_scan")  # server-side: rows arrive as they are fetched

    def guard_state(self, cur: Any) -> tuple[set[str], set[str], list[tuple[str, str, str]]]:
        cur.execute(
            "SELECT t.tgname, t.tgenabled FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE NOT t.tgisinternal AND c.relname IN ('events', 'checkpoints') "
            "AND c.relnamespace = current_schema()::regnamespace"
        )
        rows = cur.fetchall()
        present = {name for name, _ in rows}
        disabled = {name for name, enabled in rows if enabled == "D"}
        cur.execute(_GRANTS)
        return present, disabled, [tuple(r) for r in cur.fetchall()]

    def restore_guards(
        self, cur: Any, present: set[str], disabled: set[str], grants: list[tuple[str, str, str]]
    ) -> list[str]:
        done = []
        for name, (table, *_) in _GUARDS.items():
            if name not in present:
                for statement in _CREATE[name]:
                    cur.execute(statement)
                done.append(f"created trigger {name}")
            elif name in disabled:
                cur.execute(f"ALTER TABLE {table} ENABLE TRIGGER {name}")
                done.append(f"enabled trigger {name}")
        for table, role, privilege in grants:
            grantee = "PUBLIC" if role == "PUBLIC" else '"' + role.replace('"', '""') + '"'
            cur.execute(f"REVOKE {privilege} ON TABLE {table} FROM {grantee}")
            done.append(f"revoked {privilege} on {table} from {role}")
        return done
