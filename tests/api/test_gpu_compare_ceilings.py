"""``gpus compare`` writes each side's prediction with its likely range and, beside them, the roofline ceiling of the
same layout (a bound, never the figure compared): in the API, the CLI table and the page in both languages. The
serving-throughput workload says what its saturation is rather than "engine full"."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.reference import REFERENCE_WORKLOADS, reference_speeds
from cli_runner import run


def test_every_prediction_has_a_ceiling_above_its_range() -> None:
    for name in ("h200", "h100-sxm", "mi300x"):
        for metric, figure in reference_speeds(get_gpu(name)).items():
            if figure.value is None:
                continue
            assert figure.ceiling is not None, (name, metric)
            assert figure.low is not None and figure.high is not None
            assert figure.low <= figure.value <= figure.high <= figure.ceiling, (name, metric)


def test_the_api_gives_the_ceiling_per_side(client: TestClient) -> None:
    data = client.get("/v1/gpus/compare", params={"a": "h200", "b": "h100"}).json()
    for row in data["predicted"]:
        for side in ("a", "b"):
            fig = row[side]
            assert fig["ceiling"] is not None and fig["high"] <= fig["ceiling"], (row["metric"], side)
    schema = client.get("/openapi.json").json()["components"]["schemas"]["SpeedFigureOut"]
    assert "ceiling" in schema["properties"]


def test_the_saturated_workload_says_what_saturation_is() -> None:
    serving = next(ref for ref in REFERENCE_WORKLOADS if ref.metric == "serve_8b_output_tokens_per_s")
    assert "engine full" not in serving.workload
    assert "at saturation (as many requests at once as the GPU's memory" in serving.workload


def test_the_cli_table_shows_each_ceiling(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus", "compare", "h200", "h100")
    assert code == 0
    h200 = reference_speeds(get_gpu("h200"))["serve_8b_output_tokens_per_s"]
    assert h200.ceiling is not None
    assert f"ceiling {h200.ceiling:,.0f}" in re.sub(r"[\s│]+", " ", out)


def test_the_page_shows_each_ceiling_in_both_languages(client: TestClient) -> None:
    h200 = reference_speeds(get_gpu("h200"))["serve_8b_output_tokens_per_s"]
    assert h200.ceiling is not None
    en = html.unescape(client.get("/gpus/compare?a=h200&b=h100-sxm&lang=en").text)
    ru = html.unescape(client.get("/gpus/compare?a=h200&b=h100-sxm&lang=ru").text)
    assert f"roofline ceiling {h200.ceiling:,.0f}" in en
    assert "at saturation (as many requests at once" in en and "engine full" not in en
    assert f"потолок roofline {h200.ceiling:,.0f}".replace(",", "\u00a0") in ru
    assert "в насыщении" in ru
