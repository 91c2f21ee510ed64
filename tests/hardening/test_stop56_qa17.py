"""Stop 56's second pass over the training answers: qa15's leftovers (benchmarks/hardening/stop56_qa17.md, "qa17").

1. A token count typed well but not whole: the CLI said `--global-batch '4.2M' is 4,404,019.2 (M = 1,048,576), not a
   whole number`, the page only "must be a whole number" and the API (a JSON number 4404019.2) "Input should be a
   whole number of tokens, e.g. 10000000000 or 1e10". Each face now says what the number is.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from cli_runner import run


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(offline=True, rate_limit=False))) as c:
        yield c


def _page_error(page_text: str) -> str:
    found = re.search(r'class="[^"]*error[^"]*"[^>]*>(.*?)</', page_text, re.S)
    assert found, page_text[:400]
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


_8B_TRAIN = "model=llama-3.1-8b&task=train&gpu=h100&gpus=8"


def test_a_fractional_global_batch_is_refused_with_the_clis_reason_on_every_face(
        capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    # 4.2M = 4.2 x 1,048,576 = 4,404,019.2 tokens (the CLI's binary M for token counts: anchorgpu.validation)
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8",
                       "--global-batch", "4.2M")
    assert code == 2 and "is 4,404,019.2 (M = 1,048,576), not a whole number" in err and err.count("\n") == 1, err
    page = client.get(f"/plan?{_8B_TRAIN}&global_batch=4.2M&lang=en")
    assert page.status_code == 422
    assert _page_error(page.text) == "“Global batch (tokens)”: 4.2M is 4,404,019.2 (M = 1,048,576), not a whole number"
    ru = client.get(f"/plan?{_8B_TRAIN}&global_batch=4.2M&lang=ru")
    assert ru.status_code == 422
    assert _page_error(ru.text).endswith(": 4.2M — это 4\xa0404\xa0019,2 (M = 1\xa0048\xa0576), не целое число")
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8,
                                      "global_batch": 4404019.2})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith("body.global_batch: 4,404,019.2 is not a whole number of tokens"), r.json()


def test_training_tokens_in_exponent_form_and_the_recommend_page_too(client: TestClient) -> None:
    page = client.get(f"/plan?{_8B_TRAIN}&tokens=2.5e0&lang=en")
    assert page.status_code == 422 and _page_error(page.text) == "“Training tokens”: 2.5e0 is 2.5, not a whole number"
    rec = client.get("/recommend?model=llama-3.1-8b&task=train&train_tokens=1.0005k&lang=en")  # k = 1,000 here
    assert rec.status_code == 422 and "1.0005k is 1,000.5 (k = 1,000), not a whole number" in _page_error(rec.text)
    # a plain fraction keeps the short reason (a control: the value needs no working out)
    plain = client.get(f"/plan?{_8B_TRAIN}&tokens=1.5&lang=en")
    assert plain.status_code == 422 and _page_error(plain.text) == "“Training tokens”: must be a whole number"
