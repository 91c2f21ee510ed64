"""The recommend page lists what the user must still check, as ``anchorgpu recommend`` does under "Still to check"
(stop 54, branch qa11; issue 11: every estimate says what the user must still check). The page showed only the
answer's own warnings, so a table of MI300X rows never said to check ROCm builds of the dependencies, nor a row of
PCIe GPUs that its tensor parallelism crosses PCIe: the rows' warning codes reached the API's JSON and the CLI only."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from anchorgpu.planner.warnings import WARNING_CODES
from anchorgpu.web.filters import figure
from anchorgpu.web.i18n import PageText
from anchorgpu.web.refusals import said_words

SERVING = {"model": "llama-3.1-70b", "prompt": 2000, "output_tokens": 500, "concurrency": 64, "top": 3}


@pytest.mark.parametrize(("lang", "heading"), [("en", "Still to check yourself"), ("ru", "Что проверить самостоятельно")])
def test_every_rows_warning_code_reaches_the_page_with_its_check_and_rows(client: TestClient, lang: str,
                                                                            heading: str) -> None:
    api = client.post("/v1/recommend", json=SERVING).json()
    rows: dict[str, list[int]] = {}
    for rank, row in enumerate(api["results"], start=1):
        for code in row["warnings"]:
            rows.setdefault(code, []).append(rank)
    assert rows, "the workload was chosen for rows with warnings (MI300X rows: rocm_cuda_only_dependency)"
    page = client.get("/recommend", params={**{k: str(v) for k, v in SERVING.items()}, "lang": lang}).text
    start = page.index('id="checks"')
    assert heading in page[start - 200:start]
    listed = html.unescape(re.sub(r"<[^>]+>", "", page[start:page.index("</ul>", start)]))
    for code, ranks in rows.items():  # each check in the page's language where said (stop 61), else as the CLI says it
        check = said_words(WARNING_CODES[code].check, PageText(lang)) or WARNING_CODES[code].check
        assert f"{check} ({', '.join(f'#{n}' for n in ranks)}) {code}" in listed, (code, listed)
    if lang == "ru":  # the MI300X rows' ROCm check and the PCIe rows' are among the translated ones
        assert "сборка под ROCm" in listed or "через PCIe" in listed, listed


def test_a_whole_answer_warning_is_a_check_too(client: TestClient) -> None:
    page = client.get("/recommend", params={"model": "llama-3.1-70b", "task": "train", "train_tokens": "1e11",
                                            "top": "2"}).text
    start = page.index('id="checks"')
    assert WARNING_CODES["checkpoint_restore_unverified"].check in html.unescape(page[start:page.index("</ul>", start)])


@pytest.mark.parametrize(("lang", "head", "unit"), [("en", "TTFT, s", "s"), ("ru", "TTFT, с", "с")])
def test_each_serving_row_shows_its_ttft_with_band_and_a_ceiling_marked_as_a_lower_bound(
        client: TestClient, lang: str, head: str, unit: str) -> None:
    """The form takes a time-to-first-token limit and the CLI's table has a TTFT column, but the page showed no row's
    TTFT. It stands under the row's per-user rate (a column of its own made the Russian table wider than a laptop's
    screen: tests/browser/test_journeys.py); its roofline ceiling is the shortest time, so it is marked ≥ (a rate's ≤)."""
    body = {**SERVING, "max_ttft_s": 0.5}
    row = client.post("/v1/recommend", json=body).json()["results"][0]
    page = client.get("/recommend", params={**{k: str(v) for k, v in body.items()}, "lang": lang}).text
    assert f">{head}</span></th>" in page
    first = page[page.index('id="rec-1"'):page.index("</tr>", page.index('id="rec-1"'))]
    cells = [re.sub(r"[ \t\n]+", " ", html.unescape(re.sub(r"<[^>]+>", " ", c))).strip()
             for c in re.findall(r"<td[^>]*>(.*?)</td>", first, re.S)]
    shown = figure(lang)  # the page's own number format (two decimals, or two significant digits below 0.1)
    per_user = f"{shown(row['decode_tokens_per_s_per_user'], 1)} {shown(row['decode_tokens_per_s_per_user_low'], 1)}"
    expected = (f"TTFT {shown(row['ttft_s'], 2)}\xa0{unit} {shown(row['ttft_s_low'], 2)}–{shown(row['ttft_s_high'], 2)} "
                f"≥\xa0{shown(row['ttft_s_ceiling'], 2)}")
    assert any(c.startswith(per_user) and expected in c for c in cells), (per_user, expected, cells)
