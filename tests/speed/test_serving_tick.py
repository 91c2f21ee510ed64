"""The serving tick restates three helpers inline for speed (the roofline, the ring all-reduce, the stage-to-stage
transfer) and times the prediction and the ceiling in one pass. These tests hold each restatement to the helper it
copies, exactly, so the two cannot drift apart."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import serving as sv
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.dense_step import _dense_step
from anchorgpu.planner.speed.links import ACTIVATION_BYTES, allreduce_s, p2p_s

MODELS = ("llama-3.1-70b", "qwen3-30b-a3b")  # dense, and MoE (the routed-expert share of the weights)
GPUS = ("h100", "mi300x", "rtx-pro-6000")  # NVLink, Infinity Fabric, PCIe


def _setup(tp: int, pp: int) -> sv.ServingSetup:
    return sv.ServingSetup(weights_bytes_per_gpu=20e9, kv_bytes_per_sequence_per_gpu=3e8, precision="fp8", tp=tp,
                           pp=pp, max_num_batched_tokens=8192, gpus_per_server=8)


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("gpu_name", GPUS)
@pytest.mark.parametrize(("tp", "pp"), [(1, 1), (4, 1), (2, 2), (1, 4)])
@settings(max_examples=25, deadline=None)
@given(batch=st.integers(0, 512), prefill=st.sampled_from([0.0, 1.0, 37.5, 2048.0]), padded=st.integers(0, 512),
       skip=st.sampled_from([0.0, 0.999]))
def test_tick_matches_the_helpers_it_restates(model_name: str, gpu_name: str, tp: int, pp: int, batch: int,
                                              prefill: float, padded: int, skip: float) -> None:
    model, gpu, cal = load_model(model_name), get_gpu(gpu_name), calibration()
    setup = _setup(tp, pp)
    c = sv._constants(model, gpu, setup, cal, False)
    ci = sv._constants(model, gpu, setup, cal, True)
    dec, pre = 2e9, 1e9
    t = sv._tick(setup, c, float(batch), prefill, dec, pre, float(padded), ci, head_skip=skip)
    tokens = max(float(batch), float(padded)) + prefill
    message = tokens * model.hidden_size * ACTIVATION_BYTES
    for k, ideal, time_s in ((c, False, t[0]), (ci, True, t[7])):
        alone = sv._tick(setup, k, float(batch), prefill, dec, pre, float(padded), head_skip=skip)
        assert alone[0] == time_s  # the ceiling timed beside the prediction is the ceiling timed alone
        efficiency = 1.0 if ideal else cal.link_efficiency
        comm = 0.0
        if k.link is not None:
            comm = 2 * model.num_layers / pp * allreduce_s(message, tp, k.link, efficiency=efficiency)
        if k.pp_link is not None:
            comm += p2p_s(message, k.pp_link, efficiency=efficiency)
        assert alone[4] == comm
        weights = setup.weights_bytes_per_gpu
        if model.moe is not None:
            weights *= 1 - k.routed_share + k.routed_share * sv.moe_expert_fraction_read(model, tokens)
        matmul_s = tokens * 2.0 * k.matmul_params / (tp * pp) / k.matmul_rate
        matmul_s *= 1.0 + k.expert_share * (sv.expert_rows_factor(tokens, k.route_share, k.expert_half_tokens,
                                                                   k.expert_tile_rows) - 1.0)
        # the prompt tokens the LM head never reaches (speed.flops.unsampled_prompt_share) skip its product
        matmul_s -= prefill * skip * 2.0 * model.vocab_size * model.hidden_size / (tp * pp) / k.head_rate
        assert alone[2] == pytest.approx(sv.soft_roofline(weights / k.mem_rate, matmul_s, k.knee), rel=1e-12)
        assert math.isfinite(alone[0]) and alone[0] >= alone[1] >= 0.0


def test_decode_step_reads_the_same_tick() -> None:
    """The public one-step figure is the tick's: its parts and the elementwise passes make its time."""
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    step = sv.decode_step(model, gpu, _setup(4, 1), batch=32, prefill_tokens=128, prompt_tokens=1024,
                          cached_tokens=1152)
    parts = step.fixed_s + step.weights_s + step.attention_s + step.communication_s
    assert parts < step.step_s < parts * 1.5  # the rest: the elementwise passes between the products
    assert step.bound in ("memory", "compute", "fixed", "host")


@pytest.mark.parametrize("model_name", ("llama-3.1-70b", "qwen3-8b"))
@pytest.mark.parametrize("gpu_name", GPUS)
@pytest.mark.parametrize("tp", (1, 2, 4, 8))
@pytest.mark.parametrize("host_overlap", (True, False))
@pytest.mark.parametrize("engine", ("vllm", "trtllm"))  # TensorRT-LLM: the prompt's attention kernel apart
@settings(max_examples=25, deadline=None)
@given(batch=st.one_of(st.integers(0, 1024), st.floats(0.0, 1024.0)), prefill=st.sampled_from([0, 0.0, 1.0, 37.5, 2048]),
       padded=st.integers(0, 512), pre=st.sampled_from([0.0, 1e9]), skip=st.sampled_from([0.0, 0.999]))
def test_dense_step_is_the_general_step(model_name: str, gpu_name: str, tp: int, host_overlap: bool, engine: str,
                                        batch: float, prefill: float, padded: int, pre: float, skip: float) -> None:
    """The lean step of a dense model on one stage gives exactly what the general step gives: time, bound, ceiling."""
    model, gpu, cal = load_model(model_name), get_gpu(gpu_name), calibration()
    setup = sv.ServingSetup(weights_bytes_per_gpu=20e9, kv_bytes_per_sequence_per_gpu=3e8, precision="fp8", tp=tp,
                            max_num_batched_tokens=8192, gpus_per_server=8, host_overlap=host_overlap, engine=engine)
    c, ci = sv._constants(model, gpu, setup, cal, False), sv._constants(model, gpu, setup, cal, True)
    general = sv._step(setup, c, batch, prefill, 2e9, pre, padded_batch=padded, ceiling=ci, head_skip=skip)
    assert _dense_step(setup, c, batch, prefill, 2e9, pre, padded, ci, head_skip=skip) == (
        general[0], general[5], general[6])
