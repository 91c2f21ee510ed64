"""Every query, path and header parameter of the OpenAPI document has a description, so /docs and /redoc say what
each one means (``GET /v1/allocations/{allocation_id}/recipe``'s ``task`` was listed bare)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_every_parameter_says_what_it_is(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    bare = [f"{method.upper()} {path} {parameter['name']}"
            for path, item in document["paths"].items() for method, operation in item.items()
            for parameter in operation.get("parameters", [])
            if not (parameter.get("description") or parameter.get("schema", {}).get("description"))]
    assert bare == []
