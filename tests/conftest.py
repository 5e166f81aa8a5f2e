"""Shared fixtures. The store tests run against every backend:

- SQLite: a file in a temporary directory.
- PostgreSQL: a fresh database per test on the server named by
  ``$INQUITREE_TEST_PG`` (an administrator's SQLAlchemy URL of any database there;
  .ci/run starts a throwaway cluster and sets it). Each database is set up with
  ``inquitree db grant`` and the tests connect as its writer role. Without the
  variable the PostgreSQL cases skip, unless ``$INQUITREE_REQUIRE_PG=1`` (as in
  CI), where they fail instead.
"""

from __future__ import annotations

import os
import uuid

import pytest
import sqlalchemy as sa

PG_ENV = "INQUITREE_TEST_PG"


def _pg_admin_url() -> str | None:
    url = os.environ.get(PG_ENV)
    if not url and os.environ.get("INQUITREE_REQUIRE_PG") == "1":
        pytest.fail(f"${PG_ENV} is not set but INQUITREE_REQUIRE_PG=1")
    return url


def fresh_pg_database(role: str | None = "writer") -> str:
    """A new database on the test server. By default it is set up as `inquitree db grant` sets a
    store up (schema at head, owned by the owner role) and the URL connects as the writer, like
    the README; ``role=None`` gives the administrator's URL of an empty database."""
    admin = _pg_admin_url()
    if not admin:
        pytest.skip(f"PostgreSQL tests need ${PG_ENV}")
    name = f"t_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine.dispose()
    url = sa.make_url(admin).set(database=name).render_as_string(hide_password=False)
    if role is None:
        return url
    from inquitree.events.roles import grant

    return grant(url)[role]


def as_admin(url: str) -> str:
    """The same database as the test server's administrator (who can drop triggers: an attacker
    with the database's keys, or the test that plays one)."""
    admin = sa.make_url(_pg_admin_url() or "")
    return sa.make_url(url).set(username=admin.username, password=admin.password).render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'events.sqlite'}"
    return fresh_pg_database()


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'events.sqlite'}"


@pytest.fixture(scope="session")
def local_embedder():
    """The real offline all-MiniLM-L6-v2 embedder (loaded once per test session)."""
    from inquitree.core.players.embed import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each test session writes its embedding cache under pytest's temporary directory."""
    monkeypatch.setenv("INQUITREE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
