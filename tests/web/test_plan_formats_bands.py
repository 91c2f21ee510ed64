"""The plan page's "every weights format on this GPU" table gives each format's speed with its band and its roofline
ceiling marked as a bound, as the plan itself does (stop 54, branch qa11; issue 11: the page shows the prediction
with its band). It showed the bare prediction ("112.7 tokens/s"), with nothing saying how sure it is."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from anchorgpu.web.filters import figure


@pytest.mark.parametrize(("lang", "unit"), [("en", "tokens/s"), ("ru", "токенов/с")])
@pytest.mark.parametrize(("query", "weights", "key", "digits"), [
    ({"model": "llama-3.1-8b", "gpu": "h100", "concurrency": 16}, "fp8", "decode_tokens_per_s_per_user", 1),
    ({"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8}, "bf16", "train_tokens_per_s", 0),
])
def test_each_formats_speed_has_its_band_and_bound(client: TestClient, lang: str, unit: str, query: dict[str, object],
                                                   weights: str, key: str, digits: int) -> None:
    shown = figure(lang)
    page = client.get("/plan", params={**{k: str(v) for k, v in query.items()}, "lang": lang}).text
    start = page.index('id="formats-table"')
    table = page[start:page.index("</table>", start)]
    row = re.search(rf'<a href="[^"]*weights={weights}[^"]*">{weights}</a>.*?</tr>', table, re.S)
    assert row, f"no {weights} row"
    text = re.sub(r"[ \t\n]+", " ", html.unescape(re.sub(r"<[^>]+>", " ", row.group(0))))
    perf = client.post("/v1/plan", json={**query, "weights": weights}).json()["performance"]
    expected = (f"{shown(perf[key], digits)} {unit} {shown(perf[key + '_low'], digits)}–{shown(perf[key + '_high'], digits)} "
                f"≤\xa0{shown(perf[key + '_ceiling'], digits)}")
    assert expected in text, (expected, text)
