"""Unit of work: one database transaction, with the repositories bound to it (cosmicpython ch. 6).

    with uow:                       # opens a session; BEGIN IMMEDIATE on SQLite
        q = uow.quotes.get(...)
        ...
        uow.commit()                # nothing is written unless commit() is called
    # leaving the block rolls back whatever was not committed (also on any exception)

A unit of work may be entered again after it was left (each ``with`` is a new transaction).
``savepoint()`` undoes part of a transaction (used to keep a business error's partial writes out
while the idempotency key row stays).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

from sqlalchemy import text
from sqlalchemy.orm import Session

from anchorgpu.store.api_keys import ApiKeyRepository
from anchorgpu.store.repository import (
    AccountRepository,
    AllocationRepository,
    CapacityRepository,
    IdempotencyRepository,
    QuoteRepository,
    StockRepository,
)

__all__ = ["AbstractUnitOfWork", "SqlAlchemyUnitOfWork"]


class AbstractUnitOfWork(abc.ABC):
    accounts: AccountRepository
    api_keys: ApiKeyRepository
    stock: StockRepository
    capacity: CapacityRepository
    quotes: QuoteRepository
    allocations: AllocationRepository
    idempotency: IdempotencyRepository
    dialect: str = "sqlite"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.rollback()

    @abc.abstractmethod
    def commit(self) -> None: ...

    @abc.abstractmethod
    def rollback(self) -> None: ...

    @abc.abstractmethod
    @contextmanager
    def savepoint(self) -> Iterator[None]: ...

    def set_lock_timeout(self, seconds: float) -> None:
        """How long this transaction waits for a row lock before failing (PostgreSQL only)."""
        del seconds  # SQLite waits by its busy_timeout instead


class SqlAlchemyUnitOfWork(AbstractUnitOfWork):
    """The unit of work on a SQLAlchemy session made by ``session_factory`` (from :mod:`anchorgpu.bootstrap`)."""

    def __init__(self, session_factory: Callable[[], Session]) -> None:
        self._session_factory = session_factory
        self._session: Session | None = None

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("the unit of work is not open: use it as 'with uow:'")
        return self._session

    def __enter__(self) -> Self:
        if self._session is not None:
            raise RuntimeError("this unit of work is already open")
        session = self._session_factory()
        self._session = session
        self.dialect = session.get_bind().dialect.name
        self.accounts = AccountRepository(session)
        self.api_keys = ApiKeyRepository(session)
        self.stock = StockRepository(session)
        self.capacity = CapacityRepository(session)
        self.quotes = QuoteRepository(session)
        self.allocations = AllocationRepository(session)
        self.idempotency = IdempotencyRepository(session)
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            if self._session is not None:
                self._session.close()
            self._session = None

    def commit(self) -> None:
        self.session.commit()

    def rollback(self) -> None:
        if self._session is not None:
            self._session.rollback()

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        nested = self.session.begin_nested()
        try:
            yield
        except BaseException:
            nested.rollback()
            raise
        else:
            nested.commit()

    def set_lock_timeout(self, seconds: float) -> None:
        if self.dialect == "postgresql":
            self.session.execute(text(f"SET LOCAL lock_timeout = '{int(seconds * 1000)}ms'"))

    def execute(self, statement: Any, params: Any = None) -> Any:
        """Raw access for tests and tools (``text()`` statements with bound parameters only)."""
        return self.session.execute(statement, params)
