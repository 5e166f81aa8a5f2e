"""Alembic environment and versions: the only way the store's schema changes."""

from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parent
