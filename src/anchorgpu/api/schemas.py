"""Request and response schemas of the HTTP API (pydantic), separate from domain and database classes.

Every field says what it means and its unit. Money is a decimal string in USD (exact, as the CLI's
JSON); bytes are integers; times are ISO 8601 UTC.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Health"]


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Health(_Schema):
    status: Literal["ok"] = Field(description="Always 'ok' when the service and its database answer")
    version: str = Field(description="AnchorGPU version")
    database: str = Field(description="Database dialect in use: 'sqlite' (embedded default) or 'postgresql'")
