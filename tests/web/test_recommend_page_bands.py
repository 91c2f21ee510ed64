"""The recommendation table shows each speed with its band, as the plan page does, and the training run time the
API and the CLI give (the predicted hours, not the whole hours the run price bills)."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

from anchorgpu.units import duration_in_unit

TRAIN = {"model": "llama-3.1-70b", "task": "train", "train_tokens": 10**10, "gpu": "h100", "top": 2}
SERVE = {"model": "llama-3.1-70b", "concurrency": 32, "context": 8192, "top": 2}


def _row(html: str, rank: int) -> str:
    match = re.search(rf'<tr id="rec-{rank}">(.*?)</tr>', html, re.S)
    assert match, f"no row {rank}"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1)))


def test_training_rows_show_the_band_and_the_predicted_run_time(client: TestClient) -> None:
    api = client.post("/v1/recommend", json=TRAIN).json()["results"][0]
    page = client.get("/recommend?model=llama-3.1-70b&task=train&tokens=1e10&gpu=h100&top=2&lang=en")
    assert page.status_code == 200
    row = _row(page.text, 1)
    rate = f"{api['train_tokens_per_s']:,.0f} {api['train_tokens_per_s_low']:,.0f}–{api['train_tokens_per_s_high']:,.0f}"
    assert rate in row
    # in the unit plan writes the time in, the band in the same unit (stop 56 qa15: was always hours)
    value, unit = duration_in_unit(api["train_time_s"])
    size = api["train_time_s"] / value
    time = f"{value:,.1f} {unit}"
    band = f"{api['train_time_s_low'] / size:,.1f}–{api['train_time_s_high'] / size:,.1f} {unit}"
    assert f"{time} {band}" in html.unescape(row).replace("\u00a0", " ")
    assert api["run_hours"] != round(api["train_time_s"] / 3600, 1)  # the billed whole hours are not the run time
    assert 'id="band-note"' in page.text


def test_serving_rows_show_the_band_of_both_speeds_in_russian_too(client: TestClient) -> None:
    api = client.post("/v1/recommend", json=SERVE).json()["results"][0]
    en = _row(client.get("/recommend?model=llama-3.1-70b&concurrency=32&context=8192&top=2&lang=en").text, 1)
    total = (f"{api['decode_tokens_per_s_total']:,.0f} {api['decode_tokens_per_s_total_low']:,.0f}–"
             f"{api['decode_tokens_per_s_total_high']:,.0f}")
    user = (f"{api['decode_tokens_per_s_per_user']:,.1f} {api['decode_tokens_per_s_per_user_low']:,.1f}–"
            f"{api['decode_tokens_per_s_per_user_high']:,.1f}")
    assert total in en and user in en
    ru = client.get("/recommend?model=llama-3.1-70b&concurrency=32&context=8192&top=2&lang=ru").text
    assert user.replace(".", ",") in _row(ru, 1)
    note = re.search(r'id="band-note">(.*?)</p>', ru, re.S)
    assert note and "прогноз" in note.group(1)


def test_each_speed_shows_its_roofline_ceiling_beside_the_band_in_both_languages(client: TestClient) -> None:
    """The JSON's ``*_ceiling`` beside each band on the page (a bound, never the answer), English and Russian:
    compact, as "≤ figure" under a rate's band ("≥" under a time's), its words in the tooltip and for screen readers,
    so the table keeps every column on a laptop screen (tests/browser/test_journeys.py)."""
    api = client.post("/v1/recommend", json=TRAIN).json()["results"][0]
    en = client.get("/recommend?model=llama-3.1-70b&task=train&tokens=1e10&gpu=h100&top=2&lang=en").text
    top = f"{api['train_tokens_per_s_ceiling']:,.0f}"
    assert f"roofline ceiling {top}" in _row(en, 1)
    shown = dict(reversed(re.findall(r'data-key="(\w+)" title="[^"]*"><span aria-hidden="true">([^<]*)</span>',
                                     en)))  # the first row's of each key
    assert html.unescape(shown["train_tokens_per_s"]) == f"≤\u00a0{top}"
    value, unit = duration_in_unit(api["train_time_s"])  # the floor in the row's own unit
    floor = api["train_time_s_ceiling"] * value / api["train_time_s"]
    assert html.unescape(shown["train_time_s"]) == f"≥\u00a0{floor:,.1f} {unit}"
    assert f'title="roofline ceiling {top}: the datasheet roofline' in en
    assert "never the answer" in re.search(r'id="band-note">(.*?)</p>', en, re.S).group(1)  # type: ignore[union-attr]
    serve = client.post("/v1/recommend", json=SERVE).json()["results"][0]
    ru = _row(client.get("/recommend?model=llama-3.1-70b&concurrency=32&context=8192&top=2&lang=ru").text, 1)
    user = f"{serve['decode_tokens_per_s_per_user_ceiling']:,.1f}".replace(".", ",")
    assert f"потолок roofline {user}" in ru


def test_a_run_longer_than_any_quotable_term_shows_no_run_price_on_the_page(client: TestClient) -> None:
    """10^15 tokens on Llama 3.1 70B runs for centuries: the API gives no run price and says why (run_refused), and
    the page's run-price cell says the same instead of a nine-figure price no quote can be made for."""
    api = client.post("/v1/recommend", json={**TRAIN, "train_tokens": 10**15})
    assert api.status_code == 200
    first = api.json()["results"][0]
    assert first["run_usd"] is None and first["run_term"] is None and first["run_refused"]
    page = client.get("/recommend?model=llama-3.1-70b&task=train&tokens=1e15&gpu=h100&top=2&lang=en")
    assert page.status_code == 200
    row = _row(page.text, 1)
    assert "over 10 years: no quote prices it" in row and not re.search(r"\$[0-9]{3},[0-9]{3},[0-9]{3}", row)
