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
    for code, ranks in rows.items():
        assert f"{WARNING_CODES[code].check} ({', '.join(f'#{n}' for n in ranks)}) {code}" in listed, (code, listed)


def test_a_whole_answer_warning_is_a_check_too(client: TestClient) -> None:
    page = client.get("/recommend", params={"model": "llama-3.1-70b", "task": "train", "train_tokens": "1e11",
                                            "top": "2"}).text
    start = page.index('id="checks"')
    assert WARNING_CODES["checkpoint_restore_unverified"].check in html.unescape(page[start:page.index("</ul>", start)])
