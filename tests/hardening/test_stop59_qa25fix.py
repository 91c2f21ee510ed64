"""Stop 59's qa25fix: three leftovers of qa25's pass over the HTTP API (benchmarks/hardening/stop59_qa25.md, "Left";
benchmarks/hardening/stop59_qa25fix.md numbers them as here).

1. A launch recipe's assumptions reached the API in the CLI's flags: ``POST /v1/plan {"model": "llama-3.1-8b", "gpu":
   "l40s", "gpus": 4, ..., "kv_cache": "fp8", "recipe": "trtllm"}`` said "--free_gpu_memory_fraction as planned
   (--engine trtllm)", ``--engine`` being AnchorGPU's flag, not TensorRT-LLM's. The recipe's lines now go through
   the API's wording (``api.words.answer_words``) with the launch's own tool's flags kept (vLLM's
   ``--max-num-batched-tokens`` stays, though ``max_num_batched_tokens`` is a field of the request too).
2. ``gpus compare h200 h100`` (GET /v1/gpus/compare) said "same dense BF16 throughput, so compute-bound work runs at
   about the same speed" with no calibrated prediction beside it, unlike the lines where the datasheets differ
   (qa24, tests/hardening/test_stop59_qa24.py::test_2...); the model predicts 1.03x there.
3. ``pipeline_layout``'s OpenAPI example was DeepSeek-V3's (``Et|(tt|)*30L``, 61 layers) beside the request's
   example model llama-3.1-70b (80 layers), a 422 on it; it is now a layout of Llama-3.1-70B, carried by a whole
   training request of that model, which answers 200.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from cli_runner import run


@pytest.fixture
def client() -> Any:
    with TestClient(create_app(Settings(offline=True, rate_limit=False))) as test_client:
        yield test_client


def _cli_argv(body: dict[str, Any]) -> list[str]:
    """``plan`` with a request body's fields as the CLI's flags (``kv_cache`` → ``--kv-cache``)."""
    argv = ["plan", str(body["model"])]
    for key, value in body.items():
        if key == "model":
            continue
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return [*argv, "--json"]


# 1. The recipe's own lines in the API's words; the CLI keeps its flags; the engine's flags stay on both faces.

_TRTLLM = {"model": "llama-3.1-8b", "gpu": "l40s", "gpus": 4, "prompt": 4000, "output_tokens": 500,
           "concurrency": 64, "kv_cache": "fp8", "recipe": "trtllm", "engine": "trtllm"}
# qa25's request, with the engine named: without it the line names no option but the launch's own engine (stop 60,
# faces60: tests/hardening/test_stop60_faces60.py), so the engine is given here for the line to have a field to name


def test_1_recipe_assumptions_name_the_api_field_not_the_cli_flag(
        client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    api = client.post("/v1/plan", json=_TRTLLM)
    assert api.status_code == 200
    line = next(a for a in api.json()["recipe"]["assumptions"] if "as planned" in a)
    assert line.startswith("--free_gpu_memory_fraction as planned (engine trtllm):"), line  # trtllm-serve's flag kept
    code, out, _ = run(capsys, *_cli_argv(_TRTLLM))
    assert code == 0
    cli = json.loads(out)["recipe"]
    assert any(a.startswith("--free_gpu_memory_fraction as planned (--engine trtllm):") for a in cli["assumptions"])
    # the launch itself is the same on both faces
    assert (api.json()["recipe"]["command"], api.json()["recipe"]["files"]) == (cli["command"], cli["files"])


def test_1_recipe_keeps_the_engines_own_flags_named_as_request_fields(
        client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's ``--max-num-batched-tokens`` is the engine's flag in its launch (the command sets it), though the plan
    request has a field of that name: the API must not write it as the field. Whisper is an encoder-decoder model,
    for which the vLLM recipe says chunked prefill is off (recipes/serving.py)."""
    body = {"model": "whisper-large-v3", "gpu": "h100", "recipe": "vllm"}
    api = client.post("/v1/plan", json=body).json()["recipe"]
    code, out, _ = run(capsys, *_cli_argv(body))
    assert code == 0
    cli = json.loads(out)["recipe"]
    chunked = [a for a in api["assumptions"] if a.startswith("Chunked prefill")]
    assert chunked and "within --max-num-batched-tokens" in chunked[0]
    assert api["assumptions"] == cli["assumptions"]


def test_1_recipe_names_allow_long_context_as_the_field(client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100", "recipe": "vllm", "context": 200000, "allow_long_context": True}
    api = client.post("/v1/plan", json=body).json()["recipe"]["assumptions"]
    assert any("(planned with allow_long_context)" in a for a in api), api
    code, out, _ = run(capsys, *_cli_argv(body))
    assert code == 0
    assert any("(planned with --allow-long-context)" in a for a in json.loads(out)["recipe"]["assumptions"])


# 2. Equal datasheet peaks: the calibrated ratio beside "about the same speed", as where they differ.

@pytest.mark.parametrize(("a", "b", "start", "metric", "what"), [
    ("h200", "h100", "Prefill and training: same dense BF16", "train_8b_tokens_per_s_per_gpu", "8B training tokens/s"),
    ("h800", "h100", "Decode: same memory bandwidth", "serve_8b_tokens_per_s_per_user", "decode tokens/s per user"),
])
def test_2_same_datasheet_lines_give_the_calibrated_ratio(
        client: Any, capsys: pytest.CaptureFixture[str], a: str, b: str, start: str, metric: str, what: str) -> None:
    code, out, _ = run(capsys, "gpus", "compare", a, b, "--json")
    assert code == 0
    answers = {"cli": json.loads(out), "api": client.get("/v1/gpus/compare", params={"a": a, "b": b}).json()}
    for face, answer in answers.items():
        ratio = next(row["ratio"] for row in answer["predicted"] if row["metric"] == metric)  # a / b
        line = next(s for s in answer["statements"] if s.startswith(start))
        assert (f"runs at about the same speed (datasheet; the calibrated model predicts {answer['a']['name']} at "
                f"{ratio:.2f}x the {what} of {answer['b']['name']}, below).") in line, (face, line)


# 3. pipeline_layout's example is a layout of the request example's model, and a whole request carrying it answers.

def test_3_pipeline_layout_example_fits_the_example_model(client: Any) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]["PlanRequest"]
    layout = schema["properties"]["pipeline_layout"]["examples"][0]
    model = schema["properties"]["model"]["examples"][0]
    carrying = [example for example in schema["examples"] if "pipeline_layout" in example]
    assert carrying, "no whole request shows the pipeline_layout example"
    for example in carrying:
        assert (example["pipeline_layout"], example["model"]) == (layout, model)
        answer = client.post("/v1/plan", json=example)
        assert answer.status_code == 200, answer.text[:300]
        assert answer.json()["layout"]["pipeline_layout"] == layout


def test_1_planner_page_launch_names_the_form_field(client: Any) -> None:
    """The planner page's launch (``/plan?...&recipe=trtllm``) says its lines as the plan beside it does, in the form's
    names (the page has an Engine field, no ``--engine`` flag); trtllm-serve's own flag stays."""
    html = client.get("/plan", params={**_TRTLLM, "lang": "en"}).text
    assert "--free_gpu_memory_fraction as planned (engine trtllm):" in html
    assert "(--engine trtllm)" not in html
