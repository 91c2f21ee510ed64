"""Bad inputs found in stop 61's pass over the faces as a new user (faces61): each gives one line naming the field in
the face's words, in the page's language on a page, never a Python value or a regular expression."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from cli_runner import run


def _page_error(page: str) -> str:
    found = re.search(r'class="error"[^>]*>(.*?)</(?:p|div)>', page, re.S)
    assert found, page[:500]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).split())


def test_a_diffusion_resolution_too_small_is_written_as_typed(capsys: pytest.CaptureFixture[str],
                                                              client: TestClient) -> None:
    """It said "resolution (1, 1)" (a Python tuple) on the CLI; the API's pattern refused "4x4" as not WIDTHxHEIGHT."""
    code, _, err = run(capsys, "plan", "flux.1-dev", "--resolution", "1x1")
    assert code == 2 and err.strip() == "error: --resolution 1x1: expected WIDTHxHEIGHT in pixels, each at least 8"
    answer = client.post("/v1/plan", json={"model": "flux.1-dev", "resolution": "4x4"})
    assert answer.status_code == 422 and answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["detail"] == "resolution 4x4: expected WIDTHxHEIGHT in pixels, each at least 8"
    assert client.post("/v1/plan", json={"model": "flux.1-dev", "resolution": "8x8", "gpu": "h100"}).status_code == 200
    page = client.get("/plan", params={"model": "flux.1-dev", "resolution": "4x4", "lang": "ru"})
    assert page.status_code == 422
    assert _page_error(page.text).endswith("4x4: ожидается ШИРИНАxВЫСОТА в пикселях, каждая не меньше 8")


def test_an_image_size_refusal_names_its_flag(capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    code, _, err = run(capsys, "plan", "qwen2.5-vl-7b", "--image-resolution", "0x0")
    assert code == 2 and err.strip().startswith("error: --image-resolution 0x0: expected WIDTHxHEIGHT in pixels")
    detail = client.post("/v1/plan", json={"model": "qwen2.5-vl-7b", "image_resolution": "0x0"}).json()["detail"]
    assert detail.startswith("image_resolution 0x0: expected WIDTHxHEIGHT"), detail


@pytest.mark.parametrize(("lang", "reason"), [
    ("en", "“GPU”: must not contain control characters (a NUL, a tab, a line break)"),
    ("ru", "«GPU»: не должно содержать управляющих символов (NUL, табуляции, перевода строки)")])
def test_a_control_character_in_a_field_is_named_not_shown_as_a_pattern(client: TestClient, lang: str,
                                                                         reason: str) -> None:
    """A NUL typed in the form (or the URL) showed pydantic's "String should match pattern '^[^\\x00-…]*$'"."""
    page = client.get(f"/plan?model=llama-3.1-8b&gpu=%00&lang={lang}")
    assert page.status_code == 422 and _page_error(page.text) == reason
    answer = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100\x00"})
    assert answer.status_code == 422
    assert answer.json()["detail"] == "body.gpu: must not contain control characters (a NUL, a tab, a line break)"


def test_a_budget_refusal_is_russian_on_the_russian_page(client: TestClient) -> None:
    """The recommend form's budget below zero was an English clause after the Russian label."""
    page = client.get("/recommend", params={"model": "llama-3.1-8b", "max_usd": "-1", "lang": "ru"})
    assert page.status_code == 422
    assert "'-1': ожидается сумма больше 0 и не больше 1 000 000 000 USD" in _page_error(page.text)
    english = client.get("/recommend", params={"model": "llama-3.1-8b", "max_usd": "-1", "lang": "en"})
    assert "'-1': expected an amount above 0 and at most 1,000,000,000 USD" in _page_error(english.text)


def test_an_unknown_glossary_entry_is_said_in_the_pages_language(client: TestClient) -> None:
    page = client.get("/glossary/zzz", params={"lang": "ru"})
    assert page.status_code == 404 and _page_error(page.text) == "неизвестная статья глоссария 'zzz'"
    assert 'lang="en"' not in page.text[page.text.index('class="error"') - 40:page.text.index('class="error"') + 60]
    english = client.get("/glossary/zzz", params={"lang": "en"})
    assert english.status_code == 404 and _page_error(english.text) == "unknown glossary entry 'zzz'"
    assert client.get("/v1/glossary/zzz").json()["detail"] == "unknown glossary entry 'zzz'"
