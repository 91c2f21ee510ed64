"""What the parsed specs say beyond the totals: windows, tying defaults, MoE, MLA, linear groups."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import LinearGroup, ModelSpec, from_hf_config, load_model


def llm(name: str) -> ModelSpec:
    spec = load_model(name)
    assert isinstance(spec, ModelSpec)
    return spec


def test_mistral_v0_1_slides_a_4096_window_on_every_layer_and_v0_3_does_not() -> None:
    assert llm("mistral-7b-v0.1").layer_windows == (4096,) * 32
    assert llm("mistral-7b-v0.3").layer_windows == (None,) * 32


def test_gemma_2_alternates_sliding_and_global_layers_starting_with_sliding() -> None:
    windows = llm("gemma-2-9b").layer_windows
    assert windows[:4] == (4096, None, 4096, None)
    assert windows.count(None) == 21


def test_a_null_sliding_window_leaves_the_sliding_layers_unwindowed_and_an_absent_one_takes_the_default() -> None:
    # transformers 5.24: Gemma2Config(sliding_window=None) keeps None (its sliding layers then attend to, and
    # cache, every token); without the key the config's default window is 4096. The count does not change.
    base = {"model_type": "gemma2", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 320,
            "max_position_embeddings": 8192}
    null = from_hf_config({**base, "sliding_window": None}, name="g")
    absent = from_hf_config(base, name="g")
    assert null.layer_windows == (None,) * 4 and absent.layer_windows == (4096, None, 4096, None)
    assert null.params_total == absent.params_total


def test_gemma_3_has_five_local_layers_for_each_global_one() -> None:
    windows = llm("gemma-3-27b").layer_windows
    assert windows[:6] == (1024,) * 5 + (None,)
    assert windows.count(None) == 62 // 6  # layers 6, 12, …, 60 are global


def test_qwen_with_use_sliding_window_false_has_no_windows() -> None:
    assert set(llm("qwen2.5-7b").layer_windows) == {None}


def test_gpt_oss_alternates_a_128_token_window_from_layer_types() -> None:
    windows = llm("gpt-oss-20b").layer_windows
    assert windows[:2] == (128, None) and windows.count(128) == 12


def test_sliding_layers_stop_growing_the_cache_at_their_window() -> None:
    spec = llm("gemma-2-9b")  # 42 layers × 2 × 8 KV heads × 256 dims
    per_layer_token = 2 * 8 * 256
    assert spec.kv_values_for_context(4096) == 42 * 4096 * per_layer_token
    assert spec.kv_values_for_context(8192) == (21 * 8192 + 21 * 4096) * per_layer_token


@pytest.mark.parametrize(
    ("name", "tied"),
    [("gemma-7b", True), ("gpt2", True), ("opt-125m", True), ("qwen2.5-7b", False), ("qwen2.5-0.5b", True),
     ("llama-3.2-1b", True), ("llama-3.1-8b", False), ("pythia-1b", False), ("starcoder2-7b", True)],
)
def test_tied_embeddings_follow_the_config_or_the_model_type_default(name: str, tied: bool) -> None:
    spec = llm(name)
    assert spec.tie_word_embeddings is tied
    assert (spec.params.head == 0) is tied


def test_gemma_config_without_the_key_ties_like_transformers_does() -> None:
    cfg = {"model_type": "gemma", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100, "head_dim": 16}
    assert from_hf_config(cfg, name="g").params.head == 0
    cfg["model_type"] = "llama"
    cfg.pop("head_dim")
    assert from_hf_config(cfg, name="l").params.head == 64 * 100


def test_gemma_head_dim_comes_from_the_config_not_hidden_over_heads() -> None:
    spec = llm("gemma-7b")  # 3072 / 16 would be 192
    assert spec.head_dim == 256
    assert spec.kv_bytes_per_token() == 2 * 28 * 16 * 256 * 2


def test_falcon_7b_is_multi_query_and_falcon_40b_grouped() -> None:
    f7, f40 = llm("falcon-7b"), llm("falcon-40b")
    assert (f7.attention_kind, f7.num_kv_heads, f7.kv_bytes_per_token()) == ("mqa", 1, 2 * 32 * 64 * 2)
    assert (f40.attention_kind, f40.num_kv_heads) == ("gqa", 8)


def test_deepseek_v3_caches_the_mla_latent_and_counts_active_experts_like_the_reference() -> None:
    spec = llm("deepseek-v3")
    assert spec.attention_kind == "mla" and spec.mla is not None and spec.moe is not None
    assert spec.kv_bytes_per_token() == 61 * (512 + 64) * 2
    assert spec.moe.num_moe_layers == 58 and spec.moe.num_shared_experts == 1
    expert = 3 * 7168 * 2048
    assert spec.params_total - spec.params_active == 58 * (256 - 8) * expert
    assert any("multi-token" in note for note in spec.notes)


def test_deepseek_v2_lite_has_no_q_compression() -> None:
    spec = llm("deepseek-v2-lite")
    names = {g.name for g in spec.linear_groups}
    assert "q" in names and "q_a" not in names
    assert spec.mla is not None and spec.mla.q_lora_rank is None


def test_mixtral_linear_groups_say_how_many_experts_a_token_passes_through() -> None:
    spec = llm("mixtral-8x7b-v0.1")
    groups = {g.name: g for g in spec.linear_groups}
    assert groups["expert_gate"] == LinearGroup(
        name="expert_gate", d_in=4096, d_out=14336, count=32 * 8, active_count=32 * 2, component="experts"
    )
    assert groups["router"].count == groups["router"].active_count == 32


def test_qwen2_moe_has_a_shared_expert_and_its_sigmoid_gate_in_the_router() -> None:
    spec = llm("qwen2-57b-a14b")
    groups = {g.name: g for g in spec.linear_groups}
    assert groups["shared_expert_gate"].d_out == 1 and groups["shared_expert_gate"].component == "router"
    assert spec.params.shared_experts == 28 * 3 * 3584 * 20480
    assert spec.moe is not None and spec.moe.num_shared_experts == 1


def test_qwen2_attention_biases_are_on_q_k_v_only() -> None:
    groups = {g.name: g for g in llm("qwen2.5-7b").linear_groups}
    assert groups["q"].bias and groups["k"].bias and groups["v"].bias and not groups["o"].bias


def test_phi3_reports_its_fused_projections() -> None:
    groups = {g.name: g for g in llm("phi-3-mini-4k").linear_groups}
    assert groups["qkv"].d_out == 3 * 3072 and groups["gate_up"].d_out == 2 * 8192


def test_gpt_oss_counts_attention_sinks_under_other_with_a_note() -> None:
    spec = llm("gpt-oss-20b")
    assert spec.params.other == 24 * 64
    assert any("sink" in note for note in spec.notes)


def test_opt_position_table_has_the_two_offset_rows() -> None:
    assert llm("opt-125m").params.position_embeddings == (2048 + 2) * 768


def test_gemma_3_multimodal_config_counts_every_tower() -> None:
    # Changed for issue 12 (every tower counted): Gemma3ForConditionalGeneration in transformers 5.24 builds
    # 27,432,406,640 parameters (tests/architectures/transformers_counts.json), of which the language model is the
    # 27,009,346,304 counted before, the SigLIP vision tower 416,866,032 and the projector 6,194,304.
    spec = llm("gemma-3-27b")
    assert spec.model_type == "gemma3"
    assert dict(spec.towers) == {"language_model": 27_009_346_304, "vision": 416_866_032, "projector": 6_194_304}
    assert spec.params_total == 27_432_406_640 == sum(dict(spec.towers).values())


@pytest.mark.parametrize("name", ["llama-3.1-8b", "mixtral-8x22b-v0.1", "deepseek-v3", "gpt-oss-120b", "gpt2", "opt-350m"])
def test_linear_groups_plus_the_rest_add_up_to_the_breakdown(name: str) -> None:
    spec = llm(name)
    in_groups = sum(g.params + g.bias_params for g in spec.linear_groups)
    p = spec.params
    blocks = p.attention + p.mlp + p.experts + p.shared_experts + p.router
    assert in_groups <= blocks
    assert blocks - in_groups < spec.num_layers * spec.hidden_size * 8  # only norms/sinks live outside groups


def test_params_active_equals_total_for_dense_models() -> None:
    for name in ("llama-3.1-70b", "qwen3-32b", "phi-4", "falcon-40b"):
        spec = llm(name)
        assert spec.params_active == spec.params_total and spec.moe is None


@pytest.mark.parametrize(
    ("name", "published_billions"),
    [
        # OpenAI gpt-oss model card, Table 1: active parameters per token 3.61 B (20b) and 5.13 B (120b),
        # which leave out the input embedding lookup.
        ("gpt-oss-20b", 3.61),
        ("gpt-oss-120b", 5.13),
    ],
)
def test_matmul_active_parameters_match_the_published_gpt_oss_figures(name: str, published_billions: float) -> None:
    assert round(llm(name).params_active_matmul / 1e9, 2) == published_billions


def test_a_tied_table_still_counts_once_as_the_head_in_matmul_parameters() -> None:
    gpt2 = llm("gpt2")
    assert gpt2.params_active_matmul == gpt2.params_total - gpt2.params.position_embeddings
