"""Create the whole store: accounts, stock, quotes, allocations, events, capacity bookings, idempotency keys.

Revision ID: 0001_initial
Revises: (none)
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import anchorgpu.store.types

revision: str = '0001_initial'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('accounts',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('api_key_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_accounts')),
    sa.UniqueConstraint('api_key_hash', name=op.f('uq_accounts_api_key_hash'))
    )
    op.create_table('stock',
    sa.Column('offering_id', sa.String(length=100), nullable=False),
    sa.Column('region', sa.String(length=100), nullable=False),
    sa.Column('servers', sa.Integer(), nullable=False),
    sa.Column('updated_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.CheckConstraint('servers >= 0', name=op.f('ck_stock_servers_not_negative')),
    sa.PrimaryKeyConstraint('offering_id', 'region', name=op.f('pk_stock'))
    )
    op.create_table('idempotency_keys',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('account_id', sa.String(length=40), nullable=False),
    sa.Column('operation', sa.String(length=40), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('response_status', sa.Integer(), nullable=False),
    sa.Column('response_body', sa.JSON(), nullable=False),
    sa.Column('resource_id', sa.String(length=40), nullable=True),
    sa.Column('created_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_idempotency_keys_account_id_accounts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_idempotency_keys')),
    sa.UniqueConstraint('account_id', 'operation', 'key', name=op.f('uq_idempotency_keys_account_id_operation_key'))
    )
    with op.batch_alter_table('idempotency_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_idempotency_keys_expires_at'), ['expires_at'], unique=False)

    op.create_table('quotes',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.String(length=40), nullable=False),
    sa.Column('offering_id', sa.String(length=100), nullable=False),
    sa.Column('region', sa.String(length=100), nullable=False),
    sa.Column('quantity', sa.Integer(), nullable=False),
    sa.Column('gpus', sa.Integer(), nullable=False),
    sa.Column('term_unit', sa.String(length=10), nullable=False),
    sa.Column('term_count', sa.Integer(), nullable=False),
    sa.Column('term_hours', sa.Integer(), nullable=False),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('total_usd', anchorgpu.store.types.Money(precision=18, scale=2), nullable=False),
    sa.Column('catalog_version', sa.String(length=100), nullable=False),
    sa.Column('created_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('valid_until', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('purpose', sa.String(length=20), nullable=False),
    sa.Column('body', sa.JSON(), nullable=False),
    sa.Column('used_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_quotes_account_id_accounts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_quotes'))
    )
    with op.batch_alter_table('quotes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_quotes_account_id'), ['account_id'], unique=False)

    op.create_table('allocations',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.String(length=40), nullable=False),
    sa.Column('quote_id', sa.String(length=40), nullable=False),
    sa.Column('offering_id', sa.String(length=100), nullable=False),
    sa.Column('region', sa.String(length=100), nullable=False),
    sa.Column('quantity', sa.Integer(), nullable=False),
    sa.Column('gpus', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('term_unit', sa.String(length=10), nullable=False),
    sa.Column('term_count', sa.Integer(), nullable=False),
    sa.Column('term_hours', sa.Integer(), nullable=False),
    sa.Column('starts_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('ends_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('amount_usd', anchorgpu.store.types.Money(precision=18, scale=2), nullable=False),
    sa.Column('created_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('terminated_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=True),
    sa.CheckConstraint("state IN ('scheduled', 'active', 'stopped', 'expired', 'terminated')", name=op.f('ck_allocations_known_state')),
    sa.CheckConstraint('quantity > 0', name=op.f('ck_allocations_quantity_positive')),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_allocations_account_id_accounts')),
    sa.ForeignKeyConstraint(['quote_id'], ['quotes.id'], name=op.f('fk_allocations_quote_id_quotes')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_allocations')),
    sa.UniqueConstraint('quote_id', name=op.f('uq_allocations_quote_id'))
    )
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_allocations_account_id'), ['account_id'], unique=False)

    op.create_table('allocation_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('allocation_id', sa.String(length=40), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('from_state', sa.String(length=20), nullable=True),
    sa.Column('to_state', sa.String(length=20), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['allocation_id'], ['allocations.id'], name=op.f('fk_allocation_events_allocation_id_allocations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_allocation_events')),
    sa.UniqueConstraint('allocation_id', 'seq', name=op.f('uq_allocation_events_allocation_id_seq'))
    )
    with op.batch_alter_table('allocation_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_allocation_events_allocation_id'), ['allocation_id'], unique=False)

    op.create_table('capacity_bookings',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('allocation_id', sa.String(length=40), nullable=False),
    sa.Column('offering_id', sa.String(length=100), nullable=False),
    sa.Column('region', sa.String(length=100), nullable=False),
    sa.Column('servers', sa.Integer(), nullable=False),
    sa.Column('starts_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('ends_at', anchorgpu.store.types.UtcDateTime(timezone=True), nullable=False),
    sa.CheckConstraint('ends_at >= starts_at', name=op.f('ck_capacity_bookings_ends_after_start')),
    sa.CheckConstraint('servers > 0', name=op.f('ck_capacity_bookings_servers_positive')),
    sa.ForeignKeyConstraint(['allocation_id'], ['allocations.id'], name=op.f('fk_capacity_bookings_allocation_id_allocations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_capacity_bookings'))
    )
    with op.batch_alter_table('capacity_bookings', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_capacity_bookings_allocation_id'), ['allocation_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_capacity_bookings_offering_id_region_starts_at_ends_at'), ['offering_id', 'region', 'starts_at', 'ends_at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('capacity_bookings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_capacity_bookings_offering_id_region_starts_at_ends_at'))
        batch_op.drop_index(batch_op.f('ix_capacity_bookings_allocation_id'))

    op.drop_table('capacity_bookings')
    with op.batch_alter_table('allocation_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_allocation_events_allocation_id'))

    op.drop_table('allocation_events')
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_allocations_account_id'))

    op.drop_table('allocations')
    with op.batch_alter_table('quotes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_quotes_account_id'))

    op.drop_table('quotes')
    with op.batch_alter_table('idempotency_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_idempotency_keys_expires_at'))

    op.drop_table('idempotency_keys')
    op.drop_table('stock')
    op.drop_table('accounts')
