"""LoRA targets on split and fused modules: q,k,v → ``qkv`` slices, gate,up → ``gate_up`` slices.

Every figure is hand computed from the model's shipped config.json with LoRA's r · (d_in + d_out) per
adapted module (Hu et al. 2021, section 4); on a fused module d_out is the sum of the targeted slices.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.cli import main
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner import Workload, plan
from anchorgpu.planner.memory import adapter_params, expand_lora_targets

ALL = ("q", "k", "v", "o", "gate", "up", "down")


def spec(name: str) -> ModelSpec:
    model = load_model(name)
    assert isinstance(model, ModelSpec)
    return model


def test_split_llama_q_v_rank_8_is_the_familiar_peft_figure() -> None:
    # Llama-3.1-8B (hidden 4096, 8 KV heads of 128, 32 layers): q 8·(4096+4096) + v 8·(4096+1024) per layer
    # = 106,496 × 32 = 3,407,872 (also what PEFT prints for r=8 on q_proj,v_proj of Llama-3-8B).
    assert adapter_params(spec("llama-3.1-8b"), rank=8, targets=("q", "v")) == 3_407_872


def test_phi3_mini_q_v_adapts_only_the_q_and_v_rows_of_the_fused_qkv() -> None:
    # Phi-3-mini: hidden 3072, 32 heads × 96 = 3072 per slice, qkv_proj 3072 → 9216, 32 layers.
    # q,v: 8 · (3072 + 3072 + 3072) · 32 = 2,359,296; the whole qkv: 8 · (3072 + 9216) · 32 = 3,145,728.
    model = spec("phi-3-mini")
    assert adapter_params(model, rank=8, targets=("q", "v")) == 2_359_296
    assert adapter_params(model, rank=8, targets=("qkv",)) == 3_145_728
    assert adapter_params(model, rank=8, targets=("q", "k", "v")) == 3_145_728


def test_phi3_mini_gate_alone_adapts_half_of_the_fused_gate_up() -> None:
    # gate_up_proj 3072 → 2·8192: gate only 8 · (3072 + 8192) · 32 = 2,883,584; gate,up 8 · (3072 + 16384) · 32.
    model = spec("phi-3-mini")
    assert adapter_params(model, rank=8, targets=("gate",)) == 2_883_584
    assert adapter_params(model, rank=8, targets=("up",)) == 2_883_584
    assert adapter_params(model, rank=8, targets=("gate", "up")) == 4_980_736
    assert adapter_params(model, rank=8, targets=("gate_up",)) == 4_980_736


def test_phi3_mini_every_target_is_one_adapter_per_fused_module() -> None:
    # qkv 3072+9216, o 3072+3072, gate_up 3072+16384, down 8192+3072 = 49,152 per layer; × 16 × 32 = 25,165,824
    # (the trainable count PEFT reports for r=16 on qkv_proj, o_proj, gate_up_proj, down_proj).
    assert adapter_params(spec("phi-3-mini"), rank=16, targets=ALL) == 25_165_824


def test_falcon_multi_query_q_v_takes_the_one_kv_head_slice() -> None:
    # Falcon-7B query_key_value: 4544 → 71·64 + 2·64 = 4672; q,v: 8 · (4544 + 4544 + 64) · 32 layers.
    assert adapter_params(spec("falcon-7b"), rank=8, targets=("q", "v")) == 8 * (4544 + 4544 + 64) * 32


def test_gpt_neox_k_alone_adapts_one_third_of_query_key_value() -> None:
    # Pythia-1B: query_key_value 2048 → 3·2048, 16 layers; k only: 4 · (2048 + 2048) · 16.
    assert adapter_params(spec("pythia-1b"), rank=4, targets=("k",)) == 4 * (2048 + 2048) * 16


def test_gpt_oss_experts_up_adapts_the_up_half_of_every_expert_gate_up() -> None:
    # gpt-oss-20b: 24 layers × 32 experts of gate_up 2880 → 2·2880; "up" only: 8 · (2880 + 2880) · 768.
    model = spec("gpt-oss-20b")
    assert adapter_params(model, rank=8, targets=("up",)) == 8 * (2880 + 2880) * 768
    assert adapter_params(model, rank=8, targets=("gate", "up")) == 8 * (2880 + 5760) * 768


def test_fused_parts_add_up_to_the_module_width_for_every_registry_model() -> None:
    from anchorgpu.architectures import list_models, model_info

    for name in list_models():
        if model_info(name).kind != "llm":
            continue
        for group in spec(name).linear_groups:
            if group.parts:
                assert sum(size for _, size in group.parts) == group.d_out, (name, group.name)
            assert group.name not in ("qkv", "gate_up", "expert_gate_up") or group.parts, (name, group.name)


@given(st.lists(st.sampled_from(ALL), min_size=1, max_size=7, unique=True), st.sampled_from(
    ["phi-3-mini", "falcon-7b", "gpt2", "gpt-oss-20b", "llama-3.1-8b"]))
def test_more_targets_never_mean_fewer_adapter_parameters(targets: list[str], name: str) -> None:
    model = spec(name)
    some = adapter_params(model, rank=8, targets=targets)
    assert some <= adapter_params(model, rank=8, targets=ALL)
    assert adapter_params(model, rank=8, targets=targets[:-1]) <= some if len(targets) > 1 else True


def test_fused_names_expand_to_their_parts() -> None:
    assert expand_lora_targets(("qkv", "gate_up")) == ("q", "k", "v", "gate", "up")


def test_plan_reports_the_sliced_adapter_count_and_accepts_fused_names() -> None:
    model = spec("phi-3-mini")
    sliced = plan(model, Workload(task="lora", lora_rank=8, lora_targets=("q", "v")))
    assert sliced.breakdown["lora_adapter_params"] == 2_359_296
    fused = plan(model, Workload(task="lora", lora_rank=8, lora_targets=("qkv",)))
    assert fused.breakdown["lora_adapter_params"] == 3_145_728
    with pytest.raises(InvalidWorkload, match="qkv"):
        plan(model, Workload(task="lora", lora_targets=("qkvo",)))


def test_cli_lora_targets_on_a_fused_model(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "phi-3-mini", "--task", "lora", "--lora-rank", "8", "--lora-targets", "q,v", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    assert json.loads(out)["breakdown"]["lora_adapter_params"] == 2_359_296
