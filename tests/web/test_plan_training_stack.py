"""The plan page has the CLI's --train-stack and --train-precision: a PyTorch-native stack is timed as one (the
same figures the API gives), and the Russian page names the fields."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

QUERY = "/plan?model=llama-3.1-8b&task=train&gpu=h100&gpus=8"


def _training_rate(html: str) -> str:
    """The predicted training tokens/s the page shows (the bold figure after "Training")."""
    return re.search(r"<dt>Training</dt><dd><strong>([\d,]+)</strong>", html).group(1)  # type: ignore[union-attr]


def test_the_page_times_the_stack_chosen(client: TestClient) -> None:
    default, pytorch = client.get(QUERY), client.get(QUERY + "&train_stack=pytorch")
    assert default.status_code == pytorch.status_code == 200
    assert _training_rate(default.text) != _training_rate(pytorch.text)
    assert re.search(r'<option value="pytorch"\s+selected', pytorch.text)
    api = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8,
                                        "train_stack": "pytorch"}).json()
    assert f"{api['performance']['train_tokens_per_s']:,.0f}" == _training_rate(pytorch.text)
    fp8 = client.get(QUERY + "&train_precision=fp8")
    assert fp8.status_code == 200 and re.search(r'<option value="fp8"\s+selected', fp8.text)


def test_the_russian_page_names_the_fields(client: TestClient) -> None:
    page = client.get(QUERY, headers={"Accept-Language": "ru"})
    assert "Стек обучения" in page.text and "Точность обучения" in page.text


def test_the_recommend_page_takes_the_stack_too(client: TestClient) -> None:
    query = "/recommend?model=llama-3.1-8b&task=train&train_tokens=1e10&gpu=h100-sxm"
    default, pytorch = client.get(query), client.get(query + "&train_stack=pytorch")
    assert default.status_code == pytorch.status_code == 200
    assert re.search(r'<option value="pytorch"\s+selected', pytorch.text)
    api = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "train_tokens": 10**10,
                                             "gpu": "h100-sxm", "train_stack": "pytorch"}).json()
    first = f"{api['results'][0]['train_tokens_per_s']:,.0f}"
    assert first in pytorch.text and first not in default.text


def test_the_page_plans_the_optimizer_state_and_loss_asked_for(client: TestClient) -> None:
    """--optimizer-state and --cross-entropy on the page: the memory the API gives for the same request (bf16 moments
    and Transformer Engine's 2-byte loss hold less than the defaults), the choice kept selected, the Russian names."""
    query = QUERY + "&zero=1&optimizer_state=bf16-moments&cross_entropy=te"
    page = client.get(query)
    assert page.status_code == 200
    assert re.search(r'<option value="bf16-moments"\s+selected', page.text)
    assert re.search(r'<option value="te"\s+selected', page.text)
    body = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "zero": 1}
    default = client.post("/v1/plan", json=body).json()
    stated = client.post("/v1/plan", json={**body, "optimizer_state": "bf16-moments", "cross_entropy": "te"}).json()
    assert stated["per_gpu"]["total_bytes"] < default["per_gpu"]["total_bytes"]
    assert f"{stated['per_gpu']['total_bytes']:,} bytes" in page.text  # the memory table's exact total
    russian = client.get(query, headers={"Accept-Language": "ru"}).text
    assert "Состояние оптимизатора" in russian and "Функция потерь (кросс-энтропия)" in russian
