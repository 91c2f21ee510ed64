"""An NVFP4 KV-cache refusal names the engine as it was chosen: ``--engine X`` only where the user gave it; else vLLM
as the default engine, or TensorRT-LLM as the engine of ``--recipe trtllm``. The same on the CLI, the API, the page
and in the assumption a checkpoint's NVFP4 cache falls back with; the way to an engine that runs it is offered.

Before: ``plan llama-3.1-8b --gpu mi300x --kv-cache nvfp4`` said "with --engine vllm", an option nobody gave, and
``--recipe trtllm`` on an AMD GPU said "--engine trtllm: TensorRT-LLM runs on NVIDIA GPUs only".
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.architectures.registry import read_data_text, resolve
from api_fields import as_api
from cli_runner import run
from planner.test_nvfp4_kv_cache import LLAMA_NVFP4_KV

PLAN = ("plan", "llama-3.1-8b", "--kv-cache", "nvfp4", "--json")
DEFAULT = "--kv-cache nvfp4 with vLLM, the default engine: vLLM 0.33.0 reads an NVFP4 KV cache with its FlashInfer"
BY_RECIPE = "--kv-cache nvfp4 with TensorRT-LLM, the engine of --recipe trtllm: TensorRT-LLM runs an NVFP4 KV cache"


def _refusal(capsys: Any, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(("argv", "body", "said", "not_said"), [
    (("--gpu", "mi300x"), {"gpu": "mi300x"}, DEFAULT, "--engine"),
    (("--gpu", "mi300x", "--engine", "vllm"), {"gpu": "mi300x", "engine": "vllm"},
     "--kv-cache nvfp4 with --engine vllm: vLLM 0.33.0", "default"),
    (("--gpu", "h100", "--recipe", "trtllm"), {"gpu": "h100", "recipe": "trtllm"},
     BY_RECIPE + " on Blackwell GPUs only (NVFP4 hardware); h100-sxm has none; use --kv-cache fp8, or --recipe vllm "
     "(vLLM runs it on h100-sxm)", "--engine"),
    (("--gpu", "h100", "--engine", "trtllm"), {"gpu": "h100", "engine": "trtllm"},
     "use --kv-cache fp8, or --engine vllm (vLLM runs it on h100-sxm)", "default"),
])
def test_plan_names_the_engine_as_it_was_chosen(capsys: Any, client: TestClient, argv: tuple[str, ...],
                                                body: dict[str, str], said: str, not_said: str) -> None:
    err = _refusal(capsys, *PLAN, *argv)
    assert said in err and not_said not in err
    response = client.post("/v1/plan", json={"model": "llama-3.1-8b", "kv_cache": "nvfp4", **body})
    assert response.status_code == 422
    detail = response.json()["detail"]
    # the API names its fields (kv_cache, engine, recipe) where the CLI names flags
    assert as_api(said) in detail and detail.startswith("kv_cache nvfp4 with ") and "--" not in detail
    assert (not_said == "default" and "default" not in detail) or not any(f"engine {e}" in detail for e in ("vllm", "trtllm"))


def test_the_page_says_the_default_engine_when_none_was_chosen(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=mi300x&kv_cache=nvfp4&engine=")
    # the form's label for kv_cache (stop 55 qa13); the API says kv_cache
    assert page.status_code == 422 and DEFAULT.replace("--kv-cache", "“KV cache”") in html.unescape(page.text)


def test_recommend_names_the_engine_as_it_was_chosen(capsys: Any, client: TestClient) -> None:
    rec = ("recommend", "llama-3.2-1b", "--gpu", "mi300x", "--top", "1")
    assert "--kv-cache nvfp4 with vLLM, the default engine: no offering considered" in _refusal(
        capsys, *rec, "--kv-cache", "nvfp4")
    assert "--recipe trtllm: no offering considered has an NVIDIA GPU" in _refusal(capsys, *rec, "--recipe", "trtllm")
    assert "--engine trtllm: no offering considered has an NVIDIA GPU" in _refusal(capsys, *rec, "--engine", "trtllm")
    response = client.post("/v1/recommend", json={"model": "llama-3.2-1b", "gpu": "mi300x", "kv_cache": "nvfp4"})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("kv_cache nvfp4 with vLLM, the default engine: no offering")
    code, out, err = run(capsys, "recommend", "llama-3.2-1b", "--kv-cache", "nvfp4", "--top", "1", "--max-servers", "1",
                         "--json")
    assert code == 0, err
    reasons = [r["reason"] for r in json.loads(out)["rejected"] if "nvfp4" in r["reason"]]
    assert reasons and all(r.startswith("--kv-cache nvfp4 with vLLM, the default engine: ") for r in reasons)


def test_plan_refuses_tensorrt_llm_on_amd_naming_the_recipe_that_chose_it(capsys: Any) -> None:
    err = _refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "mi300x", "--recipe", "trtllm")
    assert "--recipe trtllm: TensorRT-LLM runs on NVIDIA GPUs only, not mi300x" in err


def test_the_fallback_assumption_names_the_engine_as_it_was_chosen(tmp_path: Path, capsys: Any) -> None:
    info = resolve("llama-3.1-8b")
    assert info is not None
    (tmp_path / "config.json").write_text(read_data_text(info.file))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(LLAMA_NVFP4_KV))
    for flags, named in ((("--gpu", "mi300x"), "(vLLM, the default engine)"),
                         (("--gpu", "h100", "--recipe", "trtllm"), "(TensorRT-LLM, the engine of --recipe trtllm)"),
                         (("--gpu", "h100", "--engine", "trtllm"), "(--engine trtllm)")):
        code, out, err = run(capsys, "plan", str(tmp_path), "--context", "8192", "--offline", "--json", *flags)
        assert code == 0, err
        (line,) = [a for a in json.loads(out)["assumptions"] if a.startswith("KV cache: ")]
        assert named in line, line
