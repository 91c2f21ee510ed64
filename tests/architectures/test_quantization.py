"""The precision a checkpoint ships in: quantization_config read per method, weight bytes exact, plan defaults.

Each quantization_config below is copied from a public checkpoint named beside it; where the checkpoint's
model config is not in the registry, the block is put on the registry config of the same architecture
(said so at the test).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from anchorgpu.architectures import from_hf_config, load_model
from anchorgpu.architectures.loader import load_registry_model
from anchorgpu.architectures.quantization import storage_for_name
from anchorgpu.architectures.registry import read_data_text, resolve
from anchorgpu.errors import DataFileError, InvalidConfig
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.formats import format_for_model, get_format, shipped_format
from anchorgpu.planner.weight_parts import model_weight_parts
from anchorgpu.units import GIB
from cli_runner import run, run_json


def _registry_config(name: str) -> dict[str, object]:
    info = resolve(name)
    assert info is not None
    return json.loads(read_data_text(info.file))


def _with_quantization(name: str, block: dict[str, object]) -> dict[str, object]:
    cfg = _registry_config(name)
    cfg["quantization_config"] = block
    return cfg


# --------------------------------------------------------------------------------------------------
# FP8 block-scaled: DeepSeek-V3 (registry config = deepseek-ai/DeepSeek-V3 config.json)
# --------------------------------------------------------------------------------------------------

def _fp8_block_bytes(d_in: int, d_out: int) -> int:
    """One FP8 matrix with an fp32 scale per 128 x 128 block (DeepSeek-V3 weight_scale_inv)."""
    return d_in * d_out + 4 * math.ceil(d_out / 128) * math.ceil(d_in / 128)


def test_deepseek_v3_ships_fp8_with_128x128_block_scales_and_16_bit_router_embeddings_and_head() -> None:
    q = load_model("deepseek-v3").quantization
    assert q is not None and q.method == "fp8" and q.name == "fp8-block128x128"
    assert q.fraction("router") == 0 and not q.head_quantized
    assert all(frac == 1 for name, frac in q.groups if name != "router")


def test_deepseek_v3_fp8_weight_bytes_match_hand_arithmetic_from_its_config() -> None:
    # deepseek-ai/DeepSeek-V3 config.json: hidden 7168, q_lora_rank 1536, kv_lora_rank 512, rope 64, nope 128,
    # v 128, 128 heads, 61 layers (first 3 dense, ffn 18432), 58 MoE layers of 256 experts (width 2048) + 1 shared,
    # vocabulary 129280, untied head; quantization_config fp8 e4m3 weight_block_size [128, 128].
    model = load_model("deepseek-v3")
    h, heads, layers, dense, moe = 7168, 128, 61, 3, 58
    attention = (_fp8_block_bytes(h, 1536) + _fp8_block_bytes(1536, heads * 192) + _fp8_block_bytes(h, 512 + 64)
                 + _fp8_block_bytes(512, heads * 256) + _fp8_block_bytes(heads * 128, h)) * layers
    dense_mlp = (2 * _fp8_block_bytes(h, 18432) + _fp8_block_bytes(18432, h)) * dense
    expert = 2 * _fp8_block_bytes(h, 2048) + _fp8_block_bytes(2048, h)
    experts = expert * 256 * moe
    shared = expert * moe
    router = 2 * 256 * h * moe
    linear_params = sum(g.params for g in model.linear_groups)
    rest = model.params_total - linear_params - 2 * 129280 * h  # norms and biases (embeddings and head apart)
    expected = attention + dense_mlp + experts + shared + router + 2 * (2 * 129280 * h) + 2 * rest
    parts = model_weight_parts(model, shipped_format(model))
    assert parts.total == expected
    # the 128x128 scales add 1/4096 of a byte per value: 0.0244 % over 1 byte per FP8 value
    fp8_values = linear_params - 256 * h * moe
    assert attention + dense_mlp + experts + shared - fp8_values == pytest.approx(fp8_values * 4 / 16384, rel=0.01)


def test_deepseek_v3_on_8_h200_fits_in_fp8_by_default_and_not_in_bf16(capsys: pytest.CaptureFixture[str]) -> None:
    # The deployment that runs every day: DeepSeek-V3 served on one 8 x H200 server in its shipped FP8.
    doc = run_json(capsys, "plan", "deepseek-v3", "--gpu", "h200", "--gpus", "8")
    assert doc["precision"]["weights"] == "fp8-block128x128"
    assert doc["fits"] is True
    assert doc["assumptions"][0].startswith("Weights: fp8-block128x128")
    bf16 = run_json(capsys, "plan", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--weights", "bf16")
    assert bf16["fits"] is False
    assert "Weights: bf16 (override; the checkpoint ships fp8-block128x128)." in bf16["assumptions"]


def test_override_to_per_tensor_fp8_is_its_own_format_and_named() -> None:
    model = load_model("deepseek-v3")
    shipped = plan(model, Workload(context_tokens=4096))
    per_tensor = plan(model, Workload(context_tokens=4096), precision=PrecisionPlan(weights="fp8"))
    assert shipped.precision.weights == "fp8-block128x128" and per_tensor.precision.weights == "fp8"
    assert any(a == "Weights: fp8 (override; the checkpoint ships fp8-block128x128)." for a in per_tensor.assumptions)
    # per-tensor scales (8 B per matrix) are smaller than per-block ones
    assert per_tensor.breakdown["weights_whole_model_bytes"] < shipped.breakdown["weights_whole_model_bytes"]


# --------------------------------------------------------------------------------------------------
# MXFP4: gpt-oss (registry configs = openai/gpt-oss-20b, -120b config.json)
# --------------------------------------------------------------------------------------------------

def test_gpt_oss_ships_mxfp4_on_the_experts_only() -> None:
    q = load_model("gpt-oss-120b").quantization
    assert q is not None and q.method == "mxfp4" and q.name == "mxfp4"
    assert {name for name, frac in q.groups if frac > 0} == {"expert_gate_up", "expert_down"}
    assert set(q.kept_16bit) == {"q", "k", "v", "o", "router"}


def test_gpt_oss_120b_mxfp4_bytes_are_4_25_bits_per_expert_value_with_the_engine_padding() -> None:
    # MXFP4: an FP4 value (4 bits) + one E8M0 scale (8 bits) per 32 inputs = 4.25 bits per value. vLLM's MXFP4
    # MoE kernels pad the expert width 2880 -> 3072 (which reproduces its logged 64.38 GiB, llm-d measurements).
    model = load_model("gpt-oss-120b")
    storage = storage_for_name("mxfp4")
    assert storage is not None and storage.matrix_bytes(2880, 5760) == 2880 * 5760 * 4.25 / 8
    h, layers, experts = 2880, 36, 128
    expert_values = (h * 2 * h + h * h) * experts * layers
    padded = expert_values * 4.25 / 8 * 3072 / 2880
    rest = 2 * (model.params_total - expert_values)  # everything else in bf16
    assert model_weight_parts(model, shipped_format(model)).total == pytest.approx(padded + rest, rel=1e-12)
    assert model_weight_parts(model, shipped_format(model)).total / GIB == pytest.approx(64.38, rel=0.01)


def test_gpt_oss_120b_fits_one_h100_in_mxfp4_as_served() -> None:
    # llm-d's vLLM measurement (published_figures.md D) served gpt-oss-120b on one H100 at
    # gpu_memory_utilization 0.95 with max_model_len 16,000.
    result = plan(load_model("gpt-oss-120b"), Workload(context_tokens=16000, gpu_memory_utilization=0.95),
                  layout=Layout(gpus=1), gpu=get_gpu("h100"))
    assert result.precision.weights == "mxfp4" and result.fits is True
    assert plan(load_model("gpt-oss-120b"), Workload(context_tokens=16000, gpu_memory_utilization=0.95),
                precision=PrecisionPlan(weights="bf16"), layout=Layout(gpus=1), gpu=get_gpu("h100")).fits is False


# --------------------------------------------------------------------------------------------------
# AWQ, GPTQ, compressed-tensors, bitsandbytes
# --------------------------------------------------------------------------------------------------

AIROBOROS_AWQ = {  # TheBloke/airoboros-l2-7B-gpt4-m2.0-AWQ config.json (commit 514d9dc)
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 4096,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "pad_token_id": 0, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.31.0", "use_cache": True,
    "vocab_size": 32000,
    "quantization_config": {"quant_method": "awq", "zero_point": True, "group_size": 128, "bits": 4, "version": "gemm"},
}


def test_awq_group_128_stores_a_16_bit_scale_and_a_4_bit_zero_per_group_and_output() -> None:
    model = from_hf_config(AIROBOROS_AWQ, name="airoboros-awq")
    q = model.quantization
    assert q is not None and q.method == "awq" and q.name == "int4-awq"
    assert not q.kept_16bit  # every linear layer of the blocks; embeddings and lm_head stay 16-bit
    # q_proj 4096 -> 4096: values 4096·4096/2 + (4096/128 groups)·4096 outputs·(16 + 4 bits)/8
    assert q.storage.matrix_bytes(4096, 4096) == 4096 * 4096 / 2 + 32 * 4096 * 20 / 8
    parts = model_weight_parts(model, shipped_format(model))
    assert parts.head == 2 * 32000 * 4096 and parts.embed == 2 * 32000 * 4096


def test_awq_modules_to_not_convert_keeps_the_moe_gate_16_bit() -> None:
    # TechxGenus/DeepSeek-Coder-V2-Lite-Base-AWQ config.json before commit 3dc4058: group 64 and
    # modules_to_not_convert ["mlp.gate"]; on the registry's DeepSeek-V2-Lite config (same architecture).
    block = {"bits": 4, "group_size": 64, "modules_to_not_convert": ["mlp.gate"], "quant_method": "awq",
             "version": "gemm", "zero_point": True}
    model = from_hf_config(_with_quantization("deepseek-v2-lite", block), name="v2-lite-awq")
    q = model.quantization
    assert q is not None and q.name == "int4-awq-g64"
    assert q.fraction("router") == 0 and q.fraction("expert_gate") == 1 and q.fraction("gate") == 1


def test_awq_layer_specific_ignore_keeps_whole_layers_16_bit() -> None:
    # QuantTrio/DeepSeek-V3.2-Exp-AWQ config.json (quoted in vllm-project/vllm issue 30052): modules_to_not_convert
    # names the router, the indexer and layers 0, 1, 2, 60 and 61 (61 is the MTP layer transformers does not build).
    block = {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True,
             "modules_to_not_convert": ["mlp.gate.", "indexer", "model.layers.0.", "model.layers.1.",
                                        "model.layers.2.", "model.layers.60.", "model.layers.61."]}
    cfg = _registry_config("deepseek-v3")
    cfg.pop("quantization_config")
    cfg["quantization_config"] = block
    q = from_hf_config(cfg, name="v3-awq").quantization
    assert q is not None
    assert q.fraction("gate") == 0  # the three dense layers are layers 0-2
    assert q.fraction("q_a") == pytest.approx(57 / 61)
    assert q.fraction("expert_down") == pytest.approx(57 / 58)  # MoE layers 3-60, layer 60 kept
    assert q.fraction("router") == 0


def test_gptq_group_128_adds_g_idx_and_a_packed_zero_per_group() -> None:
    # TheBloke/Llama-2-13B-chat-GPTQ quantization_config (quantize_config.json at commit 95b6896: bits 4,
    # group 128, desc_act true, sym true), on the registry's Llama-2-13B config.
    block = {"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": True, "sym": True,
             "true_sequential": True, "model_name_or_path": None, "model_file_base_name": "model",
             "quant_method": "gptq"}
    model = from_hf_config(_with_quantization("llama-2-13b", block), name="llama-2-13b-gptq")
    q = model.quantization
    assert q is not None and q.name == "int4-gptq" and not q.head_quantized
    assert q.storage.matrix_bytes(5120, 13824) == 5120 * 13824 / 2 + 40 * 13824 * 20 / 8 + 5120 * 4
    assert format_for_model(model, "int4-gptq") is not None
    assert plan(model, Workload(context_tokens=4096)).precision.weights == "int4-gptq"


@pytest.mark.parametrize(("group_size", "lm_head", "name"), [(-1, False, "int4-gptq-gch"), (32, True, "int4-gptq-g32")])
def test_gptq_per_channel_and_quantized_head(group_size: int, lm_head: bool, name: str) -> None:
    # smpanaro/Llama-2-7b-NuGPTQ (group_size -1) and ModelCloud/Qwen2.5-0.5B-Instruct-gptqmodel-w4a16 (group 32,
    # lm_head false; flipped here to check the head path), on the registry's Llama-2-7B config.
    block = {"bits": 4, "group_size": group_size, "desc_act": True, "sym": True, "lm_head": lm_head,
             "quant_method": "gptq"}
    model = from_hf_config(_with_quantization("llama-2-7b", block), name="gptq")
    q = model.quantization
    assert q is not None and q.name == name and q.head_quantized is lm_head
    head = model_weight_parts(model, shipped_format(model)).head
    assert (head < 2 * model.params.head) is lm_head


def test_compressed_tensors_w8a8_int8_channel_ignores_lm_head() -> None:
    # nm-testing/DeepSeek-Coder-V2-Lite-Instruct-W8A8 config.json (commit e1baf6d): int8 weights per channel,
    # int8 dynamic per-token activations, targets Linear, ignore lm_head; on the registry's DeepSeek-V2-Lite.
    block = {
        "config_groups": {"group_0": {
            "input_activations": {"actorder": None, "block_structure": None, "dynamic": True, "group_size": None,
                                  "num_bits": 8, "observer": "memoryless", "observer_kwargs": {},
                                  "strategy": "token", "symmetric": True, "type": "int"},
            "output_activations": None, "targets": ["Linear"],
            "weights": {"actorder": None, "block_structure": None, "dynamic": False, "group_size": None,
                        "num_bits": 8, "observer": "minmax", "observer_kwargs": {}, "strategy": "channel",
                        "symmetric": True, "type": "int"}}},
        "format": "int-quantized", "global_compression_ratio": 1.2697642717533653, "ignore": ["lm_head"],
        "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"}
    q = from_hf_config(_with_quantization("deepseek-v2-lite", block), name="w8a8").quantization
    assert q is not None and q.method == "compressed-tensors" and q.name == "int8"
    assert not q.head_quantized and q.fraction("expert_up") == 1


def test_compressed_tensors_nvfp4_computes_in_fp4() -> None:
    # BrainForge/Devstral-2-123B-Instruct-2512-NVFP4 quantization_config.json: float 4-bit, tensor_group of 16,
    # FP8 scales, targets Linear, ignore []; on the registry's Mistral-7B config (same Mistral architecture).
    weights = {"num_bits": 4, "type": "float", "symmetric": True, "group_size": 16, "strategy": "tensor_group",
               "block_structure": None, "dynamic": False, "actorder": None, "scale_dtype": "torch.float8_e4m3fn",
               "zp_dtype": None, "observer": "static_minmax", "observer_kwargs": {}}
    block = {"config_groups": {"group_0": {"targets": ["Linear"], "weights": weights,
                                           "input_activations": dict(weights, dynamic="local"),
                                           "output_activations": None, "format": None}},
             "quant_method": "compressed-tensors", "kv_cache_scheme": None, "format": "nvfp4-pack-quantized",
             "quantization_status": "compressed", "global_compression_ratio": None, "ignore": [],
             "provider": "auto-round"}
    model = from_hf_config(_with_quantization("mistral-7b-v0.1", block), name="nvfp4")
    q = model.quantization
    assert q is not None and q.name == "nvfp4" and q.head_quantized  # "Linear" with nothing ignored
    assert shipped_format(model).native == "fp4"


TINYLLAMA_BNB = {  # sca255/codeboxgptpython4bit config.json (from unsloth/tinyllama-bnb-4bit)
    "_name_or_path": "unsloth/tinyllama-bnb-4bit", "architectures": ["LlamaForCausalLM"], "attention_bias": False,
    "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 2048, "mlp_bias": False,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4,
    "pad_token_id": 0, "pretraining_tp": 1,
    "quantization_config": {"bnb_4bit_compute_dtype": "float16", "bnb_4bit_quant_type": "nf4",
                            "bnb_4bit_use_double_quant": True, "llm_int8_enable_fp32_cpu_offload": False,
                            "llm_int8_has_fp16_weight": False, "llm_int8_skip_modules": None,
                            "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False,
                            "quant_method": "bitsandbytes"},
    "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
    "torch_dtype": "float16", "transformers_version": "4.44.2", "unsloth_version": "2024.9.post4",
    "use_cache": True, "vocab_size": 32000,
}


def test_bitsandbytes_nf4_double_quant_and_qlora_keeps_it() -> None:
    model = from_hf_config(TINYLLAMA_BNB, name="tinyllama-bnb")
    q = model.quantization
    assert q is not None and q.method == "bitsandbytes" and q.name == "nf4-dq" and not q.head_quantized
    # 4 bits + an 8-bit absmax per 64 values + an fp32 constant per 256 blocks (QLoRA section 3)
    assert q.storage.matrix_bytes(2048, 5632) == 2048 * 5632 / 2 + 2048 * 5632 / 64 + 4 * math.ceil(2048 * 5632 / 64 / 256)
    result = plan(model, Workload(task="qlora", seq_tokens=512))
    assert result.precision.weights == "nf4-dq"
    assert "the checkpoint ships them so" in result.assumptions[0]
    # inference serves it as shipped; full training dequantizes and says so
    assert plan(model, Workload(context_tokens=2048)).precision.weights == "nf4-dq"
    train = plan(model, Workload(task="train", seq_tokens=512))
    assert train.precision.weights == "bf16" and "the checkpoint ships nf4-dq" in train.assumptions[0]


def test_bitsandbytes_8_bit_is_int8_with_a_row_scale() -> None:
    # MAdAiLab/Llama2_Instruction_Finetuning_Experiments bnb_config.json keys, 8-bit variant (load_in_8bit).
    block = {"bnb_4bit_compute_dtype": "bfloat16", "bnb_4bit_quant_type": "fp4", "bnb_4bit_use_double_quant": False,
             "llm_int8_skip_modules": ["lm_head"], "llm_int8_threshold": 6.0, "load_in_4bit": False,
             "load_in_8bit": True, "quant_method": "bitsandbytes"}
    q = from_hf_config(_with_quantization("llama-2-7b", block), name="int8").quantization
    assert q is not None and q.name == "int8"
    assert q.storage.matrix_bytes(4096, 11008) == 4096 * 11008 + 11008 * 4


# --------------------------------------------------------------------------------------------------
# Refusals: one line naming what is not understood
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("block", "says"),
    [
        ({"quant_method": "hqq", "nbits": 4}, "quant_method 'hqq' is not supported"),
        ({"bits": 4}, "quant_method' is missing"),
        ("fp8", "must be an object"),
        ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
        ({"quant_method": "gptq", "bits": 5, "group_size": 128}, "'quantization_config.bits' must be one of"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:.*down": {}}}, "dynamic"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}, "exactly one of"),
        ({"quant_method": "compressed-tensors", "config_groups": {
            "a": {"targets": ["re:.*q_proj"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                          "group_size": 128, "symmetric": True}},
            "b": {"targets": ["re:.*down_proj"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}},
         "2 different weight schemes"),
        ({"quant_method": "compressed-tensors", "config_groups": {"a": {"weights": {"num_bits": 3, "type": "float"}}}},
         "weight scheme float 3-bit"),
    ],
)
def test_a_quantization_config_not_understood_is_refused_in_one_line(block: object, says: str) -> None:
    with pytest.raises(InvalidConfig) as exc:
        from_hf_config(_with_quantization("llama-3.1-8b", block), name="x", source="cfg.json")  # type: ignore[arg-type]
    message = str(exc.value)
    assert says in message and "\n" not in message and message.startswith("cfg.json")


def test_cli_refuses_an_unknown_quant_method_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _with_quantization("llama-3.1-8b", {"quant_method": "eetq"})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, out, err = run(capsys, "plan", str(path), "--gpu", "h100")
    assert code == 2
    assert "quant_method 'eetq' is not supported" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------------------------------
# Registry, JSON and listing
# --------------------------------------------------------------------------------------------------

def test_registry_shipped_weights_applies_only_where_the_config_cannot_say() -> None:
    info = resolve("llama-3.1-8b")
    assert info is not None
    model = load_registry_model(replace(info, shipped_weights="int4-awq"))
    assert model.quantization is not None and model.quantization.method == "registry"
    ds = resolve("deepseek-v3")
    assert ds is not None
    with pytest.raises(DataFileError, match="already says fp8-block128x128"):
        load_registry_model(replace(ds, shipped_weights="int4-awq"))


def test_model_json_and_models_list_the_shipped_format(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "model", "gpt-oss-20b")
    assert doc["shipped_weights"] == "mxfp4"
    assert doc["shipped_quantization"]["quantized_groups"] == {"expert_gate_up": 1.0, "expert_down": 1.0}
    assert run_json(capsys, "model", "llama-3.1-8b")["shipped_weights"] == "bf16"
    rows = {r["name"]: r for r in run_json(capsys, "models")}
    assert rows["deepseek-v3"]["shipped_weights"] == "fp8-block128x128"
    assert rows["deepseek-r1"]["shipped_weights"] == "fp8-block128x128"
    code, out, _ = run(capsys, "models")
    assert code == 0 and "gpt-oss: mxfp4" in " ".join(out.split())


def test_named_formats_round_trip_and_compute_precision_follows_them() -> None:
    from anchorgpu.planner.speed.links import compute_precision_for_weights

    assert get_format("fp8-block128x128").storage == storage_for_name("fp8-block128x128")
    assert compute_precision_for_weights("fp8-block128x128") == "fp8"
    assert compute_precision_for_weights("mxfp4") == "fp4"
    assert compute_precision_for_weights("int4-gptq-g32") == "bf16"
    with pytest.raises(Exception, match="unknown weight format"):
        get_format("fp8-block0x")


def test_ignore_patterns_written_for_a_multimodal_wrapper_match_the_text_layers() -> None:
    # Constructed (no checkpoint claimed): ignore names as multimodal checkpoints write them, with the
    # "language_model." (transformers 4) and "model.language_model." (transformers 5) prefixes; fbgemm_fp8.
    block = {"quant_method": "fbgemm_fp8", "modules_to_not_convert": [
        "language_model.model.layers.0.self_attn.q_proj", "model.language_model.layers.1.mlp", "lm_head"]}
    q = from_hf_config(_with_quantization("llama-3.1-8b", block), name="x").quantization
    assert q is not None and q.name == "fp8-channel"
    assert q.fraction("q") == pytest.approx(31 / 32) and q.fraction("k") == 1
    assert q.fraction("down") == pytest.approx(31 / 32)


def test_the_sweep_puts_the_shipped_format_first_and_agrees_with_plan() -> None:
    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog

    model = load_model("deepseek-v3")
    shapes = [s for s in shapes_from_catalog(load_catalog().offerings, max_servers=2) if s.gpu.name.startswith("h200")]
    result = sweep(model, shapes, SweepSpec(workload=Workload(context_tokens=8192, concurrency=8)))
    assert result.weights[0] == "fp8-block128x128"
    rows = [result.row(i) for i in range(result.evaluated)]
    shipped_rows = [r for r in rows if r["weights"] == "fp8-block128x128"]
    assert any(r["fits"] for r in shipped_rows)  # one 8 x H200 server holds it
    for row in shipped_rows[::max(1, len(shipped_rows) // 6)]:
        shape = next(s for s in result.shapes if s.id == row["shape"])
        p = plan(model, Workload(context_tokens=8192, concurrency=row["concurrency"]),
                 precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                 layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"],
                               ep=row["ep"] if row["ep"] > 1 else None), gpu=shape.gpu,
                 suggest=False, choose_layout=False)
        assert row["weights_bytes"] == p.per_gpu.weights_bytes and row["fits"] == p.fits
