"""Issue 13, items 1, 6 and 7: hostile input on the API answers one problem+json line, never a 500, on
SQLite and on PostgreSQL (the adversarial run found 500s on PostgreSQL only: ``psycopg.DataError`` for a NUL
byte in an id, ``OverflowError`` extending toward year 9999)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from sqlalchemy import func, select

from anchorgpu.store.tables import metadata
from hardening.conftest import Served, problem_of


def _counts(served: Served) -> dict[str, int]:
    with served.app.state.store.engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one()) for t in metadata.sorted_tables}


# The seven routes of the report, each with a NUL byte (and other control characters) in the id.
NUL_IDS = ["q_%00", "al_%00", "al_%00x", "%00", "al_%0A", "al_%7F"]


@pytest.mark.parametrize("bad", NUL_IDS)
def test_a_nul_byte_in_an_id_is_refused_before_any_query_on_both_stores(served: Served, bad: str) -> None:
    alice = served.caller("alice")
    before = _counts(served)
    answers = [
        served.client.get(f"/v1/quotes/{bad}", headers=alice.auth),
        served.client.get(f"/v1/allocations/{bad}", headers=alice.auth),
        *(served.client.post(f"/v1/allocations/{bad}/{action}", headers=alice.idem(f"k-{action}"))
          for action in ("stop", "start", "terminate")),
        served.client.post(f"/v1/allocations/{bad}/extend", json={"term": "1w"}, headers=alice.idem("k-extend")),
    ]
    for response in answers:
        assert response.status_code in (404, 422), f"{response.request.method} {response.request.url}: {response.status_code} {response.text[:200]}"
        problem_of(response)
    assert _counts(served) == before


@pytest.mark.parametrize("quote_id", ["q_\u0000", "q_\u0000abc", "\u0000", "q_\n", "q_" + "a" * 200])
def test_buying_a_quote_id_with_a_nul_byte_is_a_422_on_both_stores(served: Served, quote_id: str) -> None:
    alice = served.caller("alice")
    before = _counts(served)
    response = served.client.post("/v1/allocations", json={"quote_id": quote_id}, headers=alice.idem("nul-buy"))
    assert response.status_code == 422, response.text[:300]
    assert problem_of(response)["code"] == "invalid_request"
    assert _counts(served) == before


def test_the_services_say_not_found_for_an_impossible_id_without_opening_a_unit_of_work(fixed_clock: Any) -> None:
    """The CLI and the page reach the services directly: the id check is there too, before any query."""
    from anchorgpu.allocations import services
    from anchorgpu.errors import NotFound

    class NoDatabase:
        def __enter__(self) -> Any:
            raise AssertionError("an impossible id reached the database")

        def __exit__(self, *exc: object) -> None:
            return None

    for call in (lambda: services.get_quote(NoDatabase(), account_id="acct_1", quote_id="q_\x00"),  # type: ignore[arg-type]
                 lambda: services.get_allocation(NoDatabase(), account_id="acct_1", allocation_id="al_\x00", clock=fixed_clock),  # type: ignore[arg-type]
                 lambda: services.stop(NoDatabase(), account_id="acct_1", allocation_id="al_\x00", idempotency_key="k", clock=fixed_clock),  # type: ignore[arg-type]
                 lambda: services.buy_quote(NoDatabase(), account_id="acct_1", quote_id="q_\x00", idempotency_key="k", clock=fixed_clock)):  # type: ignore[arg-type]
        with pytest.raises(NotFound):
            call()


def test_pages_with_a_nul_byte_in_an_id_answer_404_on_both_stores(served: Served) -> None:
    client = served.client
    client.follow_redirects = False
    import re

    page = client.get("/signin").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    alice = served.caller("alice")
    signed_in = client.post("/signin", data={"csrf_token": token.group(1), "api_key": alice.api_key})
    assert signed_in.status_code == 303, signed_in.text[:300]
    for path in ("/quotes/q_%00", "/my/allocations/al_%00"):
        response = client.get(path)
        assert response.status_code == 404, f"GET {path}: {response.status_code}"


def test_extending_toward_year_9999_is_a_422_and_a_retry_with_the_same_key_is_not_a_500(served: Served) -> None:
    """Ten-year extensions (the longest term) until the 20-year rule stops them: one line 422, every time."""
    alice = served.caller("alice")
    allocation = served.book(alice, "buy-1")
    path = f"/v1/allocations/{allocation['id']}/extend"
    first = served.client.post(path, json={"term": "87600h"}, headers=alice.idem("ext-1"))
    assert first.status_code == 200, first.text[:300]
    before = _counts(served)
    for attempt in range(2):  # the same key twice: the refusal is not stored as a success nor turned into a 500
        refused = served.client.post(path, json={"term": "87600h"}, headers=alice.idem("ext-2"))
        assert refused.status_code == 422, f"attempt {attempt}: {refused.status_code} {refused.text[:300]}"
        body = problem_of(refused)
        assert body["code"] == "invalid_term" and "20 years" in body["detail"]
    assert _counts(served) == before
    assert served.client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()["ends_at"] == first.json()["ends_at"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"quantity": True}, "quantity"),
        ({"quantity": "3"}, "quantity"),
        ({"quantity": 3.0}, "quantity"),
        ({"options": {"nvme-tb": True}}, "options"),
        ({"offering": "h100-sxm-1x-vm\u0000"}, "offering"),
        ({"region": "us-east\u0000"}, "region"),
        ({"offering": "x" * 101}, "offering"),
    ],
)
def test_quotes_take_strict_types_and_text_without_control_characters(sqlite_served: Served, body: dict[str, Any], field: str) -> None:
    alice = sqlite_served.caller("alice")
    payload = {"offering": "h100-sxm-1x-vm", "term": "1month", **body}
    response = sqlite_served.client.post("/v1/quotes", json=payload, headers=alice.auth)
    assert response.status_code == 422, response.text[:300]
    problem = problem_of(response)
    assert problem["code"] == "invalid_request" and field in problem["detail"]


@pytest.mark.parametrize("term", ["١h", "１h", "٣month", "1\u0660h", "9999999999h"])
def test_terms_take_ascii_digits_only(sqlite_served: Served, term: str) -> None:
    alice = sqlite_served.caller("alice")
    response = sqlite_served.client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "term": term}, headers=alice.auth)
    assert response.status_code == 422, f"{term!r}: {response.status_code} {response.text[:200]}"
    assert problem_of(response)["code"] in ("invalid_term", "invalid_request")


@pytest.mark.parametrize(("body", "field"), [({"zero": True}, "zero"), ({"tp": "2"}, "tp"), ({"tp_overlap": 1}, "tp_overlap"),
                                             ({"model": "llama-3.1-8b\u0000"}, "model")])
def test_plan_requests_are_strict_too(sqlite_served: Served, body: dict[str, Any], field: str) -> None:
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", **body})
    assert response.status_code in (400, 422), response.text[:300]
    problem_of(response)


@pytest.mark.parametrize("number", ["1e309", "NaN", "Infinity", "-1", "1e15000"])
def test_non_finite_or_huge_numbers_in_json_are_refused_in_one_line(sqlite_served: Served, number: str) -> None:
    for path, field in (("/v1/plan", "tokens"), ("/v1/recommend", "max_usd"), ("/v1/recommend", "train_tokens")):
        raw = f'{{"model": "llama-3.1-8b", "task": "train", "{field}": {number}}}'
        response = sqlite_served.client.post(path, content=raw, headers={"content-type": "application/json"})
        assert response.status_code in (400, 422), f"{path} {field}={number}: {response.status_code} {response.text[:200]}"
        problem_of(response)


def test_strictness_keeps_what_is_right_decimal_strings_and_integral_floats_for_floats(sqlite_served: Served) -> None:
    client = sqlite_served.client
    # the integral 1 taken as the float 1.0: TensorRT-LLM's fraction (of the memory its profiling leaves free) may be 1,
    # where vLLM refuses to start at 1 (planner/engine_startup.py: its CUDA context is not free)
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpu_memory_utilization": 1, "engine": "trtllm"}
    assert client.post("/v1/plan", json=body).status_code == 200
    for budget in ("100000", 100000, 100000.5):
        response = client.post("/v1/recommend", json={"model": "llama-3.2-1b", "max_usd": budget, "top": 1, "max_servers": 1})
        assert response.status_code == 200, f"{budget!r}: {response.text[:200]}"


def test_the_page_still_reads_its_text_form_values(sqlite_served: Served) -> None:
    """The page validates the same models with strict=False: its query values are all text."""
    response = sqlite_served.client.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100", "micro_batch": "4", "zero": "1", "task": "train"})
    assert response.status_code == 200, response.text[:300]


def test_options_on_a_collection_lists_every_method_it_takes(sqlite_served: Served) -> None:
    for path, allowed in (("/v1/allocations", "GET, POST"), ("/v1/quotes", "POST"), ("/v1/allocations/al_1/stop", "POST")):
        response = sqlite_served.client.options(path)
        assert response.status_code == 405
        assert response.headers["allow"] == allowed, path
        assert problem_of(response)["code"] == "method_not_allowed"


def test_a_database_outage_answers_503_and_logs_one_line_without_a_traceback(sqlite_served: Served, caplog: pytest.LogCaptureFixture) -> None:
    from fastapi.testclient import TestClient
    from sqlalchemy.exc import OperationalError

    from anchorgpu.api.deps import get_uow_factory

    alice = sqlite_served.caller("alice")

    def gone() -> Any:
        raise OperationalError("SELECT 1", {}, Exception("server closed the connection unexpectedly\n\tThis probably means ..."))

    sqlite_served.app.dependency_overrides[get_uow_factory] = lambda: gone
    # raise_server_exceptions=True: Starlette's last-resort handler re-raises what it handled (and the server
    # then logs it again with a traceback); the 503 must be answered before that handler.
    with caplog.at_level(logging.DEBUG), TestClient(sqlite_served.app, raise_server_exceptions=True) as client:
        response = client.get("/v1/allocations", headers=alice.auth)
    sqlite_served.app.dependency_overrides.clear()
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert problem_of(response)["code"] == "database_unavailable"
    records = [r for r in caplog.records if r.name.startswith(("anchorgpu", "uvicorn"))]
    assert len(records) == 1 and records[0].exc_info is None
    assert "\n" not in records[0].getMessage() and "server closed the connection" in records[0].getMessage()
