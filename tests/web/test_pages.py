"""Pages through TestClient: rendering, sign-in, CSRF, security headers, booking once, the stop statement."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.web.session import COOKIE_NAME, decode_cookie, encode_cookie


@pytest.mark.parametrize("path", ["/", "/plan", "/recommend", "/catalog", "/signin", "/plan?model=llama-3.1-8b&gpu=h100-sxm", "/gpus", "/gpus/compare"])
def test_public_pages_render_with_the_base_layout(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<nav aria-label="Main" id="main-nav">' in response.text


def test_home_offers_the_three_journeys(client: TestClient) -> None:
    html = client.get("/").text
    for text in ("Plan a workload", "Rent capacity", "Learn a concept"):
        assert text in html


def test_pages_carry_a_strict_content_security_policy_and_other_headers(client: TestClient) -> None:
    headers = client.get("/").headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "same-origin"


def test_templates_contain_no_inline_script(client: TestClient) -> None:
    html = client.get("/plan?model=llama-3.1-8b&gpu=h100-sxm").text
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []
    assert " style=" not in html and "onclick" not in html


def test_session_cookie_is_http_only_and_same_site(client: TestClient) -> None:
    cookie = client.get("/").headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(client: TestClient) -> None:
    client.get("/signin")
    response = client.post("/signup", data={"name": "intruder"})
    assert response.status_code == 403
    assert "security token" in response.text


def test_a_post_with_another_sessions_token_is_refused(client: TestClient, field: Any) -> None:
    token = field(client.get("/signin").text, "csrf_token")
    client.cookies.clear()
    client.get("/")  # a new session, with its own token
    assert client.post("/signup", data={"csrf_token": token, "name": "x"}).status_code == 403


def test_a_tampered_session_cookie_is_ignored(client: TestClient, signed_in: str) -> None:
    value = client.cookies[COOKIE_NAME]
    forged = encode_cookie({"account_id": "acct_someone_else", "account_name": "mallory", "csrf": "x"}, "guessed-secret")
    client.cookies.clear()
    client.cookies.set(COOKIE_NAME, forged)
    response = client.get("/my/allocations")
    assert response.status_code == 303 and response.headers["location"].startswith("/signin")
    assert decode_cookie(value, "page-test-secret") is not None


def test_signup_shows_the_key_once_and_signs_in(client: TestClient, signed_in: str) -> None:
    assert signed_in.startswith("agpu_")
    assert client.get("/my/allocations").status_code == 200
    assert signed_in not in client.get("/my/allocations").text
    assert signed_in not in client.cookies[COOKIE_NAME]


def test_sign_in_with_a_key_and_a_wrong_key(client: TestClient, signed_in: str, field: Any) -> None:
    client.post("/signout", data={"csrf_token": field(client.get("/").text, "csrf_token")})
    assert client.get("/my/allocations").status_code == 303
    token = field(client.get("/signin").text, "csrf_token")
    wrong = client.post("/signin", data={"csrf_token": token, "api_key": "agpu_wrong"})
    assert wrong.status_code == 401
    assert "matches no account" in wrong.text
    right = client.post("/signin", data={"csrf_token": token, "api_key": signed_in, "next": "/catalog"})
    assert right.status_code == 303 and right.headers["location"] == "/catalog"


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/\\evil.example"])
def test_sign_in_never_redirects_off_site(client: TestClient, signed_in: str, field: Any, target: str) -> None:
    token = field(client.get("/signin").text, "csrf_token")
    response = client.post("/signin", data={"csrf_token": token, "api_key": signed_in, "next": target})
    assert response.headers["location"] == "/my/allocations"


def test_signup_is_off_for_postgresql_style_deployments(sqlite_url: str, fixed_clock: Any, field: Any) -> None:
    from anchorgpu.api.app import create_app
    from anchorgpu.config import Settings

    app = create_app(Settings(database_url=sqlite_url, offline=True), clock=fixed_clock, session_secret="s", allow_signup=False)
    with TestClient(app) as client:
        page = client.get("/signin").text
        assert "Create account" not in page
        assert client.post("/signup", data={"csrf_token": field(page, "csrf_token"), "name": "x"}).status_code == 403


def test_pages_that_need_an_account_redirect_to_sign_in_and_back(client: TestClient) -> None:
    response = client.get("/quote?offering=h100-sxm-1x-vm")
    assert response.status_code == 303
    assert response.headers["location"] == "/signin?next=%2Fquote%3Foffering%3Dh100-sxm-1x-vm"


def test_planner_page_bad_input_is_a_422_page_with_one_line(client: TestClient) -> None:
    response = client.get("/plan?model=llama-3.1-70b&gpus=0")
    assert response.status_code == 422
    assert "“GPUs”" in re.search(r'id="plan-error">([^<]*)<', response.text).group(1)  # type: ignore[union-attr]


def test_planner_page_unknown_gpu_is_404_with_suggestions(client: TestClient) -> None:
    response = client.get("/plan?model=llama-3.1-8b&gpu=h10")
    assert response.status_code == 404
    assert "did you mean" in response.text


def test_planner_page_draws_the_bar_against_the_gpu_memory(client: TestClient) -> None:
    html = client.get("/plan?model=llama-3.1-8b&gpu=h100-sxm&context=8192").text
    assert 'id="memory-bar"' in html
    assert 'class="limit"' in html
    assert 'rect class="weights"' in html


def test_catalog_page_filters_and_explains_bad_filters(client: TestClient) -> None:
    html = client.get("/catalog?gpu=h100&kind=vm").text
    assert "h100-sxm-1x-vm" in html and "h100-sxm-8x-bm" not in html
    bad = client.get("/catalog?max_usd_per_gpu_hour=cheap")
    assert bad.status_code == 422 and "non-negative amount" in bad.text
    for loose in ("１", "1e3", "1,5", "+3"):  # the one money rule of every face: ASCII digits and one dot
        refused = client.get("/catalog", params={"max_usd_per_gpu_hour": loose})
        assert refused.status_code == 422 and "non-negative amount" in refused.text, loose
    assert client.get("/catalog", params={"max_usd_per_gpu_hour": " 3.00 "}).status_code == 200  # a form's spaces


def test_unknown_page_is_an_html_404(client: TestClient) -> None:
    response = client.get("/nowhere")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")


def _quote(client: TestClient, field: Any) -> tuple[str, str]:
    token = field(client.get("/quote?offering=h100-sxm-1x-vm").text, "csrf_token")
    response = client.post("/quote", data={"csrf_token": token, "offering": "h100-sxm-1x-vm", "quantity": "1", "term": "1month"})
    assert response.status_code == 303
    return response.headers["location"], token


def test_booking_form_resubmitted_books_once(client: TestClient, signed_in: str, field: Any) -> None:
    quote_url, token = _quote(client, field)
    page = client.get(quote_url).text
    key = field(page, "idempotency_key")
    first = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": key})
    second = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": key})
    assert first.status_code == second.status_code == 303
    assert first.headers["location"] == second.headers["location"]
    assert "already made" in client.get(second.headers["location"]).text
    assert client.get("/my/allocations").text.count('class="allocation-row"') == 1


def test_each_rendered_booking_form_gets_its_own_key(client: TestClient, signed_in: str, field: Any) -> None:
    quote_url, _ = _quote(client, field)
    assert field(client.get(quote_url).text, "idempotency_key") != field(client.get(quote_url).text, "idempotency_key")


def test_booking_without_a_key_is_refused(client: TestClient, signed_in: str, field: Any) -> None:
    quote_url, token = _quote(client, field)
    assert client.post(f"{quote_url}/book", data={"csrf_token": token}).status_code == 422
    assert client.get("/my/allocations").text.count('class="allocation-row"') == 0


def test_stopping_from_the_page_states_that_the_term_keeps_running(client: TestClient, signed_in: str, field: Any) -> None:
    quote_url, token = _quote(client, field)
    booked = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": field(client.get(quote_url).text, "idempotency_key")})
    allocation_url = booked.headers["location"]
    page = client.get(allocation_url).text
    ends_at = re.search(r'id="ends-at">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    stop_key = re.search(r'/stop".*?name="idempotency_key" value="([^"]+)"', page, re.S).group(1)  # type: ignore[union-attr]
    response = client.post(f"{allocation_url}/stop", data={"csrf_token": token, "idempotency_key": stop_key})
    assert response.status_code == 303
    after = client.get(allocation_url).text
    assert "Stopping does not pause the paid term" in after
    assert f"still ends at {ends_at}" in after
    assert re.search(r'id="ends-at">([^<]+)<', after).group(1) == ends_at  # type: ignore[union-attr]


def test_another_accounts_allocation_page_is_404(client: TestClient, signed_in: str, field: Any, app: Any) -> None:
    quote_url, token = _quote(client, field)
    booked = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": field(client.get(quote_url).text, "idempotency_key")})
    allocation_url = booked.headers["location"]
    client.cookies.clear()
    other = client.post("/signup", data={"csrf_token": field(client.get("/signin").text, "csrf_token"), "name": "other"})
    assert other.status_code == 201
    assert client.get(allocation_url).status_code == 404
    assert client.get(quote_url).status_code == 404


def test_gpu_comparison_page_shows_ratios_first_over_second(client: TestClient) -> None:
    html = client.get("/gpus/compare?a=h200&b=h100").text
    # 139.80 GiB (an H200 as CUDA reports it, measured: benchmarks/device/h200_2026-12-04.json) vs 79.18 GiB (an H100
    # as CUDA reports it: prime-rl's H100 baselines, gpus.toml): 1.77x
    assert "1.77×" in html
    assert client.get("/gpus/compare?a=h2000&b=h100").status_code == 404


def test_the_stopped_statement_shows_the_end_and_the_amount_as_the_page_does(client: TestClient, signed_in: str, field: Any) -> None:
    # found by QA on the page: the statement repeated the API's raw text ("2026-12-29T18:25:32.102269+00:00", "$2190.00")
    quote_url, token = _quote(client, field)
    booked = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": field(client.get(quote_url).text, "idempotency_key")})
    allocation_url = booked.headers["location"]
    page = client.get(allocation_url).text
    ends_at = re.search(r'id="ends-at">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    amount = re.search(r'id="amount">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    stop_key = re.search(r'/stop".*?name="idempotency_key" value="([^"]+)"', page, re.S).group(1)  # type: ignore[union-attr]
    client.post(f"{allocation_url}/stop", data={"csrf_token": token, "idempotency_key": stop_key})
    client.get(allocation_url)  # shows (and clears) the flash
    statement = re.search(r'id="stop-notice">(.*?)</p>', client.get(allocation_url).text, re.S).group(1)  # type: ignore[union-attr]
    statement = " ".join(statement.split())
    assert statement.startswith("Stopping does not pause the paid term")
    assert f"still ends at {ends_at} " in statement
    assert f"({amount})" in statement and amount.startswith("$")
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", statement)


def test_a_right_aligned_gpu_memory_label_ends_left_of_its_dashed_line(client: TestClient) -> None:
    # found by QA: "GPU memory 80.0 GiB" was drawn across the dashed line it names (llama-3.1-70b, 4 × H100, 8k, 32)
    html = client.get("/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=4&context=8192&concurrency=32").text
    line_x = float(re.search(r'<line class="limit" x1="([\d.]+)%"', html).group(1))  # type: ignore[union-attr]
    label = re.search(r'<text class="limit-label" x="([\d.]+)%" dx="(-?\d+)"[^>]*text-anchor="(\w+)"', html)
    assert label is not None
    assert label.group(3) == "end"  # drawn leftwards from the line's x, 5 px away: it ends before the line
    assert float(label.group(1)) == line_x and int(label.group(2)) < 0


def test_the_catalog_names_every_bare_metal_size_it_lists(client: TestClient) -> None:
    # found by QA: the page said "8-GPU servers are bare metal" / "bare metal (8 GPUs)" beside a 4-GPU gb200 server
    from anchorgpu.catalog import load_catalog

    sizes = sorted({o.gpus for o in load_catalog().offerings if o.kind == "bare-metal"})
    html = client.get("/catalog").text
    said = re.search(r"bare metal \(([^)]*) GPUs\)", html)
    assert said is not None
    assert [int(n) for n in re.findall(r"\d+", said.group(1))] == sizes


def test_one_gpu_is_not_written_as_gpus(client: TestClient, signed_in: str, field: Any) -> None:
    quote_url, token = _quote(client, field)  # h100-sxm-1x-vm: one server of one GPU
    assert "(1 GPU)" in client.get(quote_url).text
    booked = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": field(client.get(quote_url).text, "idempotency_key")})
    page = client.get(booked.headers["location"]).text
    assert "(1 GPU)" in page and "(1 GPUs)" not in page


def test_the_planner_form_takes_the_clis_8k_and_1e12(client: TestClient) -> None:
    # found by QA: README's `--tokens 1e12` typed in the page's "Training tokens" answered
    # "tokens: Input should be a valid integer"; 8k = 8 × 1024 tokens as in `anchorgpu plan --context 8k`
    spelled = client.get("/plan?model=llama-3.1-8b&gpu=h100-sxm&context=8k")
    plain = client.get("/plan?model=llama-3.1-8b&gpu=h100-sxm&context=8192")
    assert spelled.status_code == plain.status_code == 200
    concurrency = re.compile(r'id="max-concurrency">([^<]+)<')
    said = concurrency.search(spelled.text)
    assert said is not None and "at 8,192 tokens" in said.group(1)  # thousands separated, as "Longest context" is
    assert said.group(1) == concurrency.search(plain.text).group(1)  # type: ignore[union-attr]
    trained = client.get("/plan?model=llama-2-7b&task=train&gpu=h200&gpus=64&zero=1&tokens=1e12")
    assert trained.status_code == 200, trained.text[-500:]
    assert 'value="1000000000000"' in trained.text
    assert client.get("/plan?model=llama-2-7b&task=train&gpu=h200&gpus=64&zero=1&tokens=1.5").status_code == 422
    # as on the CLI: training tokens in decimal suffixes (1T = 10^12), a global batch in binary ones (4M = 4,194,304)
    suffixed = client.get("/plan?model=llama-2-7b&task=train&gpu=h200&gpus=64&zero=1&tokens=1T&global_batch=4M")
    assert suffixed.status_code == 200, suffixed.text[-500:]
    assert 'value="1000000000000"' in suffixed.text


def test_recommendations_take_the_training_tokens_the_planner_link_carries(client: TestClient) -> None:
    page = client.get("/recommend?model=llama-3.1-8b&task=train&gpu=h100-sxm&gpus=8&tokens=1e9&term=1w")
    assert page.status_code == 200, page.text[-500:]
    assert 'value="1000000000"' in page.text


def test_the_recommendations_rate_column_says_it_is_the_terms_rate(client: TestClient) -> None:
    # found by QA: the column showed $3.04 for h100-sxm-1x-vm (2,190 / 720 h) under a bare "$/GPU-h" while the
    # catalog shows $3.00 (2,190 / 730 h) and the assumptions call "per GPU-hour" the 730-h rate
    html = client.get("/recommend?model=llama-3.1-8b&task=inference&context=8192&gpu=h100-sxm&term=1month&top=3").text
    head = re.search(r'id="rate-head"[^>]*>([^<]+)<', html)
    assert head is not None and "term" in head.group(1)
    assert "$3.04" in html  # 2,190 / 720, rounded to the cent


def test_the_quote_page_writes_gpu_hours_with_a_thousands_separator(client: TestClient, signed_in: str, field: Any) -> None:
    token = field(client.get("/quote?offering=h100-sxm-8x-bm").text, "csrf_token")
    made = client.post("/quote", data={"csrf_token": token, "offering": "h100-sxm-8x-bm", "quantity": "1", "term": "160h"})
    assert made.status_code == 303
    html = client.get(made.headers["location"]).text
    assert 'id="gpu-hours">1,280<' in html  # 8 GPUs × 160 h
