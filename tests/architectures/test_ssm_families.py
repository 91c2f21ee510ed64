"""State-space and hybrid families: exact counts, KV only on attention layers, the recurrent state per sequence.

Figures: ``transformers_counts.json`` and ``ssm_counts.json`` were computed by transformers 5.24.0 (torch 2.13.0
CPU) on the meta device by the scripts beside them; state sizes are worked out below from the published
configs (``src/anchorgpu/architectures/data/models``), shapes as vLLM allocates the Mamba/DeltaNet state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli_runner import run_json

from anchorgpu.architectures import ModelSpec, from_hf_config, load_model
from anchorgpu.errors import InvalidConfig

HERE = Path(__file__).resolve().parent
TRANSFORMERS: dict[str, dict[str, int]] = {
    k: v for k, v in json.loads((HERE / "transformers_counts.json").read_text()).items() if isinstance(v, dict)
}
UNSEEN: dict[str, dict[str, Any]] = {
    k: v for k, v in json.loads((HERE / "ssm_counts.json").read_text()).items() if not k.startswith("_")
}
REGISTRY = ["mamba-130m", "mamba-2.8b", "mamba-codestral-7b", "falcon-mamba-7b", "jamba-v0.1", "jamba-1.5-mini", "nemotron-h-8b",
            "granite-4.0-h-tiny", "granite-4.0-h-1b", "qwen3-coder-next", "nemotron-nano-9b-v2"]


def _spec(name: str) -> ModelSpec:
    spec = load_model(name)
    assert isinstance(spec, ModelSpec)
    return spec


@pytest.mark.parametrize("name", REGISTRY)
def test_registry_state_space_and_hybrid_models_count_as_transformers_builds_them(name: str) -> None:
    spec = _spec(name)
    want = TRANSFORMERS[name]
    assert (spec.params_total, spec.params.embeddings, spec.params.head) == (
        want["params_total"], want["embedding_params"], want["untied_head_params"])


@pytest.mark.parametrize("case", sorted(UNSEEN))
def test_unseen_configs_of_every_family_count_exactly(case: str) -> None:
    assert from_hf_config(UNSEEN[case]["config"], name=case).params_total == UNSEEN[case]["params_total"]


def test_every_family_has_an_unseen_config() -> None:
    families = {v["config"]["model_type"] for v in UNSEEN.values()}
    assert families == {"mamba", "falcon_mamba", "mamba2", "jamba", "nemotron_h", "granitemoehybrid", "qwen3_next",
                        "zamba2"}


def test_jamba_caches_kv_on_its_4_attention_layers_of_32() -> None:
    spec = _spec("jamba-1.5-mini")
    assert (spec.num_layers, spec.attention_layers, spec.recurrent_layers) == (32, 4, 28)
    # attention on layers i % 8 == 4 (attn_layer_period 8, offset 4)
    assert [i for i, k in enumerate(spec.layer_kinds) if k == "attention"] == [4, 12, 20, 28]
    # 4 layers · K and V · 8 KV heads · head dim 4096 / 32 = 128 · 2 bytes
    assert spec.kv_bytes_per_token() == 4 * 2 * 8 * 128 * 2 == 16384
    assert spec.kv_values_for_context(1000) == 4 * 2 * 8 * 128 * 1000


def test_jamba_state_per_sequence_by_hand() -> None:
    # 28 Mamba layers, d_inner = mamba_expand 2 · 4096 = 8192, d_state 16, d_conv 4:
    # conv 8192 · (4 - 1) = 24,576 values, SSM 8192 · 16 = 131,072 values, 2 bytes each
    assert _spec("jamba-1.5-mini").state_bytes_per_sequence() == 28 * (24_576 + 131_072) * 2 == 8_716_288


def test_nemotron_h_state_keeps_its_float32_ssm_state() -> None:
    spec = _spec("nemotron-h-8b")
    assert (spec.attention_layers, spec.recurrent_layers, spec.num_layers) == (4, 24, 52)
    # 24 Mamba-2 blocks (M in the pattern): inner 128 heads · 64 = 8192; conv over 8192 + 2 · 8 groups · 128 = 10,240
    # channels · 3 = 30,720 values at 2 bytes; SSM 128 · 64 · 128 = 1,048,576 values at 4 bytes
    # (mamba_ssm_cache_dtype defaults to float32 in transformers' NemotronHConfig)
    assert spec.state_bytes_per_sequence() == 24 * (30_720 * 2 + 1_048_576 * 4) == 102_137_856
    assert spec.kv_bytes_per_token() == 4 * 2 * 8 * 128 * 2


def test_mamba_state_by_hand_and_no_kv_at_any_length() -> None:
    spec = _spec("mamba-2.8b")
    # 64 layers, d_inner 2 · 2560 = 5120, d_state 16, conv kernel 4: (5120 · 3 + 5120 · 16) · 2 bytes per layer
    assert spec.state_bytes_per_sequence() == 64 * (5120 * 3 + 5120 * 16) * 2 == 12_451_840
    assert spec.kv_bytes_per_token() == 0
    assert spec.kv_values_for_context(1_000_000) == 0
    assert spec.attention_kind == "none"
    assert spec.max_context_tokens == 1 << 20


def test_mamba2_state_by_hand() -> None:
    spec = _spec("mamba-codestral-7b")
    # 64 layers; inner 2 · 4096 = 8192 = 128 heads · 64; conv over 8192 + 2 · 8 · 128 = 10,240 channels · 3;
    # SSM 128 · 64 · 128
    assert spec.state_bytes_per_sequence() == 64 * (10_240 * 3 + 128 * 64 * 128) * 2


def test_granite_hybrid_state_and_kv_by_hand() -> None:
    spec = _spec("granite-4.0-h-tiny")
    assert (spec.attention_layers, spec.recurrent_layers) == (4, 36)
    # inner 2 · 1536 = 3072 = 48 heads · 64; conv over 3072 + 2 · 1 · 128 = 3328 channels · 3; SSM 48 · 64 · 128
    assert spec.state_bytes_per_sequence() == 36 * (3328 * 3 + 48 * 64 * 128) * 2 == 29_030_400
    assert spec.kv_bytes_per_token() == 4 * 2 * 4 * 128 * 2  # head dim 1536 / 12 = 128


def test_qwen3_next_gated_deltanet_state_by_hand() -> None:
    spec = _spec("qwen3-coder-next")
    assert (spec.attention_layers, spec.recurrent_layers) == (12, 36)  # every 4th of 48 layers attends
    # keys 16 heads · 128 = 2048, values 32 heads · 128 = 4096; conv over 2 · 2048 + 4096 = 8192 channels · 3;
    # delta-rule state 32 value heads · 128 · 128
    assert spec.state_bytes_per_sequence() == 36 * (8192 * 3 + 32 * 128 * 128) * 2 == 39_518_208
    assert spec.kv_bytes_per_token() == 12 * 2 * 2 * 256 * 2
    assert spec.params_active == 3_874_929_408  # 10 of 512 experts, the shared expert and everything else


def test_zamba2_hybrid_layers_hold_both_kv_and_state() -> None:
    spec = from_hf_config(UNSEEN["zamba2-adapters"]["config"], name="z")
    assert spec.layer_kinds == ("recurrent", "attention_recurrent") * 3
    assert (spec.attention_layers, spec.recurrent_layers) == (3, 6)
    # attention over 2 · 64 = 128 wide, 4 KV heads of 128 / 4 = 32: per token 3 layers · 2 · 4 · 32 values
    assert spec.kv_values_per_token() == 3 * 2 * 4 * 32
    # every layer's Mamba-2: inner 128 = 8 heads · 16, conv over 128 + 2 · 16 = 160 channels · 3, SSM 8 · 16 · 16
    assert spec.state_values_per_sequence() == 6 * (160 * 3 + 8 * 16 * 16)


def test_model_json_adds_state_and_keeps_kv_per_token(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "model", "jamba-1.5-mini", "--json")
    assert (doc["kv_bytes_per_token"], doc["state_bytes_per_sequence"]) == (16384, 8_716_288)
    assert (doc["attention_layers"], doc["recurrent_layers"], doc["recurrent"]["mixer"]) == (4, 28, "mamba")
    assert sum(doc["breakdown"].values()) == doc["params_total"]
    dense = run_json(capsys, "model", "llama-3.1-8b", "--json")
    assert (dense["state_bytes_per_sequence"], dense["recurrent"], dense["attention_layers"]) == (0, None, 32)


@pytest.mark.parametrize(("config", "reason"), [
    ({"model_type": "jamba", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 10,
      "attn_layer_period": 2, "attn_layer_offset": 2}, "'attn_layer_offset' must be smaller than attn_layer_period"),
    ({"model_type": "nemotron_h", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10,
      "hybrid_override_pattern": "M*X"}, "'hybrid_override_pattern' must be a string of M, *, - and E"),
    ({"model_type": "mamba2", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10, "num_heads": 3,
      "head_dim": 64}, "'num_heads' times head_dim (3 × 64) must equal expand × hidden_size (128)"),
    ({"model_type": "granitemoehybrid", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
      "vocab_size": 10, "mamba_n_heads": 4, "layer_types": ["mamba", "attention"]}, "'layer_types' must list 3 layers"),
    ({"model_type": "zamba2", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "n_mamba_heads": 8,
      "layers_block_type": ["mamba", "transformer"]}, "unsupported layer type 'transformer'"),
    ({"model_type": "mamba", "hidden_size": 0, "num_hidden_layers": 2, "vocab_size": 10},
     "'hidden_size' must be a positive integer"),
])
def test_malformed_state_space_configs_answer_in_one_line(config: dict[str, Any], reason: str) -> None:
    with pytest.raises(InvalidConfig) as err:
        from_hf_config(config, name="bad", source="bad.json")
    message = str(err.value)
    assert reason in message and "\n" not in message and message.startswith("bad.json")


def test_a_dense_granite_hybrid_has_its_shared_mlp_and_no_experts() -> None:
    spec = _spec("granite-4.0-h-1b")
    assert spec.moe is None and spec.params_active == spec.params_total
    # the shared SwiGLU (fused input_linear 1536 → 2 · 4096, output_linear 4096 → 1536) on each of 40 layers
    assert spec.params.mlp == 40 * (1536 * 2 * 4096 + 4096 * 1536)


def test_a_config_with_keys_the_family_does_not_read_is_refused() -> None:
    # experts on a pure Mamba config would be dropped silently if the key were not checked
    config = {"model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10, "num_experts": 8}
    with pytest.raises(InvalidConfig, match="does not read num_experts"):
        from_hf_config(config, name="m")


def test_nemotron_nano_9b_v2_by_hand() -> None:
    spec = _spec("nemotron-nano-9b-v2")
    # pattern of 56 blocks: 27 M (Mamba-2), 4 * (attention), 25 - (MLP)
    assert (spec.num_layers, spec.recurrent_layers, spec.attention_layers, spec.mlp_layers) == (56, 27, 4, 25)
    # Mamba-2: 128 heads · 80 = 10,240 inner; conv over 10,240 + 2 · 8 · 128 = 12,288 channels · 3 at 2 bytes;
    # SSM 128 · 80 · 128 at 4 bytes (float32 by NemotronHConfig's default)
    assert spec.state_bytes_per_sequence() == 27 * (12_288 * 3 * 2 + 128 * 80 * 128 * 4) == 143_548_416
    assert spec.kv_bytes_per_token() == 4 * 2 * 8 * 128 * 2


def test_qwen3_coder_next_has_its_published_window() -> None:
    # 262,144 tokens (docker/model-runner ai/qwen3-coder-next-vllm.md); the fixture's config once left the key out and
    # took transformers' Qwen3-Next default of 32,768, so a plan without --context was sized at an eighth of it.
    assert _spec("qwen3-coder-next").max_context_tokens == 262_144
