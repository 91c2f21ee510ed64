"""``GET /v1/gpus/compare`` answers each GPU's "FP8 / FP4 training" line as ``anchorgpu gpus compare --json`` does
(gpus.toml training_stacks and training_sources, worded by ``fmt_training_stacks`` as ``gpus show`` words them), and
its schema documents the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from cli_runner import run_json


def _validator(app: Any) -> Draft202012Validator:
    """The compare route's 200 schema from ``app.openapi()``, its component references resolvable."""
    document = app.openapi()
    content = document["paths"]["/v1/gpus/compare"]["get"]["responses"]["200"]["content"]
    schema = json.loads(
        json.dumps(content["application/json"]["schema"]).replace('"#/components', '"urn:api#/components')
    )
    registry = Registry().with_resource(
        "urn:api",
        Resource.from_contents(
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "components": document["components"]}
        ),
    )
    return Draft202012Validator(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}, registry=registry
    )


def test_the_compare_answer_names_each_sides_training_framework(client: TestClient) -> None:
    data = client.get("/v1/gpus/compare", params={"a": "mi300x", "b": "b200"}).json()
    # gpus.toml: mi300x trains FP8 with ROCm Transformer Engine (S33), no FP4 unit; b200 both with Transformer Engine (S32)
    assert data["training"] == {
        "a": "FP8: ROCm Transformer Engine; FP4: none (no FP4 tensor cores) (S33)",
        "b": "FP8: Transformer Engine; FP4: Transformer Engine (S32)",
    }


def test_the_api_and_the_cli_compare_json_agree_on_training(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    api = client.get("/v1/gpus/compare", params={"a": "h100", "b": "mi355x"}).json()
    assert api["training"] == run_json(capsys, "gpus", "compare", "h100", "mi355x")["training"]


def test_the_compare_schema_documents_the_training_field(app: Any, client: TestClient) -> None:
    schemas = app.openapi()["components"]["schemas"]
    assert "FP8 / FP4 training" in schemas["GpuComparisonOut"]["properties"]["training"]["description"]
    assert "training" in schemas["GpuComparisonOut"]["required"]
    sides = schemas["TrainingStacksOut"]["properties"]
    assert set(sides) == {"a", "b"} and all(side["description"] for side in sides.values())
    answer = client.get("/v1/gpus/compare", params={"a": "a100", "b": "mi355x"}).json()
    assert not list(_validator(app).iter_errors(answer))
    assert list(_validator(app).iter_errors({**answer, "training": {"a": None, "b": "x"}}))  # control: not text
