"""Fused attention timed by head size and sliding window (speed.attention_rate).

Figures: AIConfigurator 0.12.0's measured context-attention tables (PyPI aiconfigurator-core 0.12.0,
systems/data/<gpu>/attention/<engine>/<version>/context_attention_perf.parquet; calibration.json
stated.attention_head_dim_rate and stated.window_attention_extra_tokens give the rows). E.g. GB200, TensorRT-LLM
1.3.0rc20 torch_flow, batch 1, isl 8,192, 64/8 heads: 0.821 ms at head dim 64, 0.941 ms at 128; 0.217 ms at
window 128 and head dim 64."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.attention_rate import (
    attention_rate_ratio,
    head_dim_rate_ratio,
    timed_prefill_attention_flops_per_token,
)
from anchorgpu.planner.speed.calibration import calibration, read_calibration_doc
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.flops import attention_flops_per_token
from anchorgpu.planner.speed.serving import ServingSetup, decode_step
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step


def _measured() -> Calibration:
    """The calibration with stated.attention_head_dim_rate's measured table applied (shipped empty: not applied)."""
    doc = read_calibration_doc()
    table = doc["stated"]["attention_head_dim_rate"]["measured"]
    return replace(calibration(), attention_head_dim_rate={cc: {int(d): float(r) for d, r in by.items()}
                                                           for cc, by in table.items()})


def test_the_head_size_ratios_are_shipped_as_measured() -> None:
    """Applied since stop 52, once TensorRT-LLM's attention-DP balance was modelled (branch oss8k): before, they lost
    two held-out TensorRT-LLM rows (benchmarks/moe_training_findings.md, fourth pass)."""
    assert calibration().attention_head_dim_rate == _measured().attention_head_dim_rate
    assert attention_rate_ratio(load_model("gpt-oss-120b"), get_gpu("gb200"), calibration()) == pytest.approx(0.609)


def test_the_measured_ratios() -> None:
    """Head dim 64 against 128: about 0.77 on Hopper, 0.61 on Blackwell; a 128 head keeps attention_efficiency."""
    cal = _measured()
    oss, llama = load_model("gpt-oss-120b"), load_model("llama-3.1-8b")
    assert attention_rate_ratio(oss, get_gpu("h100"), cal) == pytest.approx(0.766)
    assert attention_rate_ratio(oss, get_gpu("gb200"), cal) == pytest.approx(0.609)
    assert attention_rate_ratio(llama, get_gpu("gb200"), cal) == 1.0
    assert attention_rate_ratio(oss, get_gpu("a100"), cal) == 1.0  # no measurement of Ampere at 64
    assert attention_rate_ratio(oss, get_gpu("mi300x"), cal) == 1.0


def test_head_sizes_between_measured_ones_interpolate() -> None:
    assert head_dim_rate_ratio({64: 0.6, 128: 1.0}, 80) == pytest.approx(0.7)
    assert head_dim_rate_ratio({64: 0.6, 128: 1.0, 256: 1.1}, 512) == 1.1


def test_a_windowed_layer_costs_its_window_plus_the_stated_extra() -> None:
    """gpt-oss: half its layers windowed at 128 tokens; at 8,192 each costs 127.x + 670 pairs a query, not 127.x."""
    model = load_model("gpt-oss-120b")
    extra = calibration().window_attention_extra_tokens
    per_pair = 2.0 * model.num_attention_heads * 2 * model.head_dim
    windowed = sum(1 for w in model.attention_windows if w is not None and w < 8192)
    gap = (timed_prefill_attention_flops_per_token(model, 8192, extra)
           - attention_flops_per_token(model, 8192, causal=True))
    assert extra == 670
    assert gap == pytest.approx(windowed * per_pair * extra)
    # a window as long as the sequence is a full layer: no extra
    assert timed_prefill_attention_flops_per_token(model, 128, extra) == attention_flops_per_token(model, 128, causal=True)


def _oss_compute_s(cal: object) -> float:
    model = load_model("gpt-oss-120b")
    return training_step(model, get_gpu("gb200"), TrainLayout(gpus=64, ep=64, dp=64, zero=1), seq_tokens=8192,
                         global_batch_tokens=64 * 8192, cal=cal).breakdown_s["compute"]  # type: ignore[arg-type]


def test_training_attention_runs_slower_at_head_dim_64_and_with_windows() -> None:
    cal = _measured()
    none = replace(cal, attention_head_dim_rate={}, window_attention_extra_tokens=0.0)
    assert _oss_compute_s(cal) > _oss_compute_s(none)


def test_serving_prefill_attention_runs_slower_at_head_dim_64_and_with_windows() -> None:
    cal = _measured()
    none = replace(cal, attention_head_dim_rate={}, window_attention_extra_tokens=0.0)
    setup = ServingSetup(weights_bytes_per_gpu=60e9, kv_bytes_per_sequence_per_gpu=1e6, tp=1)
    model, gpu = load_model("gpt-oss-120b"), get_gpu("b200")
    step = [decode_step(model, gpu, setup, batch=1, prefill_tokens=8192, prompt_tokens=8192, cal=c).attention_s
            for c in (cal, none)]
    assert step[0] > step[1]


def test_the_shipped_window_extra_alone_slows_training() -> None:
    assert _oss_compute_s(calibration()) > _oss_compute_s(replace(calibration(), window_attention_extra_tokens=0.0))


def test_the_alltoall_share_is_applied_and_slows_a_dispatch() -> None:
    """NCCL 2.29.2 all-to-all on GB200 x 4 reaches 0.52-0.54 of the link (AIConfigurator 0.12.0,
    gb200/comm/nccl/2.29.2/nccl_perf.parquet, alltoall half, 2^27-2^28 elements), not link_efficiency's 0.8; applied
    since stop 52's refit, as read."""
    cal = calibration()
    measured = read_calibration_doc()["stated"]["alltoall_link_efficiency"]["measured"]
    assert measured["gb200"] == 0.53 and cal.alltoall_link_efficiency == {k: float(v) for k, v in measured.items()}
    without = replace(cal, alltoall_link_efficiency={})
    assert _oss_compute_s(cal) == _oss_compute_s(without)  # compute is not the exchange
    model, gpu = load_model("gpt-oss-120b"), get_gpu("gb200")
    lay = TrainLayout(gpus=64, ep=8, dp=64, zero=1)
    ep = [training_step(model, gpu, lay, seq_tokens=8192, global_batch_tokens=64 * 8192, cal=c).breakdown_s
          for c in (without, cal)]
    assert ep[1]["ep_alltoall"] == pytest.approx(ep[0]["ep_alltoall"] * 0.8 / 0.53, rel=0.05)
