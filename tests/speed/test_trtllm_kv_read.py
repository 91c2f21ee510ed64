"""TensorRT-LLM's decode attention reads a mixture of experts' FP8 KV cache at its measured share of the bandwidth.

The shares are read from AIConfigurator 0.12.0's measured kernel tables (``systems/data/<gpu>/attention/trtllm/
1.3.0rc20/generation_attention_perf.parquet``; benchmarks/moe_small_batch_findings.md, Stop 55): about 0.68 of the
bandwidth on B200/GB200, 0.73 on H200, 0.80 on H100, where the planner's fitted ``decode_mbu`` is 0.875.
``engine_terms.trtllm_kv_read_fraction``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed import step_constants
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.engine_terms import trtllm_kv_read_fraction
from anchorgpu.planner.speed.serving import decode_step
from anchorgpu.planner.speed.serving_setup import serving_setup


def _setup(model_name: str, gpu_name: str, kv_cache: str, engine: str):
    model, gpu = load_model(model_name), get_gpu(gpu_name)
    p = plan(model, Workload(concurrency=64), precision=PrecisionPlan(weights="fp8", kv_cache=kv_cache),
             layout=Layout(gpus=1, tp=1), gpu=gpu, suggest=False)
    return model, gpu, serving_setup(p, prompt_tokens=4096, output_tokens=1024, engine=engine)


def test_the_shares_are_stated_data_with_their_source() -> None:
    doc = json.loads(resources.files("anchorgpu.planner.speed").joinpath("data/calibration.json").read_text())
    stated = doc["stated"]["trtllm_decode_attention_kv_fraction"]
    assert "generation_attention_perf.parquet" in stated["source"] and "AIConfigurator 0.12.0" in stated["source"]
    assert calibration().trtllm_decode_attention_kv_fraction == stated["value"]
    assert all(0.5 < share < 1.0 for share in stated["value"].values())
    assert all("trtllm_decode_attention_kv_fraction" not in body for body in doc["stacks"].values())  # not fitted


def test_a_trtllm_fp8_cache_is_read_at_the_stated_share() -> None:
    model, gpu, setup = _setup("qwen3-30b-a3b", "h200", "fp8", "trtllm")
    assert setup.kv_fp8
    cal = calibration()
    share = cal.trtllm_decode_attention_kv_fraction["h200"]
    assert trtllm_kv_read_fraction(model, gpu, setup, cal) == share
    c, ceiling = step_constants._pair(model, gpu, setup, cal)
    assert c.kv_rate == pytest.approx(gpu.memory_bandwidth_bytes_per_s * share)
    assert ceiling.kv_rate == ceiling.mem_rate  # the roofline reads at the datasheet's bandwidth
    # a KV-bound step: the KV read takes the mem_rate / kv_rate longer than on vLLM's kernels
    trt = decode_step(model, gpu, setup, batch=256, cached_tokens=8192, cal=cal)
    vllm = decode_step(model, gpu, replace(setup, engine="vllm"), batch=256, cached_tokens=8192, cal=cal)
    assert trt.attention_s == pytest.approx(vllm.attention_s * c.mem_rate / c.kv_rate)
    assert trt.weights_s == vllm.weights_s


@pytest.mark.parametrize(("model_name", "gpu_name", "kv_cache", "engine"), [
    ("qwen3-30b-a3b", "h200", "fp8", "vllm"),  # another engine's kernels
    ("qwen3-30b-a3b", "h200", "bf16", "trtllm"),  # a 16-bit cache: not stated
    ("qwen3-30b-a3b", "a100-80gb-sxm", "fp8", "trtllm"),  # a GPU without a figure
    ("llama-3.1-8b", "h200", "fp8", "trtllm"),  # a dense model: its fitted decode_mbu carries its KV read
])
def test_elsewhere_the_kv_cache_is_read_at_decode_mbu(model_name: str, gpu_name: str, kv_cache: str,
                                                      engine: str) -> None:
    model, gpu, setup = _setup(model_name, gpu_name, kv_cache, engine)
    cal = calibration()
    assert trtllm_kv_read_fraction(model, gpu, setup, cal) == 0.0
    c, _ = step_constants._pair(model, gpu, setup, cal)
    assert c.kv_rate == c.mem_rate


def test_setups_differing_only_in_the_kv_dtype_do_not_share_constants() -> None:
    model, gpu, setup = _setup("qwen3-30b-a3b", "b200", "fp8", "trtllm")
    cal = calibration()
    step_constants._STEP_MEMO.clear()
    fp8 = step_constants._pair(model, gpu, setup, cal)
    other = step_constants._pair(model, gpu, replace(setup, kv_fp8=False), cal)
    assert fp8[0].kv_rate < other[0].kv_rate == other[0].mem_rate
