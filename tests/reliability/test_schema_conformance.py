"""schemathesis against our own OpenAPI, in-process (ASGI): for every operation, valid and invalid
generated requests get no 500 and no answer outside the schema — the status is one the operation
documents, the content type is the documented one, and the body validates against the documented
response schema.

tests/api/test_schema_fuzz.py (WEB) checks "no 500, errors are problem+json"; this test adds
conformance of every answer to the published schema and negative (schema-violating) requests. Bounded:
a few derandomized examples per operation and mode, no deadline, so it stays well under a minute.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from anchorgpu.accounts import create_account
from anchorgpu.api.app import create_app
from anchorgpu.config import Settings

EXAMPLES = {GenerationMode.POSITIVE: 5, GenerationMode.NEGATIVE: 4}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
SLOW_OPERATIONS = {"/v1/recommend"}
"""A recommendation sweeps the whole catalog (about a second each): fewer examples keep the test short."""


def test_every_generated_answer_conforms_to_the_published_schema(sqlite_url: str, fixed_clock: Any) -> None:
    app = create_app(Settings(database_url=sqlite_url, offline=True), clock=fixed_clock, session_secret="schema")
    with TestClient(app) as client:
        client.get("/v1/healthz")  # builds the store
    _, api_key = create_account(app.state.store.uow_factory(), "schema", clock=fixed_clock)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    seen: set[str] = set()
    for result in schema.get_all_operations():
        operation = result.ok()
        seen.add(f"{operation.method.upper()} {operation.path}")
        for mode, examples in EXAMPLES.items():
            if operation.path in SLOW_OPERATIONS:
                examples = 1

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                      database=None)
            def run(case: Any) -> None:
                case.headers = {**(case.headers or {}), "Authorization": f"Bearer {api_key}"} if (
                    case.operation.path.startswith(("/v1/quotes", "/v1/allocations"))) else case.headers
                response = case.call()
                try:
                    case.validate_response(response, checks=CHECKS)
                except FailureGroup as exc:  # keep the first lines of each, look at all operations
                    failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                    + " | ".join(str(exc).splitlines()[:6]))

            try:
                run()
            except Unsatisfiable:  # an operation without inputs has no schema-violating request to send
                assert mode is GenerationMode.NEGATIVE, operation.path
    app.state.store.dispose()
    assert {"POST /v1/quotes", "POST /v1/allocations", "POST /v1/allocations/{allocation_id}/extend", "POST /v1/plan",
            "GET /v1/offerings", "GET /v1/glossary"} <= seen
    assert failures == [], "\n".join(failures[:15])
