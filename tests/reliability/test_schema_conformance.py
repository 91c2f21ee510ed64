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


def test_every_generated_answer_conforms_to_the_published_schema(db_url: str, fixed_clock: Any) -> None:
    """On SQLite and on PostgreSQL (``db_url``; issue 13: the 500s on NUL bytes were PostgreSQL's alone)."""
    app = create_app(Settings(database_url=db_url, offline=True), clock=fixed_clock, session_secret="schema")
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


def test_the_schema_says_what_the_routes_enforce_idempotency_key_required_and_errors_as_problem_json(sqlite_url: str) -> None:
    document = create_app(Settings(database_url=sqlite_url, offline=True), session_secret="schema").openapi()
    purchase_like = [(path, op) for path, item in document["paths"].items() for method, op in item.items()
                     if method == "post" and path.startswith("/v1/allocations")]
    assert len(purchase_like) == 5  # buy, stop, start, terminate, extend
    for path, operation in purchase_like:
        [key] = [p for p in operation["parameters"] if p["in"] == "header" and p["name"] == "Idempotency-Key"]
        assert key["required"] is True and key["schema"]["maxLength"] == 255, path
    for item in document["paths"].values():
        for operation in item.values():
            for status, response in operation["responses"].items():
                if status.startswith("4"):
                    assert list(response["content"]) == ["application/problem+json"]
    assert "HTTPValidationError" not in document["components"]["schemas"]


def test_stateful_sequences_over_the_inferred_links_conform_too(db_url: str, fixed_clock: Any) -> None:
    """schemathesis chains operations along the links it infers from our schema (quote → allocation →
    stop/start/extend/terminate, list → get) with the same checks plus use-after-free and resource
    availability. Generated offering names are seldom real, so the bookable chain at scale is the load
    harness's job (benchmarks/load); this checks that every step of every chain answers by the schema."""
    from hypothesis.stateful import run_state_machine_as_test
    from schemathesis.specs.openapi.checks import ensure_resource_availability, use_after_free

    app = create_app(Settings(database_url=db_url, offline=True), clock=fixed_clock, session_secret="schema")
    with TestClient(app) as client:
        client.get("/v1/healthz")
    _, api_key = create_account(app.state.store.uow_factory(), "stateful", clock=fixed_clock)
    machine = schemathesis.openapi.from_asgi("/openapi.json", app).as_state_machine()
    checks = [*CHECKS, use_after_free, ensure_resource_availability]
    steps: list[int] = []

    class Workflow(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": {"Authorization": f"Bearer {api_key}"}}

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            steps.append(response.status_code)
            case.validate_response(response, checks=checks, recorder=self.recorder)

    try:
        run_state_machine_as_test(Workflow, settings=settings(max_examples=25, stateful_step_count=8, deadline=None, derandomize=True,
                                                              suppress_health_check=list(HealthCheck), database=None))
    finally:
        app.state.store.dispose()
    assert len(steps) > 100
