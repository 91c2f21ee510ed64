"""Regenerate ``transformers_edge_cases.json``: small configs that switch on every option the parsers read.

Each case is a tiny config (fast to build) exercising one branch: biases on/off, tied/untied heads, default
head dims, q/k norms, sparse-step MoE layouts, MLA with and without q_lora_rank, Falcon's layer-norm
variants, OPT's projected embeddings, … The counts come from transformers on the meta device; the test
suite checks AnchorGPU against them without torch. Run from a side virtualenv (see transformers_counts.py):

    /tmp/tfvenv/bin/python tests/architectures/transformers_edge_cases.py > tests/architectures/transformers_edge_cases.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

_L: dict[str, Any] = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 8,
                      "num_key_value_heads": 2, "vocab_size": 320, "max_position_embeddings": 256}
_MOE: dict[str, Any] = {**_L, "moe_intermediate_size": 48, "num_experts_per_tok": 2}
_MLA: dict[str, Any] = {**_MOE, "num_key_value_heads": 8, "kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
                        "v_head_dim": 16, "n_routed_experts": 8, "n_group": 1, "topk_group": 1}

CASES: dict[str, dict[str, Any]] = {
    "llama biases tied odd head_dim": {**_L, "model_type": "llama", "attention_bias": True, "mlp_bias": True,
                                       "tie_word_embeddings": True, "head_dim": 12},
    "mistral explicit head_dim window": {**_L, "model_type": "mistral", "head_dim": 16, "sliding_window": 32},
    "mixtral tied": {**_L, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2, "tie_word_embeddings": True},
    "qwen2 tied sliding": {**_L, "model_type": "qwen2", "tie_word_embeddings": True, "use_sliding_window": True,
                           "sliding_window": 16, "max_window_layers": 2},
    "qwen2_moe sparse step 2 dense layer 0": {**_MOE, "model_type": "qwen2_moe", "num_experts": 6, "decoder_sparse_step": 2,
                                              "mlp_only_layers": [1], "shared_expert_intermediate_size": 40},
    "qwen2_moe no qkv bias": {**_MOE, "model_type": "qwen2_moe", "num_experts": 4, "qkv_bias": False,
                              "shared_expert_intermediate_size": 24},
    "qwen3 bias tied": {**_L, "model_type": "qwen3", "attention_bias": True, "tie_word_embeddings": True, "head_dim": 16},
    "qwen3 default head_dim": {**_L, "model_type": "qwen3"},
    "qwen3_moe mlp_only_layers": {**_MOE, "model_type": "qwen3_moe", "num_experts": 8, "mlp_only_layers": [0, 3], "head_dim": 8},
    "gemma default head_dim": {**_L, "model_type": "gemma"},
    "gemma2 bias untied": {**_L, "model_type": "gemma2", "head_dim": 16, "attention_bias": True, "tie_word_embeddings": False,
                           "sliding_window": 32},
    "gemma3_text layer_types untied": {**_L, "model_type": "gemma3_text", "head_dim": 16, "tie_word_embeddings": False,
                                       "sliding_window": 32, "layer_types": ["sliding_attention", "full_attention",
                                                                             "sliding_attention", "sliding_attention"]},
    "gemma3_text pattern 2": {**_L, "model_type": "gemma3_text", "head_dim": 16, "sliding_window_pattern": 2},
    "phi3 gqa": {**_L, "model_type": "phi3", "sliding_window": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
    "deepseek_v2 q_lora bias": {**_MLA, "model_type": "deepseek_v2", "q_lora_rank": 24, "attention_bias": True,
                                "first_k_dense_replace": 2, "n_shared_experts": 2},
    "deepseek_v3 no q_lora all moe": {**_MLA, "model_type": "deepseek_v3", "q_lora_rank": None, "first_k_dense_replace": 0,
                                      "n_shared_experts": 1},
    "deepseek_v3 tied": {**_MLA, "model_type": "deepseek_v3", "q_lora_rank": 16, "first_k_dense_replace": 1,
                         "n_shared_experts": 1, "tie_word_embeddings": True},
    "gpt2 n_inner untied": {"model_type": "gpt2", "n_embd": 64, "n_layer": 3, "n_head": 4, "n_positions": 128, "vocab_size": 300,
                            "n_inner": 100, "tie_word_embeddings": False},
    "opt projected embeddings": {"model_type": "opt", "hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 3,
                                 "num_attention_heads": 4, "vocab_size": 300, "max_position_embeddings": 128,
                                 "word_embed_proj_dim": 32, "do_layer_norm_before": False},
    "opt no bias no affine": {"model_type": "opt", "hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 3,
                              "num_attention_heads": 4, "vocab_size": 300, "max_position_embeddings": 128,
                              "enable_bias": False, "layer_norm_elementwise_affine": False},
    "opt untied": {"model_type": "opt", "hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "vocab_size": 300, "max_position_embeddings": 128, "tie_word_embeddings": False},
    "falcon new arch one ln": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 8,
                               "num_kv_heads": 2, "vocab_size": 300, "new_decoder_architecture": True,
                               "num_ln_in_parallel_attn": 1},
    "falcon sequential mha bias": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 8,
                                   "vocab_size": 300, "multi_query": False, "parallel_attn": False, "bias": True,
                                   "ffn_hidden_size": 100, "tie_word_embeddings": False},
    "gpt_neox no attention bias tied": {"model_type": "gpt_neox", "hidden_size": 64, "intermediate_size": 128,
                                        "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 300,
                                        "attention_bias": False, "tie_word_embeddings": True, "rotary_pct": 0.5},
    "gpt_oss no attention bias default types": {**_L, "model_type": "gpt_oss", "head_dim": 16, "num_local_experts": 4,
                                                "num_experts_per_tok": 2, "attention_bias": False, "sliding_window": 16},
    "starcoder2 no bias untied": {**_L, "model_type": "starcoder2", "use_bias": False, "tie_word_embeddings": False,
                                  "sliding_window": 32},
    # issue 12 (helper A): the families described as Decoder rows, each with the options its row reads
    "olmo attention bias tied": {**_L, "model_type": "olmo", "attention_bias": True, "tie_word_embeddings": True,
                                 "pad_token_id": 0, "eos_token_id": 1},
    "olmo2 gqa head_dim": {**_L, "model_type": "olmo2", "head_dim": 12, "pad_token_id": 0, "eos_token_id": 1},
    "olmo3 layer_types bias": {**_L, "model_type": "olmo3", "attention_bias": True, "sliding_window": 16, "pad_token_id": 0,
                               "eos_token_id": 1, "layer_types": ["sliding_attention", "full_attention",
                                                                  "full_attention", "sliding_attention"]},
    "olmo3 default pattern tied": {**_L, "model_type": "olmo3", "tie_word_embeddings": True, "pad_token_id": 0,
                                   "eos_token_id": 1},
    "granite biases tied": {**_L, "model_type": "granite", "attention_bias": True, "mlp_bias": True,
                            "tie_word_embeddings": True},
    "granitemoe bias": {**_L, "model_type": "granitemoe", "num_local_experts": 6, "num_experts_per_tok": 2,
                        "attention_bias": True, "pad_token_id": 0},
    "phimoe lm_head bias attention bias": {**_L, "model_type": "phimoe", "num_local_experts": 4, "num_experts_per_tok": 2,
                                           "attention_bias": True, "lm_head_bias": True, "sliding_window": 32,
                                           "pad_token_id": 0},
    "bloom untied": {"model_type": "bloom", "hidden_size": 64, "n_layer": 3, "n_head": 8, "vocab_size": 300,
                     "tie_word_embeddings": False, "pad_token_id": 0},
    "bloom n_embed tied": {"model_type": "bloom", "n_embed": 96, "n_layer": 2, "num_attention_heads": 6, "vocab_size": 300,
                           "pad_token_id": 0},
    "cohere qk norm bias untied": {**_L, "model_type": "cohere", "use_qk_norm": True, "attention_bias": True,
                                   "tie_word_embeddings": False, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
    "cohere2 explicit head_dim pattern 2": {**_L, "model_type": "cohere2", "head_dim": 12, "sliding_window": 16, "pad_token_id": 0,
                                 "bos_token_id": 1, "eos_token_id": 2, "sliding_window_pattern": 2},
    "glm4 no bias tied": {**_L, "model_type": "glm4", "head_dim": 16, "attention_bias": False, "tie_word_embeddings": True,
                          "pad_token_id": 0, "eos_token_id": 1},
    "glm4 default head_dim": {**_L, "model_type": "glm4", "pad_token_id": 0, "eos_token_id": 1},
    "glm4_moe qk norm bias two dense": {**_MOE, "model_type": "glm4_moe", "n_routed_experts": 6, "n_shared_experts": 2,
                                        "first_k_dense_replace": 2, "use_qk_norm": True, "attention_bias": True,
                                        "head_dim": 16, "pad_token_id": 0},
    "glm4_moe no shared tied": {**_MOE, "model_type": "glm4_moe", "n_routed_experts": 4, "n_shared_experts": 0,
                                "first_k_dense_replace": 0, "tie_word_embeddings": True, "pad_token_id": 0},
    "ernie4_5 bias untied": {**_L, "model_type": "ernie4_5", "use_bias": True, "tie_word_embeddings": False, "head_dim": 16},
    "ernie4_5 default head_dim": {**_L, "model_type": "ernie4_5"},
    "ernie4_5_moe bias interval": {**_MOE, "model_type": "ernie4_5_moe", "moe_num_experts": 6, "moe_k": 2,
                                   "moe_num_shared_experts": 1, "use_bias": True, "moe_layer_start_index": 0,
                                   "moe_layer_end_index": 2, "moe_layer_interval": 2, "head_dim": 16},
    "ernie4_5_moe untied no shared": {**_MOE, "model_type": "ernie4_5_moe", "moe_num_experts": 4, "moe_k": 2,
                                      "moe_num_shared_experts": 0, "tie_word_embeddings": False, "head_dim": 8},
    "exaone4 tied pattern 2": {**_L, "model_type": "exaone4", "tie_word_embeddings": True, "sliding_window": 16,
                               "sliding_window_pattern": 2, "head_dim": 12},
    "smollm3 biases untied": {**_L, "model_type": "smollm3", "attention_bias": True, "mlp_bias": True,
                              "tie_word_embeddings": False, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
    "llama4_text interleaved dense": {**_L, "model_type": "llama4_text", "intermediate_size_mlp": 128, "num_local_experts": 4,
                                      "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "head_dim": 16,
                                      "attention_chunk_size": 32, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
    # Llama-4-sized text models (the widths of Scout and Maverick as published; built here, not copied)
    "llama4_text scout-sized all moe": {"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
                                        "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                                        "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048,
                                        "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
                                        "max_position_embeddings": 10485760, "pad_token_id": 0},
    "llama4_text maverick-sized step 2": {"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
                                          "intermediate_size_mlp": 16384, "num_hidden_layers": 48,
                                          "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
                                          "vocab_size": 202048, "num_local_experts": 128, "num_experts_per_tok": 1,
                                          "interleave_moe_layer_step": 2, "max_position_embeddings": 1048576,
                                          "pad_token_id": 0},
    "llama4_text moe_layers bias tied": {**_L, "model_type": "llama4_text", "intermediate_size_mlp": 80,
                                         "num_local_experts": 3, "num_experts_per_tok": 2, "moe_layers": [0, 3],
                                         "attention_bias": True, "tie_word_embeddings": True, "pad_token_id": 0,
                                         "bos_token_id": 1, "eos_token_id": 2},
}


def count(cfg: dict[str, Any]) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(**cfg)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    import torch
    import transformers

    out: dict[str, Any] = {
        "_about": (
            f"Small configs built by transformers {transformers.__version__} (torch {torch.__version__}) on the meta device; "
            "params_total = sum(p.numel() for p in model.parameters()). Generated by "
            "tests/architectures/transformers_edge_cases.py."
        )
    }
    for name, cfg in CASES.items():
        out[name] = {"config": cfg, "params_total": count(cfg)}
        print(name, out[name]["params_total"], file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
