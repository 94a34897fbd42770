"""Alembic migrations of the registry's schema (run by ``finevo registry migrate``, never on open)."""
