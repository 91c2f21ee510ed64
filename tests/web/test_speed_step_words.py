"""The plan page's training step: every part in words (English and Russian), its times without exponent forms, and a
refused choice listed in the page's language."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

from anchorgpu.web.i18n import PageText
from anchorgpu.web.planning import step_parts

OFFLOADED = "/plan?model=llama-3.1-8b&task=train&gpu=h200&gpus=1&offload_activation_layers=16&optimizer=adamw-8bit&seq=4096"
LONG_STEP = "/plan?model=llama-3.1-70b&task=train&gpu=h100&gpus=4&offload=optimizer&recompute=full&global_batch=16M"


def _step(html: str) -> str:
    match = re.search(r"<dt>(?:One step|Один шаг)</dt><dd>(.*?)</dd>", html, re.S)
    assert match, "no step line"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(1)))  # the figure, its band and ceiling as read


def test_every_part_of_the_step_has_words(client: TestClient) -> None:
    parts = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8}).json()
    keys = set(parts["performance"]["step_time_breakdown_s"])
    for locale in ("en", "ru"):
        words = step_parts(PageText(locale))
        assert keys <= set(words), keys - set(words)
        assert not any("_" in words[k] for k in keys)


def test_the_activation_offload_part_is_named_on_both_pages(client: TestClient) -> None:
    en = client.get(OFFLOADED + "&lang=en")
    ru = client.get(OFFLOADED + "&lang=ru")
    assert en.status_code == ru.status_code == 200
    assert "activation_offload" not in _step(en.text) and "activation offload to host memory" in _step(en.text)
    assert "activation_offload" not in _step(ru.text) and "выгрузка активаций" in _step(ru.text)


def test_a_long_step_is_written_whole_not_in_exponent_form(client: TestClient) -> None:
    api = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": 4,
                                        "offload": "optimizer", "recompute": "full", "global_batch": 2**24}).json()
    step_s = api["performance"]["step_time_s"]
    assert step_s > 1000
    en = _step(client.get(LONG_STEP + "&lang=en").text)
    assert "e+0" not in en and en.startswith(f"{step_s:,.0f} s")
    ru = _step(client.get(LONG_STEP + "&lang=ru").text)
    figure = ru.split(" с")[0]  # the step itself, before its band
    assert re.sub(r"\D", "", figure) == f"{step_s:.0f}" and "e" not in figure


def test_a_small_part_keeps_three_figures_in_russian(client: TestClient) -> None:
    en, ru = _step(client.get(OFFLOADED + "&lang=en").text), _step(client.get(OFFLOADED + "&lang=ru").text)
    optimizer_en = re.search(r"optimizer step ([\d.]+) s", en)
    optimizer_ru = re.search(r"шаг оптимизатора ([\d,]+) с", ru)
    assert optimizer_en and optimizer_ru
    assert len(optimizer_en.group(1).lstrip("0.")) == 3  # 0.0603, not 0.06
    assert optimizer_ru.group(1) == optimizer_en.group(1).replace(".", ",")


def test_a_refused_choice_is_listed_in_the_page_language(client: TestClient) -> None:
    query = "/plan?model=llama-3.1-8b&task=train&gpu=h100&train_precision=fp16"
    ru = client.get(query + "&lang=ru")
    assert ru.status_code == 422
    error = re.search(r'id="plan-error"[^>]*>(.*?)</div>', ru.text, re.S)
    assert error
    line = html.unescape(error.group(1))
    assert "'fp8' или 'fp4'" in line and " or " not in line
    en = client.get(query + "&lang=en")
    assert "'fp8' or 'fp4'" in html.unescape(en.text)
