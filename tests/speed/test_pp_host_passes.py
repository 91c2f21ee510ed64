"""TensorRT-LLM's pipeline-parallel loop works through every running request once a micro-batch
(speed.engine_terms.host_passes_per_cycle).

Sources: NVIDIA/TensorRT-LLM@9521caf tensorrt_llm/_torch/pyexecutor/py_executor.py ``_executor_loop_pp`` (one loop
iteration per micro-batch, ``num_micro_batches = pp_size``; each iteration calls ``_schedule()`` and
``_handle_responses()`` over ``self.active_requests``), the same loop in the stored 1.0-era copy; the stated host cost
``stated.host_s_per_sequence_step`` (10.7 us a sequence a step on x86, TensorRT-LLM PR #10273 and TransformerEngine
issue #2053). The measured cells are TensorRT-LLM's perf-overview (commit 00f3768), RTX PRO 6000 Server, rows
P70-RTXTP1PP* of ``measured_runs.json``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.engine_terms import host_passes_per_cycle
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.serving import ServingSetup, decode_step


def test_only_trtllm_with_stages_walks_every_request_at_each_micro_batch() -> None:
    assert [host_passes_per_cycle("trtllm", pp) for pp in (1, 2, 4, 8)] == [1, 2, 4, 8]
    assert {host_passes_per_cycle(engine, 8) for engine in ("vllm", "sglang")} == {1}


def test_a_trtllm_pipeline_cycle_waits_for_pp_passes_of_the_host() -> None:
    """Llama-3.3-70B (NVFP4) on eight RTX PRO 6000s, PP 8, 4,096 running sequences: on TensorRT-LLM a cycle (one
    token for each) is at least 8 x 4,096 x 10.7 us = 351 ms of host work, bound 'host'; the same setup on vLLM
    charges the host once a cycle and stays the GPUs'. One stage is unchanged."""
    model, gpu = load_model("llama-3.3-70b"), get_gpu("rtx-pro-6000")
    host = calibration().host_s_per_sequence_step["x86"]
    setup = ServingSetup(
        weights_bytes_per_gpu=6.9e9, kv_bytes_per_sequence_per_gpu=5e6, precision="fp4", pp=8, engine="trtllm"
    )
    trt = decode_step(model, gpu, setup, batch=4096, cached_tokens=192)
    assert trt.bound == "host"
    assert trt.step_s == pytest.approx(8 * 4096 * host, rel=1e-12)
    vllm = decode_step(model, gpu, replace(setup, engine="vllm"), batch=4096, cached_tokens=192)
    assert vllm.bound != "host" and vllm.step_s < trt.step_s
    one = replace(setup, pp=1, weights_bytes_per_gpu=42.7e9)
    assert decode_step(model, gpu, one, batch=512, cached_tokens=192).step_s == pytest.approx(
        decode_step(model, gpu, replace(one, engine="vllm"), batch=512, cached_tokens=192).step_s, rel=1e-12
    )


def test_the_rtx_pp8_rows_meet_the_host_ceiling() -> None:
    """P70-RTXTP1PP8-128/128 measured 11,881 tok/s; the host ceiling of 8 passes is 1 / (8 x 10.7 us) = 11,682, and
    the prediction (22,645 tok/s, +91%, before the passes) is now within 25%, as is 128/2048 (9,833 measured;
    18,533, +88%, before). PP 2 rows, whose cycles are longer than their 2 host passes, are not capped (they take
    the one waited pass of tests/speed/test_pp_host_waits.py: 128/2048 -6.2% -> -10.7%)."""
    runs = {r.id: r for r in load_runs()}
    host = calibration().host_s_per_sequence_step["x86"]
    pp8 = runs["P70-RTXTP1PP8-128/128"]
    assert pp8.value == 11881
    assert predict(pp8) <= 1 / (8 * host) * (1 + 1e-9)
    assert predict(pp8) == pytest.approx(pp8.value, rel=0.25)
    long = runs["P70-RTXTP1PP8-128/2048"]
    assert long.value == 9833 and predict(long) == pytest.approx(long.value, rel=0.25)
    pp2 = runs["P70-RTXTP1PP2-128/2048"]
    assert predict(pp2) < 1 / (2 * host) / 4 and predict(pp2) == pytest.approx(pp2.value, rel=0.15)
