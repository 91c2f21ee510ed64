"""Hypothesis properties of the counting: monotone in size, linear KV cache, junk never escapes as a crash."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.architectures import SUPPORTED_MODEL_TYPES, ModelSpec, from_hf_config
from anchorgpu.errors import InvalidConfig

GQA_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3", "starcoder2")
MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt_oss")


@st.composite
def decoder_configs(draw: st.DrawFn, types: tuple[str, ...] = GQA_TYPES) -> dict[str, Any]:
    kv = draw(st.integers(1, 8))
    heads = kv * draw(st.integers(1, 4))
    head_dim = draw(st.sampled_from([8, 16, 32, 64, 128]))
    return {
        "model_type": draw(st.sampled_from(types)),
        "hidden_size": heads * head_dim,
        "head_dim": head_dim,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "num_hidden_layers": draw(st.integers(1, 48)),
        "intermediate_size": draw(st.integers(1, 4096)),
        "vocab_size": draw(st.integers(1, 200_000)),
        "max_position_embeddings": draw(st.integers(1, 1 << 20)),
        "tie_word_embeddings": draw(st.booleans()),
        "attention_bias": draw(st.booleans()),
    }


def moe_config(cfg: dict[str, Any], model_type: str, experts: int, top_k: int) -> dict[str, Any]:
    """Only the expert keys the family reads: a config setting keys its family ignores is refused."""
    common = {**cfg, "model_type": model_type, "num_experts_per_tok": top_k}
    if model_type in ("mixtral", "gpt_oss"):
        return {**common, "num_local_experts": experts}
    if model_type in ("qwen2_moe", "qwen3_moe"):
        return {**common, "num_experts": experts, "moe_intermediate_size": 64}
    return {**common, "n_routed_experts": experts, "moe_intermediate_size": 64, "n_shared_experts": 1, "kv_lora_rank": 32,
            "q_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "first_k_dense_replace": 0}


def spec(cfg: dict[str, Any]) -> ModelSpec:
    return from_hf_config(cfg, name="prop")


@settings(max_examples=150, deadline=None)
@given(decoder_configs())
def test_adding_a_layer_always_adds_parameters(cfg: dict[str, Any]) -> None:
    deeper = {**cfg, "num_hidden_layers": cfg["num_hidden_layers"] + 1}
    assert spec(deeper).params_total > spec(cfg).params_total


@settings(max_examples=150, deadline=None)
@given(decoder_configs())
def test_kv_bytes_scale_linearly_with_layers_and_kv_heads(cfg: dict[str, Any]) -> None:
    one_layer = spec({**cfg, "num_hidden_layers": 1}).kv_bytes_per_token()
    assert spec(cfg).kv_bytes_per_token() == cfg["num_hidden_layers"] * one_layer
    single_kv = {**cfg, "num_key_value_heads": 1, "num_attention_heads": cfg["num_attention_heads"] // cfg["num_key_value_heads"]}
    per_head = spec(single_kv).kv_bytes_per_token()
    assert spec(cfg).kv_bytes_per_token() == cfg["num_key_value_heads"] * per_head
    assert spec(cfg).kv_bytes_per_token(1) * 2 == spec(cfg).kv_bytes_per_token(2)


@settings(max_examples=150, deadline=None)
@given(decoder_configs())
def test_dense_breakdowns_add_up_and_everything_is_active(cfg: dict[str, Any]) -> None:
    s = spec(cfg)
    assert s.params.total == s.params_total == s.params_active
    assert sum(g.params + g.bias_params for g in s.linear_groups) < s.params_total
    assert len(s.layer_windows) == s.num_layers
    assert (s.params.head == 0) == s.tie_word_embeddings


@settings(max_examples=100, deadline=None)
@given(decoder_configs(), st.sampled_from(MOE_TYPES), st.integers(2, 16), st.data())
def test_more_experts_per_token_adds_active_parameters_but_not_total(
    cfg: dict[str, Any], model_type: str, experts: int, data: st.DataObject
) -> None:
    k = data.draw(st.integers(1, experts - 1))
    fewer, more = spec(moe_config(cfg, model_type, experts, k)), spec(moe_config(cfg, model_type, experts, k + 1))
    assert fewer.params_total == more.params_total
    assert fewer.params_active < more.params_active <= more.params_total
    if k + 1 == experts:
        assert more.params_active == more.params_total


@settings(max_examples=100, deadline=None)
@given(decoder_configs(("mistral", "gemma2", "gemma3_text")), st.integers(1, 4096), st.integers(0, 100_000), st.integers(0, 100_000))
def test_windowed_kv_grows_with_context_and_never_beats_full_attention(
    cfg: dict[str, Any], window: int, a: int, b: int
) -> None:
    s = spec({**cfg, "sliding_window": window})
    lo, hi = sorted((a, b))
    assert s.kv_values_for_context(lo) <= s.kv_values_for_context(hi) <= s.kv_values_per_token() * hi


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.integers(), st.floats(allow_nan=True), st.text(max_size=5),
                 st.lists(st.integers(-2, 3), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
KEYS = st.sampled_from([
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size",
    "head_dim", "max_position_embeddings", "sliding_window", "layer_types", "num_local_experts", "num_experts",
    "num_experts_per_tok", "n_routed_experts", "moe_intermediate_size", "kv_lora_rank", "q_lora_rank", "mlp_only_layers",
    "decoder_sparse_step", "first_k_dense_replace", "n_embd", "n_layer", "n_head", "n_positions", "ffn_dim",
    "text_config", "tie_word_embeddings", "use_sliding_window", "sliding_window_pattern", "word_embed_proj_dim",
])


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SUPPORTED_MODEL_TYPES), st.dictionaries(KEYS, JUNK, max_size=12), decoder_configs())
def test_junk_configs_give_invalid_config_or_a_spec_never_another_error(
    model_type: str, junk: dict[str, Any], base: dict[str, Any]
) -> None:
    cfg = {**base, **junk, "model_type": model_type}
    try:
        s = from_hf_config(cfg, name="junk", source="junk.json")
    except InvalidConfig as exc:
        assert str(exc).startswith("junk.json") and "\n" not in str(exc)
    else:
        assert s.params_total > 0 and s.params_active <= s.params_total
