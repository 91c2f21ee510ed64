"""Request and response schemas of the HTTP API (pydantic), separate from domain and database classes.

Every field says what it means and its unit. Money is a decimal string in USD (exact, as the CLI's
JSON); in requests a JSON number or a plain decimal string (:func:`Money`); bytes are integers; times are ISO
8601 UTC.

The schemas live, by area, in :mod:`~anchorgpu.api.schemas_base` (what they share, problem+json),
:mod:`~anchorgpu.api.schemas_catalog` (health, GPUs, offerings, models), :mod:`~anchorgpu.api.schemas_commerce`
(quotes, allocations) and :mod:`~anchorgpu.api.schemas_planning` (plan and recommend); all are re-exported here.
"""

from __future__ import annotations

from anchorgpu.api.schemas_base import TEXT_PATTERN, Money, Problem, StrictChoice, problems
from anchorgpu.api.schemas_catalog import (
    GpuList,
    GpuOut,
    Health,
    ModelList,
    ModelSummary,
    OfferingList,
    OfferingOut,
    OptionOut,
    PeakOut,
    PricesOut,
    Usd,
)
from anchorgpu.api.schemas_commerce import (
    AllocationCreate,
    AllocationEventOut,
    AllocationExtend,
    AllocationList,
    AllocationOut,
    ExtensionQuote,
    QuoteCreate,
    QuoteLineOut,
    QuoteOut,
    QuoteStored,
    TermOut,
)
from anchorgpu.api.schemas_models import DiffusionPipelineOut, LanguageModelOut, ModelOut
from anchorgpu.api.schemas_planning import LoraTarget, PlanOut, PlanRequest, RecommendOut, RecommendRequest, Task

__all__ = ["TEXT_PATTERN", "AllocationCreate", "AllocationEventOut", "AllocationExtend", "AllocationList",
           "AllocationOut", "DiffusionPipelineOut", "ExtensionQuote", "GpuList", "GpuOut", "Health", "LanguageModelOut", "LoraTarget", "ModelList", "ModelOut",
           "ModelSummary", "Money", "OfferingList", "OfferingOut", "OptionOut", "PeakOut", "PlanOut", "PlanRequest",
           "PricesOut", "Problem", "QuoteCreate", "QuoteLineOut", "QuoteOut", "QuoteStored", "RecommendOut",
           "RecommendRequest", "StrictChoice", "Task", "TermOut", "Usd", "problems"]
