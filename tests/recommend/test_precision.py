"""Recommendations keep the plan's precision (issue 14, item 2).

The reference is ``plan()`` itself: with no ``--weights`` it answers in the checkpoint's shipped format and a
bf16 KV cache, so every recommended row does the same unless lower precisions are listed or allowed; those
rows say that outputs change. The CLI, the API and the page share the default. Diffusion pipelines get
recommendations that agree with ``plan()`` on each offering's GPU.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.cli import main
from anchorgpu.config import Settings
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.formats import format_for_model, shipped_format
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json
from anchorgpu.recommend.precision import LOWER_PRECISION_NOTE

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CATALOG = load_catalog()
SERVE_8K = SweepSpec(workload=Workload(task="inference", context_tokens=8192))


@pytest.fixture
def client(sqlite_url: str, fixed_clock: Any) -> Iterator[TestClient]:
    app = create_app(Settings(database_url=sqlite_url, offline=True), clock=fixed_clock, session_secret="t")
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("name", ["llama-3.1-70b", "deepseek-v3", "gpt-oss-20b"])
def test_by_default_every_row_has_the_weights_and_kv_cache_plan_answers_with(name: str) -> None:
    model = load_model(name)
    planned = plan(model, Workload(task="inference", context_tokens=8192))
    rec = recommend(model, SERVE_8K, CATALOG, "1month", NOW, top=20)
    assert rec.results
    for option in rec.results:
        assert option.config["weights"] == planned.precision.weights == shipped_format(model).name
        assert option.config["kv_cache"] == planned.precision.kv_cache == "bf16"
        assert not option.lower_precision and "precision_below_checkpoint" not in option.codes
    assert rec.assumptions[0].startswith(f"The plan's precision: weights {shipped_format(model).name}")


def test_the_shipped_fp8_of_deepseek_v3_is_not_flagged_as_an_unchecked_quantization() -> None:
    rec = recommend(load_model("deepseek-v3"), SERVE_8K, CATALOG, "1month", NOW, top=5)
    assert all("quantization_quality_unchecked" not in o.codes for o in rec.results)


def test_allowing_lower_precision_adds_cheaper_rows_each_saying_outputs_change() -> None:
    model = load_model("llama-3.1-70b")
    kept = recommend(model, SERVE_8K, CATALOG, "1month", NOW, top=50)
    allowed = recommend(model, SERVE_8K, CATALOG, "1month", NOW, top=50, lower_precision=True)
    assert allowed.results[0].total_usd < kept.results[0].total_usd  # a 4-bit row fits a single cheaper GPU
    lowered = [o for o in allowed.results if o.lower_precision]
    assert lowered
    for option in allowed.results:
        below = (option.config["kv_cache"] == "fp8"
                 or format_for_model(model, option.config["weights"]).linear_bits < 16)
        assert option.lower_precision is below
        assert ("precision_below_checkpoint" in option.codes) is below
    row = recommendation_to_json(allowed)["results"][0]
    assert row["lower_precision"] is True and row["precision_note"] == LOWER_PRECISION_NOTE
    assert "outputs change" in LOWER_PRECISION_NOTE and "evaluations" in LOWER_PRECISION_NOTE


def test_a_weights_list_sweeps_those_formats_and_flags_the_lower_ones(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["recommend", "llama-3.1-70b", "--context", "8k", "--weights", "bf16,int4-awq", "--top", "30", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["weights"] for r in data["results"]} <= {"bf16", "int4-awq"}
    assert any(r["weights"] == "int4-awq" for r in data["results"])
    assert any("weights bf16, int4-awq" in a for a in data["assumptions"])
    assert all(r["lower_precision"] is (r["weights"] == "int4-awq") for r in data["results"])
    assert all(r["kv_cache"] == "bf16" for r in data["results"])


def test_cli_api_and_page_share_the_default_and_the_allowance(client: TestClient,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    for extra, api_extra, page_extra in (([], {}, ""), (["--lower-precision"], {"lower_precision": True},
                                                        "&lower_precision=on")):
        assert main(["recommend", "llama-3.1-70b", "--context", "8192", "--top", "5", "--json", *extra]) == 0
        cli = json.loads(capsys.readouterr().out)["results"]
        api = client.post("/v1/recommend", json={"model": "llama-3.1-70b", "context": 8192, "top": 5, **api_extra})
        assert api.status_code == 200
        rows = api.json()["results"]
        assert [(r["offering"], r["servers"], r["weights"], r["kv_cache"]) for r in rows] == \
            [(r["offering"], r["servers"], r["weights"], r["kv_cache"]) for r in cli]
        page = client.get(f"/recommend?model=llama-3.1-70b&context=8192&top=5{page_extra}")
        assert page.status_code == 200
        assert page.text.count("badge warn lower-precision") == sum(r["lower_precision"] for r in rows)
        assert ("rerun your evaluations" in page.text) is any(r["lower_precision"] for r in rows)
    assert 'name="lower_precision"' in page.text and "checked" in page.text


def test_the_planners_fit_this_link_keeps_the_precision_chosen_on_the_plan(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-70b&gpu=h100&gpus=8&context=8192&weights=fp8")
    link = re.search(r'href="(/recommend\?[^"]*)"', page.text)
    assert link
    rec = client.get(link.group(1).replace("&amp;", "&"))
    assert rec.status_code == 200
    weights = set(re.findall(r"<td[^>]*>([a-z0-9-]+) / kv (?:bf16|fp8)", rec.text))
    assert weights == {"fp8"}


def test_a_diffusion_pipeline_gets_recommendations_that_agree_with_plan_on_each_gpu(client: TestClient) -> None:
    pipe = load_model("flux.1-dev")
    response = client.post("/v1/recommend", json={"model": "flux.1-dev", "images": 2, "resolution": "1024x1024",
                                                  "top": 50})
    assert response.status_code == 200
    data = response.json()
    assert data["results"] and data["workload"]["task"] == "diffusion"
    totals = [float(r["total_usd"]) for r in data["results"]]
    assert totals == sorted(totals)
    work = Workload(task="diffusion", images=2, resolution=(1024, 1024))
    for row in data["results"]:
        planned = plan(pipe, work, layout=Layout(gpus=1), gpu=get_gpu(row["gpu"]))
        assert planned.fits and row["per_gpu_total_bytes"] == planned.per_gpu.total_bytes
        assert row["layout"]["dp"] == row["gpus"]  # one replica per GPU
    for rejected in data["rejected"]:
        offering = CATALOG.offering(rejected["offering"])
        assert not plan(pipe, work, layout=Layout(gpus=1), gpu=get_gpu(offering.gpu)).fits
        assert rejected["reason"].startswith("does not fit")
    assert any("ranked by the total" in a for a in data["assumptions"])


def test_the_fit_this_link_of_a_diffusion_plan_ends_in_recommendations_not_an_error(client: TestClient) -> None:
    page = client.get("/plan?model=sdxl-base-1.0&gpu=l4&resolution=1024x1024&images=2")
    link = re.search(r'href="(/recommend\?[^"]*)"', page.text)
    assert link
    rec = client.get(link.group(1).replace("&amp;", "&"))
    assert rec.status_code == 200 and 'id="recommendations"' in rec.text and "Replicas" in rec.text


def test_a_refused_recommendation_links_back_to_the_planner(client: TestClient) -> None:
    page = client.get("/recommend?model=llama-3.1-70b&term=5x")
    assert page.status_code == 422
    assert re.search(r'<a href="/plan\?model=llama-3.1-70b&amp;term=5x">[^<]*planner', page.text)


@pytest.mark.parametrize(("argv", "needle"), [
    (["recommend", "flux.1-dev", "--task", "train"], "diffusion pipeline"),
    (["recommend", "flux.1-dev", "--resolution", "0x0"], "resolution"),
    (["recommend", "llama-3.1-8b", "--images", "4"], "diffusion pipelines"),
])
def test_diffusion_refusals_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and needle in err and "\n" not in err


def test_the_api_refuses_image_options_for_a_language_model(client: TestClient) -> None:
    response = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "images": 4})
    assert response.status_code == 422 and "diffusion pipelines" in response.json()["detail"]
