"""Alembic environment and versions: the only way the store's schema changes. Their revisions
are read without Alembic by ``events/revisions.py``."""
