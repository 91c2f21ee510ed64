"""A CLI line as the HTTP API says it: each ``--flag`` that is a field of the request written as the field
(``--train-precision fp4`` → ``train_precision fp4``), as :func:`anchorgpu.api.words.api_words` writes a refusal and
the advice in an answer."""

from __future__ import annotations

from anchorgpu.api.schemas import PlanRequest, RecommendRequest
from anchorgpu.api.words import api_words

FIELDS = {"/v1/plan": frozenset(PlanRequest.model_fields), "/v1/recommend": frozenset(RecommendRequest.model_fields)}


def as_api(line: str, path: str = "/v1/plan") -> str:
    """``line`` (the CLI's words) as a refusal of ``path`` words it."""
    return api_words(line, FIELDS[path])
