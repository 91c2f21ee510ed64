"""The store: SQLAlchemy 2 tables, Alembic migrations, repositories and the unit of work.

- :func:`anchorgpu.store.engine.make_engine` (SQLite pragmas / PostgreSQL via psycopg 3),
- :func:`anchorgpu.store.migrate.upgrade` (the shipped Alembic migrations; ``anchorgpu db upgrade``),
- :class:`anchorgpu.store.uow.SqlAlchemyUnitOfWork` (rolls back unless committed),
- :mod:`anchorgpu.store.tables` (schema) and :mod:`anchorgpu.store.repository` (rows ↔ domain).

Nothing is imported or connected at import of this package; :mod:`anchorgpu.bootstrap` wires it.
"""
