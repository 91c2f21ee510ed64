"""API keys in their own table: several per account, named, revocable, optionally expiring.

Each account's existing key hash moves to ``api_keys`` as a key named ``original key`` (so every key
issued before this revision keeps working); ``accounts.api_key_hash`` is dropped. The original key's
characters were never stored, so its ``prefix`` is only the scheme (``agpu_``). On SQLite, dropping the
column rebuilds ``accounts`` (copy, drop, rename), which :func:`anchorgpu.store.migrate.upgrade` allows by
running migrations with foreign keys off and checking them all before COMMIT.

Revision ID: 0002_api_keys
Revises: 0001_initial
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import anchorgpu.store.types

revision: str = '0002_api_keys'
down_revision: str | None = '0001_initial'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LEGACY_KEY_NAME = "original key"
LEGACY_PREFIX = "agpu_"


def upgrade() -> None:
    op.create_table('api_keys',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('prefix', sa.String(length=20), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_api_keys_account_id_accounts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_keys_key_hash'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_account_id'), ['account_id'], unique=False)

    # 'acct_<16 hex>' -> 'key_<16 hex>': one key per existing account, unique because account ids are.
    op.execute(sa.text(
        "INSERT INTO api_keys (id, account_id, name, prefix, key_hash, created_at, expires_at, revoked_at) "
        "SELECT 'key_' || substr(id, 6), id, :name, :prefix, api_key_hash, created_at, NULL, NULL FROM accounts"
    ).bindparams(name=LEGACY_KEY_NAME, prefix=LEGACY_PREFIX))

    with op.batch_alter_table('accounts', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('uq_accounts_api_key_hash'), type_='unique')
        batch_op.drop_column('api_key_hash')


def downgrade() -> None:
    # Back to one key per account: each account keeps its oldest key that is not revoked (others are lost).
    with op.batch_alter_table('accounts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('api_key_hash', sa.String(length=64), nullable=True))
    op.execute(sa.text(
        "UPDATE accounts SET api_key_hash = (SELECT k.key_hash FROM api_keys k WHERE k.account_id = accounts.id "
        "AND k.revoked_at IS NULL ORDER BY k.created_at, k.id LIMIT 1)"
    ))
    # An account without a usable key gets an unguessable placeholder (no key hashes to it).
    op.execute(sa.text("UPDATE accounts SET api_key_hash = 'revoked-' || id WHERE api_key_hash IS NULL"))
    with op.batch_alter_table('accounts', schema=None) as batch_op:
        batch_op.alter_column('api_key_hash', existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint(batch_op.f('uq_accounts_api_key_hash'), ['api_key_hash'])
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_account_id'))
    op.drop_table('api_keys')
