"""Query parameters a route does not take are refused, as unknown body fields are.

FastAPI ignores a query parameter no route declares, so a typo was silently a different request:
``GET /v1/offerings?gpus=8`` (for ``min_gpus``) listed every offering, ``GET /v1/allocations/{id}/recipe?...&seq=4096``
(for ``context``) planned the model's default context, and the answer gave no sign. Every ``/v1`` route now
answers 422 ``invalid_request`` naming the parameter, the way ``"extra_forbid"`` bodies do.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError

__all__ = ["refuse_unknown_query"]


def _query_names(dependant: Any) -> set[str]:
    """The query parameters ``dependant`` and its sub-dependencies declare (their aliases)."""
    names = {str(getattr(param, "alias", None) or param.name) for param in getattr(dependant, "query_params", [])}
    for sub in getattr(dependant, "dependencies", []):
        names |= _query_names(sub)
    return names


def _known(request: Request) -> set[str] | None:
    dependant = getattr(request.scope.get("route"), "dependant", None)
    return None if dependant is None else _query_names(dependant)


def refuse_unknown_query(request: Request) -> None:
    """Router dependency: 422 for the first query parameter the matched route does not declare."""
    if not request.query_params:
        return
    known = _known(request)
    if known is None:
        return
    for name in request.query_params:
        if name not in known:
            takes = ", ".join(sorted(known)) or "none"
            raise RequestValidationError([{
                "type": "extra_forbidden", "loc": ("query", name[:60]), "input": request.query_params[name][:60],
                "msg": f"Extra inputs are not permitted (this path takes: {takes})"}])
