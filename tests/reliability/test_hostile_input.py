"""Hostile input at the API: absurd numbers, oversized and malformed bodies, bad headers.

Each request must be refused with a 4xx ``application/problem+json`` whose ``detail`` is one line naming
the reason, and must change nothing in the database. Pages refuse the same numbers with a 4xx page.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from anchorgpu.store.tables import metadata

PLAN = "/v1/plan"
QUOTES = "/v1/quotes"
JSON = {"content-type": "application/json"}
Q = {"offering": "h100-sxm-1x-vm", "term": "1h"}


def _raw(text: bytes) -> dict[str, Any]:
    return {"content": text, "headers": JSON}


# (name, method, path, request kwargs, needs auth, needs idempotency key, expected status or None for any 4xx)
CASES: list[tuple[str, str, str, dict[str, Any], bool, str | None, int | None]] = [
    ("context of 10^18 tokens", "POST", PLAN, {"json": {"model": "llama-3.1-8b", "context": 10**18}}, False, None, 422),
    ("10^9 GPUs", "POST", PLAN, {"json": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 10**9}}, False, None, 422),
    ("NaN utilization", "POST", PLAN, _raw(b'{"model":"llama-3.1-8b","gpu_memory_utilization":NaN}'), False, None, 422),
    ("Infinity utilization", "POST", PLAN, _raw(b'{"model":"llama-3.1-8b","gpu_memory_utilization":Infinity}'), False, None, 422),
    ("negative batch", "POST", PLAN, {"json": {"model": "llama-3.1-8b", "task": "train", "micro_batch": -4}}, False, None, 422),
    ("recommend at 10^18 tokens", "POST", "/v1/recommend", {"json": {"model": "llama-3.1-8b", "context": 10**18}}, False, None, 422),
    ("10^9 servers", "POST", QUOTES, {"json": {**Q, "quantity": 10**9}}, True, None, 422),
    ("negative term", "POST", QUOTES, {"json": {**Q, "term": "-1month"}}, True, None, 422),
    ("zero term", "POST", QUOTES, {"json": {**Q, "term": "0h"}}, True, None, 422),
    ("NaN term", "POST", QUOTES, {"json": {**Q, "term": "NaNh"}}, True, None, 422),
    ("term of 10^19 hours", "POST", QUOTES, {"json": {**Q, "term": "9999999999999999999h"}}, True, None, 422),
    ("NaN servers", "POST", QUOTES, _raw(b'{"offering":"h100-sxm-1x-vm","term":"1h","quantity":NaN}'), True, None, 422),
    ("half a server", "POST", QUOTES, {"json": {**Q, "quantity": 1.5}}, True, None, 422),
    ("negative option units", "POST", QUOTES, {"json": {**Q, "options": {"nvme-tb": -1}}}, True, None, 422),
    ("5000-digit integer", "POST", QUOTES, _raw(b'{"offering":"h100-sxm-1x-vm","term":"1h","quantity":' + b"9" * 5000 + b"}"), True, None, 400),
    ("non-UTF-8 body", "POST", QUOTES, _raw(b'{"offering":"\xff\xfe\xfd","term":"1h"}'), True, None, 400),
    ("100,000-deep nesting", "POST", QUOTES, _raw(b'{"offering":' + b"[" * 100_000 + b"]" * 100_000 + b"}"), True, None, 400),
    ("20 MB body", "POST", QUOTES, _raw(b'{"offering":"' + b"a" * (20 * 1024 * 1024) + b'"}'), True, None, 413),
    ("not JSON", "POST", QUOTES, _raw(b"hello"), True, None, 422),
    ("JSON array", "POST", QUOTES, _raw(b"[1,2,3]"), True, None, 422),
    ("unknown field", "POST", QUOTES, {"json": {**Q, "discount": 100}}, True, None, 422),
    ("300-character idempotency key", "POST", "/v1/allocations", {"json": {"quote_id": "q_x"}}, True, "k" * 300, 400),
    ("non-ASCII idempotency key", "POST", "/v1/allocations", {"json": {"quote_id": "q_x"}}, True, "ключ", 400),
    ("empty idempotency key", "POST", "/v1/allocations", {"json": {"quote_id": "q_x"}}, True, "", 400),
    ("no idempotency key", "POST", "/v1/allocations", {"json": {"quote_id": "q_x"}}, True, None, 400),
    ("extend by 10^18 hours", "POST", "/v1/allocations/al_x/extend", {"json": {"term": "1000000000000000000h"}}, True, "e-1", 422),
    ("5000-character GPU name", "GET", "/v1/gpus/" + "h" * 5000, {}, False, None, 422),
    ("NUL in a model name", "GET", "/v1/models/%00%ff", {}, False, None, 404),
    ("20,000-character search", "GET", "/v1/glossary?q=" + "x" * 20_000, {}, False, None, 422),
    ("NaN price filter", "GET", "/v1/offerings?max_usd_per_gpu_hour=nan", {}, False, None, 422),
    ("infinite price filter", "GET", "/v1/offerings?max_usd_per_gpu_hour=inf", {}, False, None, 422),
    ("400-digit GPU count filter", "GET", "/v1/offerings?min_gpus=" + "9" * 400, {}, False, None, 422),
]


def _counts(engine: Any) -> dict[str, int]:
    with engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one()) for t in metadata.sorted_tables}


@pytest.mark.parametrize(("name", "method", "path", "kwargs", "auth", "key", "status"), CASES, ids=[c[0] for c in CASES])
def test_absurd_or_malformed_input_is_refused_with_a_4xx_reason_and_changes_nothing(
    sqlite_app: Any, name: str, method: str, path: str, kwargs: dict[str, Any], auth: bool, key: str | None, status: int | None
) -> None:
    caller = sqlite_app.caller("mallory")
    kwargs = dict(kwargs)
    headers: dict[str, Any] = dict(kwargs.pop("headers", {}))
    if auth:
        headers.update(caller.auth)
    if key is not None:
        headers["Idempotency-Key"] = key.encode("utf-8")  # sent as raw bytes, as a hostile client can
    before = _counts(sqlite_app.store.engine)
    response = sqlite_app.client.request(method, path, headers=headers, **kwargs)
    assert 400 <= response.status_code < 500, f"{name}: {response.status_code} {response.text[:300]}"
    if status is not None:
        assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == response.status_code and body["code"]
    assert body["detail"] and "\n" not in body["detail"] and len(body["detail"]) < 400
    assert _counts(sqlite_app.store.engine) == before


@pytest.mark.parametrize(
    ("body", "reason"),
    [(b'{"offering":"\xff\xfe","term":"1h"}', "not UTF-8"), (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
     (b'{"quantity":' + b"9" * 5000 + b"}", "too many digits")],
    ids=["non-utf8", "deep", "digits"],
)
def test_an_unreadable_body_is_refused_with_a_reason_that_says_why(sqlite_app: Any, body: bytes, reason: str) -> None:
    caller = sqlite_app.caller("mallory")
    response = sqlite_app.client.post(QUOTES, content=body, headers={**JSON, **caller.auth})
    assert response.status_code == 400
    assert response.json()["code"] == "malformed_body" and reason in response.json()["detail"]


@pytest.mark.parametrize(
    "query",
    ["/plan?model=llama-3.1-8b&context=1000000000000000000", "/plan?model=llama-3.1-8b&gpu_memory_utilization=nan",
     "/catalog?max_usd_per_gpu_hour=nan", "/recommend?model=llama-3.1-8b&context=1000000000000000000"],
)
def test_the_pages_refuse_absurd_numbers_with_a_4xx_page_not_a_crash(sqlite_app: Any, query: str) -> None:
    response = sqlite_app.client.get(query)
    assert 400 <= response.status_code < 500
    assert response.headers["content-type"].startswith("text/html")


def test_an_api_key_of_any_shape_is_refused_with_the_same_401(sqlite_app: Any) -> None:
    caller = sqlite_app.caller("alice")
    answers = set()
    for key in [b"x" * 10_000, b"\xff\xfe", caller.api_key[:-1].encode(), (caller.api_key + "x").encode(), b"agpu_",
                b"' OR '1'='1"]:
        response = sqlite_app.client.get("/v1/allocations", headers={"Authorization": b"Bearer " + key})
        assert response.status_code == 401
        answers.add(response.text)
    assert len(answers) == 1  # no oracle: a near miss reads exactly like garbage
