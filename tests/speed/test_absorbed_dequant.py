"""SGLang on ROCm dequantises DeepSeek's absorbed MLA weights from FP8 every decode step.

sgl-project/sglang ``python/sglang/srt/models/deepseek_v2.py`` (commits 00114aef19bbb7431b9cfc5a77dce64b9c53ed95 and
3e4a39ee73308590c5c753108bdcb8d333f7f1c6, either side of v0.5.2): ``post_load_weights`` keeps a block-FP8
``kv_b_proj`` in FP8 with one scale off CUDA (``block_quant_to_tensor_quant``), and under ``_is_hip`` the absorbed
products run ``torch.bmm(x.to(torch.bfloat16), self.w_kc.to(torch.bfloat16) * self.w_scale)`` (and ``w_vc``): a cast
and a scale before each product, every step. InferenceMAX's DeepSeek-R1 rows on MI300X/MI325X/MI355X (SGLang v0.5.2,
ROCm 7.0, SGLANG_USE_AITER=1; ``IM-DSR1-MI*``) are timed with them (``absorbed_dequant``), and so is every plan for
SGLang of an FP8 MLA model on an AMD GPU (``serving_setup.sglang_step_terms``); a vLLM plan is not.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.launches import (
    DEQUANT_BYTES_PER_VALUE,
    LayerLaunches,
    absorbed_dequant_bytes,
    launches_per_layer,
)
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict, serve_plan_of
from anchorgpu.planner.speed.serving import decode_step
from anchorgpu.planner.speed.serving_setup import serving_setup

ROCM_DSR1 = ("IM-DSR1-MI300X-1k-1k-C4", "IM-DSR1-MI300X-1k-1k-C16", "IM-DSR1-MI300X-1k-1k-C64",
             "IM-DSR1-MI325X-1k-1k-C4", "IM-DSR1-MI325X-1k-1k-C16", "IM-DSR1-MI355X-1k-1k-C4",
             "IM-DSR1-MI355X-1k-1k-C16", "IM-DSR1-MI300X-8k-1k-C4")


def test_four_kernels_more_per_mla_layer_and_none_without_mla() -> None:
    counts = calibration().launches
    assert counts.mla_absorbed_dequant == LayerLaunches().mla_absorbed_dequant == 4  # cast + scale, twice
    r1 = load_model("deepseek-r1")
    base = launches_per_layer(r1, counts, block_fp8=True)
    assert launches_per_layer(r1, counts, block_fp8=True, absorbed_dequant=True) == pytest.approx(base + 4)
    llama = load_model("llama-3.1-70b")
    assert launches_per_layer(llama, counts, absorbed_dequant=True) == launches_per_layer(llama, counts)


def test_the_bytes_are_the_absorbed_weights_at_eight_bytes_more_a_value() -> None:
    r1 = load_model("deepseek-r1")  # 61 layers x 128 heads x (128 + 128) x 512, split over TP 8
    assert DEQUANT_BYTES_PER_VALUE == 8  # cast writes BF16 (2), scale reads and writes (4), bmm reads BF16 (2)
    assert absorbed_dequant_bytes(r1, 8) == 61 * 128 * 256 * 512 * 8 / 8
    assert absorbed_dequant_bytes(load_model("llama-3.1-8b"), 1) == 0.0


def test_a_fixed_cost_the_same_at_every_batch() -> None:
    """Kernels and bytes that do not depend on the batch: the step grows by the same time at 1 and at 64."""
    p = _serve_plan("IM-DSR1-MI300X-1k-1k-C4")  # SGLang on MI300X: its setup dequantises by itself
    dq = serving_setup(p, prompt_tokens=1024, output_tokens=1024)
    assert dq.absorbed_dequant
    plain = replace(dq, absorbed_dequant=False)
    gaps = [decode_step(p.model, p.gpu, dq, batch=b, cached_tokens=1536).step_s
            - decode_step(p.model, p.gpu, plain, batch=b, cached_tokens=1536).step_s for b in (1, 4, 64)]
    assert gaps[0] == pytest.approx(gaps[1]) == pytest.approx(gaps[2])
    k = calibration().stack(p.gpu)
    gpu = get_gpu("mi300x")
    expected = (61 * k.per_layer_step_s * 4 / LayerLaunches().reference
                + absorbed_dequant_bytes(p.model, 8) / (gpu.memory_bandwidth_bytes_per_s * k.decode_mbu))
    assert gaps[0] == pytest.approx(expected, rel=1e-9)
    assert 1.5e-3 < gaps[0] < 2.2e-3  # ~1.6 ms of launches and ~0.3 ms of traffic on MI300X


def test_only_the_sglang_rocm_deepseek_rows_carry_it_and_each_comes_within_25_percent() -> None:
    runs = {r.id: r for r in load_runs()}
    marked = {i for i, r in runs.items() if r.row.get("absorbed_dequant")}
    assert marked == set(ROCM_DSR1)
    for i in ROCM_DSR1:
        r = runs[i].row
        assert r["engine"] == "sglang" and r["weights"].startswith("fp8") and r["gpu"].startswith("mi3")
        assert abs(predict(runs[i]) / runs[i].value - 1) <= 0.25, i  # -29.1% at MI300X C4 without it


def test_sglang_plans_on_amd_pay_it_once_and_vllm_plans_only_when_told() -> None:
    """An SGLang plan of an FP8 MLA model on an AMD GPU dequantises every step by default (the engine's ``_is_hip``
    branch), and the measured row's explicit flag adds nothing to it (never charged twice); the same row planned for
    vLLM, whose MLA keeps no FP8 absorbed weights to dequantise, pays it only when the flag asks."""
    p = _serve_plan("IM-DSR1-MI300X-1k-1k-C4")
    assert p.workload.engine == "sglang"
    sglang = plan_performance(p)["tpot_s"]
    assert plan_performance(p, absorbed_dequant=True)["tpot_s"] == sglang
    row = next(r.row for r in load_runs() if r.id == "IM-DSR1-MI300X-1k-1k-C4")
    v = serve_plan_of({**row, "engine": "vllm"})
    assert v.workload.engine == "vllm" and not serving_setup(v, prompt_tokens=1024, output_tokens=1024).absorbed_dequant
    assert plan_performance(v)["tpot_s"] == plan_performance(v, absorbed_dequant=False)["tpot_s"]
    assert plan_performance(v, absorbed_dequant=True)["tpot_s"] > plan_performance(v)["tpot_s"]
    # an SGLang plan on an NVIDIA GPU keeps CUDA's path: no dequantisation (the H200 twin of the row)
    h200 = serve_plan_of({**row, "gpu": "h200"})
    assert h200.workload.engine == "sglang"
    assert not serving_setup(h200, prompt_tokens=1024, output_tokens=1024).absorbed_dequant
