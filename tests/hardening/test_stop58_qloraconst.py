"""A bitsandbytes 4-bit base under PyTorch's FSDP / DeepSpeed ZeRO-3: only the packed codes (4 bits a weight,
``formats.NF4_CODE_BITS``) are a parameter, so only they are sharded; the block constants live in ``quant_state``,
which FSDP neither shards nor gathers (AnswerDotAI/fsdp_qlora PR #4: it "doesn't get synced by FSDP ... only
supports syncing parameters and buffers"), so every GPU holds them whole (benchmarks/hardening/stop58_qloraconst.md).
Bytes counted here from the model's own linear groups and the QLoRA paper's constants (Dettmers et al. 2023, 3)."""

from __future__ import annotations

import math

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.result import Plan

GPU = get_gpu("h100")
MODEL = "llama-3.1-70b"
# bits of constants a weight: nf4 one fp32 absmax per 64; nf4-dq an 8-bit absmax per 64 and an fp32 per 256 of those
CONSTANT_BITS = {"nf4": 32 / 64, "nf4-dq": 8 / 64 + 32 / (64 * 256)}


def _linears(model: ModelSpec) -> int:
    return sum(g.d_in * g.d_out * g.count for g in model.linear_groups if g.component != "router" and g.name != "router")


def _base_bytes(p: Plan) -> int:
    """The base's bytes a GPU holds: its weights less the LoRA adapters' (their own term)."""
    return p.per_gpu.weights_bytes - p.breakdown["lora_adapter_weights_bytes"]


def _qlora(weights: str, lay: Layout, stack: str = "pytorch") -> Plan:
    return plan(load_model(MODEL), Workload(task="qlora", train_stack=stack), gpu=GPU, layout=lay,
                precision=PrecisionPlan(weights=weights))


@pytest.mark.parametrize("weights", ["nf4", "nf4-dq"])
@pytest.mark.parametrize("dp", [2, 8])
def test_fsdp_shards_the_codes_and_keeps_the_constants_whole(weights: str, dp: int) -> None:
    model = load_model(MODEL)
    p = _qlora(weights, Layout(gpus=dp, dp=dp, zero=3))
    linears = _linears(model)
    codes = linears * 4 / 8 + (model.params_total - linears) * 2  # every other tensor 16-bit
    constants = linears * CONSTANT_BITS[weights] / 8
    b = p.breakdown
    assert b["weights_bnb_constants_bytes"] == math.ceil(constants)
    assert _base_bytes(p) == math.ceil(codes / dp) + b["gather_buffer_bytes"] + math.ceil(constants)
    # what it was before: the whole 4.127 (4.5) bits divided by the shard count, about 1 GiB less a GPU at DP 8
    assert _base_bytes(p) - (math.ceil((codes + constants) / dp) + b["gather_buffer_bytes"]) \
        == pytest.approx(constants * (1 - 1 / dp), abs=2)


def test_the_plan_names_the_assumption_and_its_source() -> None:
    text = "\n".join(_qlora("nf4-dq", Layout(gpus=8, dp=8, zero=3)).assumptions)
    assert "quant_state" in text and "AnswerDotAI/fsdp_qlora PR #4" in text


@pytest.mark.parametrize("lay", [Layout(gpus=8, dp=8, zero=1), Layout(gpus=1)])
def test_without_zero3_the_base_is_whole_as_before(lay: Layout) -> None:
    model = load_model(MODEL)
    p = _qlora("nf4-dq", lay)
    linears = _linears(model)
    whole = linears * (4 + CONSTANT_BITS["nf4-dq"]) / 8 + (model.params_total - linears) * 2
    assert "weights_bnb_constants_bytes" not in p.breakdown
    assert _base_bytes(p) == pytest.approx(whole, abs=2)


def test_the_megatron_stack_is_left_as_it_was() -> None:
    """NeMo's QLoRA (ModelOpt / torchao NF4, not bitsandbytes' quant_state) is not changed here."""
    model = load_model(MODEL)
    p = _qlora("nf4-dq", Layout(gpus=8, dp=8, zero=3), stack="megatron")
    linears = _linears(model)
    whole = linears * (4 + CONSTANT_BITS["nf4-dq"]) / 8 + (model.params_total - linears) * 2
    assert "weights_bnb_constants_bytes" not in p.breakdown
    assert _base_bytes(p) - p.breakdown["gather_buffer_bytes"] == pytest.approx(whole / 8, abs=2)
