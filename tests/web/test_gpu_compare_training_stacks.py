"""The GPU compare page has the GPU list's "FP8 / FP4 training" cell for each GPU (the same macro, _training_cell.html,
and the same ``training_units``), in English and in Russian, and agrees with ``GET /v1/gpus/compare``."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def _training_row(html: str) -> str:
    match = re.search(r'<tr id="training">.*?</tr>', html, re.S)
    assert match, "no training row"
    return match.group(0)


def test_the_compare_page_names_each_gpus_fp8_and_fp4_training_framework(client: TestClient) -> None:
    row = _training_row(client.get("/gpus/compare", params={"a": "mi355x", "b": "h100"}).text)
    assert "<th>FP8 / FP4 training</th>" in row
    # gpus.toml: mi355x trains both with ROCm Transformer Engine (S33); h100 FP8 with Transformer Engine (S32), no FP4
    mi355x, h100 = re.findall(r'<td class="small breakable">(.*?)</td>', row, re.S)
    assert "FP8: ROCm Transformer Engine<br>FP4: ROCm Transformer Engine (MXFP4BlockScaling)" in mi355x
    assert re.search(r'<abbr title="ROCm Transformer Engine \(ROCm/TransformerEngine@[^"]+">S33</abbr>', mi355x)
    assert "FP8: Transformer Engine<br>FP4: –" in h100 and ">S32</abbr>" in h100
    assert '<td class="num">–</td>' in row  # no ratio of two frameworks


def test_the_compare_pages_cell_is_the_gpu_lists(client: TestClient) -> None:
    row = _training_row(client.get("/gpus/compare", params={"a": "mi300x", "b": "a100"}).text)
    listing = client.get("/gpus").text
    for name in ("mi300x", "a100-80gb-sxm"):
        cell = re.search(
            rf'<span class="muted small">{name}</span>.*?<td class="small breakable">(.*?)</td>', listing, re.S
        )
        assert cell and f'<td class="small breakable">{cell.group(1)}</td>' in row
    assert "FP8: –<br>FP4: –</td>" in row  # the A100: neither unit, no source


def test_the_compare_pages_training_row_is_russian(client: TestClient) -> None:
    row = _training_row(client.get("/gpus/compare", params={"a": "mi300x", "b": "h100", "lang": "ru"}).text)
    assert "<th>Обучение в FP8 / FP4</th>" in row
    assert 'FP8: <span lang="en">ROCm Transformer Engine</span><br>FP4: –' in row  # the data's English, marked (faces60)
