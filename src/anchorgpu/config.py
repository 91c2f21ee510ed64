"""Settings for the faces and the store (pydantic-settings). Read only by bootstrap, api and cli.

Every setting comes from an ``ANCHORGPU_*`` environment variable; nothing is read at import.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "default_database_url", "get_settings"]


def default_database_url() -> str:
    """The embedded default: a SQLite file in the user's data directory (XDG), created on first use."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'anchorgpu' / 'anchorgpu.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ANCHORGPU_", extra="ignore")

    database_url: str = Field(default_factory=default_database_url, description="SQLAlchemy URL; SQLite file by default, postgresql+psycopg://… for PostgreSQL")
    api_key: str | None = Field(default=None, description="API key the CLI acts with; a local account is created on first use when unset")
    quote_validity_s: int = Field(default=24 * 3600, gt=0, description="How long a quote can be bought, seconds")
    idempotency_key_ttl_s: int = Field(default=48 * 3600, ge=24 * 3600, description="How long idempotency keys are kept, seconds (at least 24 h)")
    offline: bool = Field(default=False, description="Never reach the Hugging Face Hub (also honoured: HF_HUB_OFFLINE=1)")
    hub_fetch: bool = Field(default=False, description="Let the API and the page fetch Hub ids (org/name) for callers: off by default; when on, "
                                                       "bounded (anchorgpu.api.models_ref: a timeout, two fetches at a time, a cache). ANCHORGPU_OFFLINE wins")
    rate_limit: bool = Field(default=True, description="anchorgpu serve limits public computations per client address "
                                                         "(anchorgpu.api.ratelimit); ANCHORGPU_RATE_LIMIT=0 turns it off")
    backup_key: SecretStr | None = Field(default=None, description="Secret for an HMAC on backups (db backup signs, db restore and --verify check); unset: checksum only")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
