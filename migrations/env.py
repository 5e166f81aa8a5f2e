"""Alembic environment. InquiTree passes its own connection in
``config.attributes['connection']``; the ``alembic`` command line can also be
used with ``-x url=...`` (see docs/campaigns.md)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from inquitree.events.schema import metadata

config = context.config


def _run(connection) -> None:
    context.configure(
        connection=connection, target_metadata=metadata, render_as_batch=connection.dialect.name == "sqlite"
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("alembic: no database URL (pass -x url=... or set sqlalchemy.url)")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        _run(conn)
