"""Stop 53, the two API items stop53_qa3.md left (benchmarks/hardening/stop53_qa3.md, section "apidocs"):

1. ``GET /v1/models/{name}`` carried 35 keys its schema did not list (``layers``, ``heads``, ``experts``, ``mla``,
   ``shipped_quantization``, the pipelines' ``components`` …): every key is now in the OpenAPI document with a type and
   a description, one shape per ``kind``, and every registry model's answer validates against it; the answer stays the
   CLI's ``anchorgpu model NAME --json`` document (plus the always-null ``max_context_tokens`` the API always had).
2. API refusals named CLI flags (``--train-precision fp4: …`` on ``POST /v1/plan``): the API writes each ``--flag``
   that is a field of the request as the field (``train_precision fp4: …``); the CLI's lines are unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from anchorgpu.api.errors import api_words
from anchorgpu.architectures import model_infos
from api_fields import as_api
from cli_runner import run_json
from hardening.conftest import Served, cli_refusal, problem_of
from hardening.test_stop53_qa3 import _components, _validator

SCHEMA_OF_KIND = {"language": "LanguageModelOut", "diffusion": "DiffusionPipelineOut"}


def _undocumented_deep(components: dict[str, Any], schema: dict[str, Any], answer: Any, where: str) -> list[str]:
    """Keys of ``answer`` (and of its nested objects) that ``schema`` does not list with a description."""
    if "$ref" in schema:
        return _undocumented_deep(components, components[schema["$ref"].rsplit("/", 1)[1]], answer, where)
    for option in schema.get("anyOf", []):
        if option.get("type") != "null" and answer is not None:
            return _undocumented_deep(components, option, answer, where)
    if isinstance(answer, list) and "items" in schema:
        return [m for item in answer for m in _undocumented_deep(components, schema["items"], item, f"{where}[]")]
    if not isinstance(answer, dict) or "properties" not in schema:
        return []
    missing = []
    for key, value in answer.items():
        prop = schema["properties"].get(key)
        if not (prop or {}).get("description"):
            missing.append(f"{where}.{key}")
        else:
            missing += _undocumented_deep(components, prop, value, f"{where}.{key}")
    return missing


# 1. the model answer -------------------------------------------------------------------------------------------------


def test_every_registry_models_answer_validates_and_documents_every_key(sqlite_served: Served) -> None:
    """Before: 35 keys of a language model's answer (and the pipelines' own) were in no schema. All 111 registry
    entries: dense, MoE, MLA, vision, encoder-decoder, Mamba and hybrids, FP8/MXFP4/NVFP4 checkpoints, pipelines."""
    components = _components(sqlite_served)
    validator = _validator(sqlite_served, "/v1/models/{name}", "get")
    kinds = set()
    for info in model_infos():
        answer = sqlite_served.client.get(f"/v1/models/{info.name}").json()
        kinds.add(answer["kind"])
        assert not [e.message for e in validator.iter_errors(answer)], info.name
        schema = {"$ref": "#/components/schemas/" + SCHEMA_OF_KIND[answer["kind"]]}
        assert _undocumented_deep(components, schema, answer, info.name) == []
    assert kinds == {"language", "diffusion"}


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "gemma-3-27b", "whisper-large-v3",
                                  "t5-base", "jamba-1.5-mini", "mamba-2.8b", "gpt-oss-20b", "deepseek-r1-0528-fp4",
                                  "llama-4-maverick-17b-128e-fp8", "sdxl-base-1.0"])
def test_the_model_answer_is_the_clis_json(sqlite_served: Served, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """The same document on both faces; the API adds only max_context_tokens (always null, deprecated: an older key,
    documented so; the value is context_length). A pipeline's state_bytes_per_sequence, null on the API before, is
    now on the CLI's JSON too."""
    answer = sqlite_served.client.get(f"/v1/models/{name}").json()
    assert answer.pop("max_context_tokens") is None
    assert answer == run_json(capsys, "model", name)


def test_the_schema_is_one_shape_per_kind(sqlite_served: Served) -> None:
    components = _components(sqlite_served)
    language, pipeline = components["LanguageModelOut"], components["DiffusionPipelineOut"]
    assert {"layers", "heads", "kv_heads", "experts", "mla", "shipped_quantization", "encoder"} <= set(language["required"])
    assert {"components", "latent_shape", "denoiser_tokens"} <= set(pipeline["required"])
    assert language["properties"]["max_context_tokens"]["deprecated"] is True
    assert language["properties"]["experts"]["anyOf"][1] == {"type": "null"}  # null for a dense model


# 2. refusals name the request's fields --------------------------------------------------------------------------------


def test_a_training_refusal_names_the_field(sqlite_served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "--train-precision fp4: h100-sxm has no FP4 tensor cores" on POST /v1/plan."""
    cli = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--train-precision", "fp4")
    assert cli == "error: --train-precision fp4: h100-sxm has no FP4 tensor cores\n"  # the CLI's line, unchanged
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": "train",
                                                           "train_precision": "fp4"})
    assert response.status_code == 422
    assert problem_of(response)["detail"] == "train_precision fp4: h100-sxm has no FP4 tensor cores"


def test_a_latency_limit_on_a_training_task_names_the_field(sqlite_served: Served,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "--max-ttft-s 1 applies to serving …" on POST /v1/recommend."""
    cli = cli_refusal(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--max-ttft-s", "1")
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "max_ttft_s": 1})
    detail = problem_of(response)["detail"]
    assert response.status_code == 422 and detail.startswith("max_ttft_s 1 applies to serving a language model")
    assert "task train serves no requests" in detail and "--" not in detail
    assert as_api(cli.removeprefix("error: ").rstrip("\n"), "/v1/recommend") == detail  # the CLI keeps --max-ttft-s


def test_an_ep_below_tp_on_vllm_names_the_fields_and_keeps_vllms_own_flag(sqlite_served: Served,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "--ep 2 with TP 4 on vLLM … give --engine trtllm or sglang …, --ep 4 or --tp 2 …". vLLM's own
    --enable-expert-parallel is no field of the request and stays as vLLM spells it."""
    argv = ("plan", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "4", "--tp", "4", "--ep", "2")
    cli = cli_refusal(capsys, *argv)
    assert cli.startswith("error: --ep 2 with TP 4 on vLLM (the default engine): its --enable-expert-parallel")
    response = sqlite_served.client.post("/v1/plan", json={"model": "qwen3-30b-a3b", "gpu": "h100", "gpus": 4, "tp": 4,
                                                           "ep": 2})
    detail = problem_of(response)["detail"]
    assert detail.startswith("ep 2 with TP 4 on vLLM (the default engine): its --enable-expert-parallel splits")
    assert "give engine trtllm or sglang" in detail and "ep 4 or tp 2 (EP equal to TP)" in detail
    assert detail == as_api(cli.removeprefix("error: ").rstrip("\n"))


@pytest.mark.parametrize(("path", "body", "said"), [
    ("/v1/recommend", {"model": "llama-3.1-8b", "task": "train", "train_tokens": 1000, "global_batch": 4_194_304},
     "tokens 1,000 is less than one optimizer step of global_batch 4,194,304 tokens"),  # its field since stop 59
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "task": "lora", "offload_activation_layers": 2},
     "offload_activation_layers offloads full training's activations (task train), not task lora"),
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "task": "train", "gpus": 8, "tokens": 1000},
     "tokens 1,000 is less than one optimizer step"),
])
def test_a_flag_the_api_names_otherwise_is_written_as_its_field(sqlite_served: Served, path: str,
                                                                body: dict[str, Any], said: str) -> None:
    """--tokens is the field tokens on both routes (recommend's was train_tokens, still accepted as its alias: stop 59's
    qafix); plan's --offload-activations is offload_activation_layers."""
    response = sqlite_served.client.post(path, json=body)
    assert response.status_code == 422 and said in problem_of(response)["detail"], response.text[:300]
    assert "--" not in problem_of(response)["detail"]


def test_only_the_request_fields_are_rewritten() -> None:
    fields = frozenset({"kv_cache", "engine", "tp"})
    line = "--kv-cache fp8 with --engine vllm: vLLM's --kv-cache-dtype fp8; --tp-size 2 (SGLang), --tp 2, x--tp"
    assert api_words(line, fields) == "kv_cache fp8 with engine vllm: vLLM's --kv-cache-dtype fp8; --tp-size 2 (SGLang), tp 2, x--tp"
    assert api_words(line, frozenset()) == line
