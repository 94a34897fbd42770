"""Alembic environment: migrations run on the connection (and transaction) the registry hands over.

There is no ``alembic.ini`` and no URL here on purpose: ``finevo registry migrate`` opens the
database (masking its password in every message), takes the schema lock, and passes its
connection in ``config.attributes["connection"]``.
"""

from __future__ import annotations

from alembic import context

from finevo.registry.schema import target_metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached by running the alembic command by hand
    raise RuntimeError("registry migrations run through `finevo registry migrate`, not the alembic command")

context.configure(connection=connection, target_metadata=target_metadata(), render_as_batch=True,
                  compare_type=True)
with context.begin_transaction():
    context.run_migrations()
