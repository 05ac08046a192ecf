"""The revision scripts, oldest first (their module names are not imported: Alembic loads them by path)."""
