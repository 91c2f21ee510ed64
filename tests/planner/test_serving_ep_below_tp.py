"""A serving EP smaller than TP (``--tp 8 --ep 4``), planned as TensorRT-LLM and SGLang run it: EP x expert TP = TP
(TensorRT-LLM ``moe_tp_size x moe_ep_size = tp_size``, NVIDIA/TensorRT-LLM@05ebebb tensorrt_llm/mapping.py; SGLang
``num_local_experts = num_experts // moe_ep_size`` with ``intermediate_size // moe_tp_size``, sgl-project/sglang@008d7d0
python/sglang/srt/layers/moe/fused_moe_triton/layer.py), refused on vLLM (EP = TP x DP, vllm-project/vllm@00c1c6a
vllm/model_executor/layers/fused_moe/config.py). Stop 53 (epltp); before it every engine's was refused (stop 52's qa6).

The arithmetic's source: Qwen/Qwen3-235B-A22B's config.json as the repository stores it
(src/anchorgpu/architectures/data/models/qwen3-235b-a22b.json; /work/shared/reference/configs holds no Qwen3-235B):
94 layers, 128 experts of hidden 4,096 and moe_intermediate_size 1,536, three matrices each (gate, up, down)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.memory import serving_expert_tp, shard_share
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.experts import routed_weight_bytes_share_per_gpu
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.planner.terms import split_weights_bytes
from anchorgpu.planner.weight_parts import model_weight_parts
from anchorgpu.recommend import shapes_from_catalog

QWEN = "qwen3-235b-a22b"
# config.json: num_hidden_layers x num_experts x 3 matrices x hidden_size x moe_intermediate_size, one byte each in FP8
EXPERT_PARAMS = 94 * 128 * 3 * 4096 * 1536  # 227,096,395,776


def _plan(engine: str, gpu: str = "h100", weights: str = "fp8", concurrency: int = 64,  # type: ignore[no-untyped-def]
          **layout: int):
    return plan(load_model(QWEN), Workload(task="inference", concurrency=concurrency, engine=engine),
                layout=Layout(gpus=8, **layout), gpu=get_gpu(gpu), precision=PrecisionPlan(weights=weights))


def _speed(p) -> float:  # type: ignore[no-untyped-def]
    return float(plan_performance(p)["output_tokens_per_s"])


def test_the_experts_take_one_eighth_a_gpu_at_ep_4_as_at_ep_8() -> None:
    """8 x H100, FP8, TP 8: EP 4 x expert TP 2 holds 32 experts a GPU, each half of its matrices, 1/8 of the routed
    experts' 227.1e9 bytes (26.4 GiB), as EP 8 (16 whole experts) and TP 8 alone (every expert 1/8); the layout refused
    before (experts whole over EP 4, Megatron's expert TP 1) held 1/4 of them, 26.4 GiB more a GPU."""
    model = load_model(QWEN)
    fmt = format_for_model(model, "fp8")
    parts = model_weight_parts(model, fmt)
    assert parts.experts == pytest.approx(EXPERT_PARAMS, rel=1e-5)  # one byte a parameter, plus per-tensor scales
    held = {ep: split_weights_bytes(model, fmt, 8, 1, ep)[0] for ep in (1, 2, 4, 8)}
    assert len(set(held.values())) == 1, held
    whole_over_ep4 = shard_share(parts, tp=8, pp=1, ep=4)  # expert TP 1: training's split
    assert whole_over_ep4 - held[4] == pytest.approx(parts.experts / 8, abs=2)
    assert (whole_over_ep4 - held[4]) / 2**30 == pytest.approx(26.4, abs=0.05)
    p4, p8 = _plan("trtllm", tp=8, ep=4), _plan("trtllm", tp=8, ep=8)
    assert p4.per_gpu.weights_bytes == p8.per_gpu.weights_bytes == held[4]
    assert p4.per_gpu.weights_bytes / 2**30 == pytest.approx(27.52, abs=0.01)  # experts 26.44 + the rest 1.08


def test_the_routed_share_of_the_bytes_read_is_the_same_inside_tp() -> None:
    model = load_model(QWEN)
    fmt = format_for_model(model, "fp8")
    shares = {ep: routed_weight_bytes_share_per_gpu(model, fmt, tp=8, ep=ep) for ep in (1, 2, 4, 8)}
    assert len(set(shares.values())) == 1, shares
    assert serving_expert_tp(8, 4) == 2 and serving_expert_tp(8, 8) == serving_expert_tp(2, 8) == 1


def test_trtllm_speed_falls_between_ep_1_and_ep_8() -> None:
    """TensorRT-LLM charges each routed row a GPU runs (its CUTLASS MoE tables): all of a token's at EP 1 (sliced), 1/4
    at EP 4, 1/8 at EP 8; the memory and the all-reduces are the same, so the speed rises with EP inside TP."""
    speeds = [_speed(_plan("trtllm", gpu="h200", weights="bf16", concurrency=128, tp=8, ep=ep)) for ep in (1, 4, 8)]
    assert speeds[0] < speeds[1] < speeds[2], speeds
    assert speeds[2] / speeds[1] < 1.1, speeds  # half the rows' kernel cost: a few percent, not a new regime


def test_sglang_times_ep_4_as_ep_8_and_the_sweep_agrees() -> None:
    """SGLang (no per-row cost in the model): EP 4 x expert TP 2 reads the same bytes, runs the same products and the
    same TP all-reduces as EP 8, so plan gives the same speed; recommend's sweep, which times EP = TP (it never
    proposes EP < TP), gives that figure too."""
    p4 = _plan("sglang", gpu="h200", weights="bf16", concurrency=128, tp=8, ep=4)
    p8 = _plan("sglang", gpu="h200", weights="bf16", concurrency=128, tp=8, ep=8)
    assert _speed(p4) == pytest.approx(_speed(p8), rel=1e-12)
    assert p4.per_gpu.weights_bytes == p8.per_gpu.weights_bytes
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.id == "h200-8x-bm")
    spec = SweepSpec(workload=Workload(task="inference", concurrency=128, engine="sglang"), weights=("bf16",),
                     kv_caches=("bf16",))
    result = sweep(load_model(QWEN), shapes, spec)
    rows = [result.row(i) for i in range(result.evaluated)]
    ep8 = [r for r in rows if (r["tp"], r["pp"], r["dp"], r["ep"]) == (8, 1, 1, 8)]
    assert len(ep8) == 1, [(r["tp"], r["ep"]) for r in rows]
    assert ep8[0]["decode_tokens_per_s_total"] == pytest.approx(_speed(p4), rel=1e-9)


def test_vllm_refuses_it_in_one_line() -> None:
    with pytest.raises(InvalidWorkload) as refused:
        _plan("vllm", tp=8, ep=4)
    said = str(refused.value)
    assert "\n" not in said and "EP = TP x DP" in said and "--engine trtllm or sglang (EP 4 x expert TP 2)" in said


def test_an_ep_that_does_not_divide_tp_is_refused() -> None:
    """GLM-4.5's 160 experts divide by 5, TP 8 x DP 5's 40 GPUs too, but TP 8 does not split into EP 5 x expert TP."""
    with pytest.raises(InvalidWorkload, match="must divide TP 8"):
        plan(load_model("glm-4.5"), Workload(task="inference", engine="sglang"),
             layout=Layout(gpus=40, tp=8, ep=5), gpu=get_gpu("h100"))


def test_the_assumptions_say_how_the_experts_are_split() -> None:
    said = _plan("sglang", tp=8, ep=4).assumptions
    line = next(a for a in said if a.startswith("Experts: EP 4 x expert TP 2 over the TP 8 group"))
    assert "each GPU holds 32 of the 128 experts" in line and "1/8 of the routed experts' bytes" in line
    assert not any(a.startswith("Experts:") for a in _plan("sglang", tp=8, ep=8).assumptions)


def test_the_row_share_sits_where_aiconfigurators_tables_put_ep_4() -> None:
    """AIConfigurator 0.12.0 h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet, Qwen3-235B's MoE shape in fp8, TP 8:
    (EP 4 x MoE TP 2 - EP 8) / (MoE TP 8 - EP 8) of a layer's latency is 0.132 at 1,024 tokens, 0.150 at 4,096, 0.135
    at 8,192 (benchmarks/moe_small_batch_findings.md, epltp); the per-row term's shares put it at 0.143."""
    from anchorgpu.planner.speed.step_constants import routed_rows_per_token_share as share

    between = (share(8, 4) - share(8, 8)) / (share(8, 1) - share(8, 8))
    assert 0.132 <= between <= 0.150
