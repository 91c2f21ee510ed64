"""The GPU list page names, per GPU, the framework that trains in FP8 and in FP4 there (gpus.toml training_stacks and
training_sources, as ``anchorgpu gpus show`` and ``/v1/gpus/{name}`` have them), in English and in Russian."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def _row(html: str, name: str) -> str:
    """The GPU list's row of the GPU called ``name``."""
    match = re.search(rf'<tr>\s*<td>[^<]*<span class="muted small">{re.escape(name)}</span>.*?</tr>', html, re.S)
    assert match, f"no row for {name}"
    return match.group(0)


def test_the_gpu_list_names_each_gpus_fp8_and_fp4_training_framework(client: TestClient) -> None:
    html = client.get("/gpus").text
    assert "<th>FP8 / FP4 training</th>" in html
    # gpus.toml: mi300x trains FP8 with ROCm Transformer Engine (S33) and has no FP4 unit; mi355x trains both (S33)
    mi300x = _row(html, "mi300x")
    assert "FP8: ROCm Transformer Engine<br>FP4: –" in mi300x
    assert re.search(r'<abbr title="ROCm Transformer Engine \(ROCm/TransformerEngine@[^"]+">S33</abbr>', mi300x)
    assert "FP8: ROCm Transformer Engine<br>FP4: ROCm Transformer Engine (MXFP4BlockScaling)" in _row(html, "mi355x")
    # b200 trains both with NVIDIA's Transformer Engine (S32); the A100 has neither unit, and no source to name
    assert "FP8: Transformer Engine<br>FP4: Transformer Engine" in _row(html, "b200")
    a100 = _row(html, "a100-80gb-sxm")
    assert "FP8: –<br>FP4: –" in a100 and "<abbr" not in a100


def test_the_gpu_lists_training_column_is_russian(client: TestClient) -> None:
    html = client.get("/gpus?lang=ru").text
    assert "<th>Обучение в FP8 / FP4</th>" in html
    assert 'FP8: <span lang="en">ROCm Transformer Engine</span><br>FP4: –' in _row(html, "mi300x")  # the data's English, marked (faces60)
