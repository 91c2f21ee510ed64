"""Schema-driven fuzzing of our own OpenAPI (schemathesis, in-process ASGI): no input a client can send
produces a 500, and every error is problem+json with a stable code.

Each operation gets a bounded number of generated requests, valid and invalid ones (derandomized, no deadline), so the whole run
stays well under a minute. Protected operations are sent with a real API key, so they are fuzzed past
authentication too.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from anchorgpu.accounts import create_account
from anchorgpu.api.app import create_app
from anchorgpu.config import Settings

EXAMPLES_PER_OPERATION = 6  # per operation and per mode (valid / invalid requests)


def _check(case: Any, api_key: str, failures: list[str]) -> None:
    if case.operation.path.startswith(("/v1/quotes", "/v1/allocations")):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {api_key}"}
    response = case.call()
    where = f"{case.method} {case.formatted_path} {case.body if case.body is not None else ''}"[:300]
    if response.status_code >= 500:
        failures.append(f"{where} -> {response.status_code}: {response.text[:300]}")
    elif response.status_code >= 400:
        content_type = response.headers.get("content-type") or [""]
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        if not content_type.startswith("application/problem+json"):
            failures.append(f"{where} -> {response.status_code} not problem+json")
        elif response.json().get("status") != response.status_code or not response.json().get("code"):
            failures.append(f"{where} -> problem body without status/code: {response.text[:200]}")


def test_no_generated_request_gets_a_500_and_every_error_is_problem_json(db_url: str, fixed_clock: Any) -> None:
    """On SQLite and on PostgreSQL (``db_url``): PostgreSQL refuses what SQLite stores (a NUL in text)."""
    app = create_app(Settings(database_url=db_url, offline=True), clock=fixed_clock, session_secret="fuzz")
    with TestClient(app) as client:
        client.get("/v1/healthz")  # builds the store
    _, api_key = create_account(app.state.store.uow_factory(), "fuzzer", clock=fixed_clock)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
            def run(case: Any) -> None:
                _check(case, api_key, failures)

            try:
                run()
            except Unsatisfiable:  # an operation without parameters or body has no invalid request to make
                assert mode is GenerationMode.NEGATIVE
    app.state.store.dispose()
    assert operations >= 15  # every route of the API was fuzzed
    assert failures == []
