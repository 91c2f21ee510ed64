"""With the user's efficiencies (``mfu``, ``mbu``) the plan and recommend pages show the roofline ceiling alone, as the
CLI does ("Speed (with your efficiencies, no calibrated band; roofline bound ...)"), never a band (stop 54, branch qa11).
The answer's ``*_low`` and ``*_high`` are then the prediction itself, and the pages wrote "measured runs like this fell
within 63,759–63,759 tokens/s" under "Speed (calibrated prediction)": a range no measured run made, around figures the
calibration did not give."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

TRAINING = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": "8", "mfu": "0.4", "tokens": "1e10"}


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment)))


@pytest.mark.parametrize(("lang", "heading", "fell", "ceiling", "floor"), [
    ("en", "Speed (with your efficiencies: no calibrated band)", "fell within", "roofline ceiling", "roofline floor"),
    ("ru", "Скорость (с вашими эффективностями: без откалиброванного диапазона)", "укладывались", "потолок roofline",
     "нижняя граница roofline"),
])
def test_the_plan_page_gives_the_ceiling_alone(client: TestClient, lang: str, heading: str, fell: str,
                                               ceiling: str, floor: str) -> None:
    page = client.get("/plan", params={**TRAINING, "lang": lang}).text
    section = _text(page[page.index('id="performance"'):page.index("</section>", page.index('id="performance"'))])
    assert heading in section and fell not in section
    # the tokens/s' ceiling; the training time's, GPU-hours' and step's floor (TFLOP/s and MFU show none)
    assert section.count(ceiling) == 1 and section.count(floor) == 3
    calibrated = client.get("/plan", params={**TRAINING, "mfu": "", "lang": lang}).text
    assert fell in _text(calibrated)


def test_the_recommend_page_gives_the_ceiling_alone(client: TestClient) -> None:
    query = {"model": "llama-3.1-8b", "task": "train", "mfu": "0.4", "top": "2", "train_tokens": "1e10"}
    rows = client.post("/v1/recommend", json={**query, "mfu": 0.4, "top": 2, "train_tokens": 10**10}).json()["results"]
    assert rows[0]["train_tokens_per_s_low"] == rows[0]["train_tokens_per_s_high"]  # the point the page must not show
    page = client.get("/recommend", params=query).text
    table = page[page.index('id="recommendations"'):page.index("</table>", page.index('id="recommendations"'))]
    assert 'class="muted small band"' not in table and table.count('class="muted small ceiling"') == 2 * len(rows)
    assert "no range is given" in _text(page[page.index('id="band-note"'):])[:400]
