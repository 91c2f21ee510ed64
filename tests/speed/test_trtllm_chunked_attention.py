"""Llama 4's chunked-attention layers, read once a query head where TensorRT-LLM's decode falls back to MMHA.

TensorRT-LLM passes Llama 4's ``attention_chunk_size`` (8,192) to its attention op only when the engine's
``max_seq_len`` exceeds it (``Llama4Attention``, NVIDIA/TensorRT-LLM@3a5901cd
tensorrt_llm/_torch/models/modeling_llama.py). In the generation phase the chunk then goes to the XQA dispatcher, which
runs trtllm-gen kernels (they take ``mChunkedAttentionSize``) only on the SM100 family (``xqaDispatcher.cpp``,
``mUseTllmGen(isSM100Family())``); elsewhere the JIT XQA kernels refuse any chunked attention
(``decoderXQAImplJIT/kernelUtils.cpp``, ``supportConfigCommon``: "TODO: chunked attention is not supported yet") and
the op falls back to masked multi-head attention, one block per query head, each reading its KV head's cache.
``speed.chunked_attention``; benchmarks/hardening/stop59_trtmoe.md.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.chunked_attention import chunked_read_factor, chunked_read_scale
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.serving_setup import serving_setup


def _text_model(name: str) -> ModelSpec:
    model = load_model(name)
    assert isinstance(model, ModelSpec)
    return model


SCOUT = _text_model("llama-4-scout-17b-16e")
ROWS = {run.id: run for run in load_runs()}


def _kv_read(gpu_name: str, prompt: int, output: int) -> float:
    p = plan(SCOUT, Workload(concurrency=64, engine="trtllm"), precision=PrecisionPlan(weights="fp8", kv_cache="fp8"),
             layout=Layout(gpus=4, tp=4), gpu=get_gpu(gpu_name), suggest=False)
    return serving_setup(p, prompt_tokens=prompt, output_tokens=output).kv_bytes_per_sequence_per_gpu


def test_hopper_reads_the_chunked_layers_once_a_query_head() -> None:
    # Scout: 40 query heads on 8 KV heads, 36 of 48 layers chunked at 8,192, every fourth (NoPE) layer global
    assert SCOUT.num_attention_heads // SCOUT.num_kv_heads == 5
    assert sum(w is not None for w in SCOUT.layer_windows) == 36
    # 20,000 in / 2,000 out: 21,000 tokens cached on average; the chunked layers hold 8,192 of them
    expected = (12 * 21_000 + 5 * 36 * 8_192) / (12 * 21_000 + 36 * 8_192)
    assert chunked_read_scale(SCOUT, 21_000, 5) == pytest.approx(expected)
    assert _kv_read("h200", 20_000, 2_000) == pytest.approx(_kv_read("b200", 20_000, 2_000) * expected, rel=1e-6)
    assert _kv_read("h100", 20_000, 2_000) == pytest.approx(_kv_read("h200", 20_000, 2_000), rel=1e-6)


@pytest.mark.parametrize(("gpu_name", "prompt", "output", "engine"), [
    ("b200", 20_000, 2_000, "trtllm"),  # SM100: trtllm-gen takes the chunk
    ("gb200", 20_000, 2_000, "trtllm"),
    ("h200", 5_000, 500, "trtllm"),  # max_seq_len 5,500 below the chunk: chunked attention off, XQA as ever
    ("h200", 8_000, 192, "trtllm"),  # exactly one chunk: still off (the engine compares max_seq_len < chunk)
    ("h200", 20_000, 2_000, "vllm"),  # another engine's kernels
])
def test_elsewhere_each_cache_is_read_once(gpu_name: str, prompt: int, output: int, engine: str) -> None:
    gpu = get_gpu(gpu_name)
    assert chunked_read_factor(SCOUT, gpu, engine, prompt + output) == 1


def test_a_model_without_chunked_layers_is_untouched() -> None:
    # gpt-oss's windows are sliding windows, which the JIT XQA kernels take (cyclic_attention_window_size)
    oss = _text_model("gpt-oss-120b")
    assert any(w is not None for w in oss.layer_windows)
    assert chunked_read_factor(oss, get_gpu("h200"), "trtllm", 22_000) == 1


@pytest.mark.parametrize(("row_id", "measured"), [
    ("PL4S-H200-20000/2000", 2105),  # perf-overview.md (00f3768), Llama 4 Scout, H200 TP4 (FP8): +53.0% before
    ("PL4M-H200-20000/2000", 4106),  # the Llama 4 Maverick table, H200 TP8 (FP8): +30.2% before
])
def test_the_long_llama4_rows_on_h200_come_within_25_percent(row_id: str, measured: int) -> None:
    run = ROWS[row_id]
    assert run.value == measured
    assert predict(run) == pytest.approx(run.value, rel=0.25)


@pytest.mark.parametrize("row_id", ["PL4S-B200-20000/2000", "PL4S-GB200-20000/2000", "PL4M-B200-20000/2000"])
def test_the_same_shape_on_blackwell_stays_within_25_percent(row_id: str) -> None:
    run = ROWS[row_id]
    assert predict(run) == pytest.approx(run.value, rel=0.25)


def test_the_sweep_reads_them_as_plan_does() -> None:
    """recommend's vectorized sweep (``sweep_serving_memory.kv_factors``) reads the chunked layers per GPU as plan's
    ``serving_setup`` does: a Hopper row's decode step as plan times it, and slower than a Blackwell row's read once."""
    from dataclasses import replace as _replace

    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner.speed.batching import serving_estimate
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog

    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1)
                   if s.gpu.name in ("h200", "b200") and s.gpus_per_server == 8)
    assert {s.gpu.name for s in shapes} == {"h200", "b200"}
    result = sweep(SCOUT, shapes, SweepSpec(workload=Workload(task="inference", concurrency=16, engine="trtllm"),
                                            prompt_tokens=20_000, output_tokens=2_000, weights=("fp8",),
                                            kv_caches=("fp8",)))
    assert result.prompt_tokens + result.output_tokens > 8_192  # past the chunk (the prompt with its image tokens)
    checked = set()
    for i in range(result.evaluated):
        row = result.row(i)
        if row["ep"] > row["tp"] or row["pp"] != 1 or not row["fits"]:
            continue
        shape = next(s for s in result.shapes if s.id == row["shape"])
        p = plan(SCOUT, Workload(task="inference", concurrency=16, engine="trtllm", prompt_tokens=20_000,
                                 output_tokens=2_000), precision=PrecisionPlan(weights="fp8", kv_cache="fp8"),
                 layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=1, dp=row["dp"],
                               ep=row["ep"] if row["ep"] > 1 else None), gpu=shape.gpu, suggest=False,
                 choose_layout=False)
        prompt, output = result.prompt_tokens, result.output_tokens
        setup = _replace(serving_setup(p, prompt_tokens=prompt, output_tokens=output),
                         gpus_per_server=shape.gpus_per_server)
        est = serving_estimate(SCOUT, shape.gpu, setup, prompt_tokens=prompt, output_tokens=output, concurrency=16,
                               saturation_concurrency=16)
        assert row["decode_tokens_per_s_per_user"] == pytest.approx(1 / est.tpot_s, rel=1e-6)
        checked.add(shape.gpu.name)
    assert checked == {"h200", "b200"}
