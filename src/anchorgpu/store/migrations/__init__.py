"""Alembic migrations of the AnchorGPU store (the only way the schema changes)."""
