"""Recommendations: the cheapest catalog offerings that fit a workload, with speed and cost.

Public API:

- :func:`recommend` ``(model, spec, catalog, term, now, *, max_usd, min_tokens_per_s_per_user, top,
  max_servers, offerings, progress) -> Recommendation`` — sweeps the planner over every offering and prices
  the fastest fitting configuration per offering and server count with :func:`anchorgpu.quotes.price_quote`;
- :class:`Recommendation`, :class:`RecommendedOption`, :class:`Rejection` (frozen);
- :func:`recommendation_to_json` — the ``anchorgpu recommend --json`` contract;
- :func:`shapes_from_catalog` — catalog offerings as the planner's hardware shapes.
"""

from anchorgpu.recommend.service import Recommendation, RecommendedOption, Rejection, recommend, recommendation_to_json
from anchorgpu.recommend.shapes import network_bytes_per_s_per_gpu, shapes_from_catalog

__all__ = [
    "Recommendation",
    "RecommendedOption",
    "Rejection",
    "network_bytes_per_s_per_gpu",
    "recommend",
    "recommendation_to_json",
    "shapes_from_catalog",
]
