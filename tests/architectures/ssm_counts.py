"""Regenerate ``ssm_counts.json``: unseen configs of every state-space and hybrid family, counted by transformers.

Not part of the product and not run by the test suite (it needs torch and transformers). Run it from the side
virtualenv with the pinned versions (torch==2.13.0 CPU, transformers==5.24.0):

    /work/tfvenv/bin/python tests/architectures/ssm_counts.py > tests/architectures/ssm_counts.json

Each config is a size no registry model has, and each turns on a setting the registry configs leave off (biases,
tied or untied heads, groups, latent MoE, dense-only Jamba, Granite without experts, Qwen3-Next sparse steps,
Zamba2 adapters and shared blocks), so the parsers are checked beyond the published models.
"""

from __future__ import annotations

import json
from typing import Any

CONFIGS: dict[str, dict[str, Any]] = {
    "mamba-expand3-bias": {"model_type": "mamba", "hidden_size": 512, "num_hidden_layers": 6, "vocab_size": 1000,
                           "state_size": 8, "conv_kernel": 3, "expand": 3, "use_bias": True, "use_conv_bias": False,
                           "tie_word_embeddings": False},
    "mamba-explicit-width": {"model_type": "mamba", "hidden_size": 320, "num_hidden_layers": 3, "vocab_size": 777,
                             "intermediate_size": 1000, "time_step_rank": 20},
    "falcon-mamba-small": {"model_type": "falcon_mamba", "hidden_size": 256, "num_hidden_layers": 4,
                           "vocab_size": 500, "state_size": 16},
    "mamba2-groups-bias": {"model_type": "mamba2", "hidden_size": 256, "num_hidden_layers": 3, "vocab_size": 600,
                           "expand": 2, "num_heads": 8, "head_dim": 64, "n_groups": 2, "state_size": 32,
                           "use_bias": True, "tie_word_embeddings": True},
    "jamba-small-moe": {"model_type": "jamba", "hidden_size": 256, "num_hidden_layers": 8, "num_attention_heads": 8,
                        "num_key_value_heads": 2, "attn_layer_period": 4, "attn_layer_offset": 1,
                        "expert_layer_period": 3, "expert_layer_offset": 0, "num_experts": 4, "num_experts_per_tok": 2,
                        "intermediate_size": 512, "mamba_d_state": 8, "mamba_proj_bias": True,
                        "mamba_conv_bias": False, "tie_word_embeddings": True, "vocab_size": 700},
    "jamba-dense": {"model_type": "jamba", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                    "num_key_value_heads": 4, "attn_layer_period": 2, "attn_layer_offset": 0, "num_experts": 1,
                    "intermediate_size": 300, "vocab_size": 400, "mamba_dt_rank": 12},
    "nemotron-h-pattern-moe": {"model_type": "nemotron_h", "hidden_size": 256, "num_hidden_layers": 8,
                               "hybrid_override_pattern": "M-*EM-E*", "num_attention_heads": 4,
                               "num_key_value_heads": 2, "head_dim": 32, "mamba_num_heads": 8, "mamba_head_dim": 16,
                               "n_groups": 2, "ssm_state_size": 16, "intermediate_size": 300, "n_routed_experts": 4,
                               "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                               "moe_shared_expert_intermediate_size": 96, "mlp_bias": True, "use_bias": True,
                               "vocab_size": 900},
    "nemotron-h-list-latent": {"model_type": "nemotron_h", "hidden_size": 192, "num_hidden_layers": 5,
                               "layers_block_type": ["mamba", "moe", "attention", "mamba", "moe"],
                               "num_attention_heads": 6, "num_key_value_heads": 3, "head_dim": 40,
                               "mamba_num_heads": 4, "mamba_head_dim": 32, "n_groups": 1, "ssm_state_size": 8,
                               "n_routed_experts": 6, "num_experts_per_tok": 3, "moe_intermediate_size": 48,
                               "moe_shared_expert_intermediate_size": 80, "moe_latent_size": 64,
                               "tie_word_embeddings": True, "vocab_size": 300},
    "granite-hybrid-moe-bias": {"model_type": "granitemoehybrid", "hidden_size": 256, "num_hidden_layers": 6,
                                "num_attention_heads": 8, "num_key_value_heads": 2, "attention_bias": True,
                                "intermediate_size": 64, "shared_intermediate_size": 96, "num_local_experts": 8,
                                "num_experts_per_tok": 2, "vocab_size": 640, "mamba_n_heads": 8, "mamba_n_groups": 2,
                                "mamba_d_state": 32, "mamba_proj_bias": True, "mamba_conv_bias": False,
                                "layer_types": ["mamba", "attention", "mamba", "mamba", "attention", "mamba"]},
    "granite-hybrid-dense": {"model_type": "granitemoehybrid", "hidden_size": 128, "num_hidden_layers": 4,
                             "num_attention_heads": 4, "num_key_value_heads": 4, "num_local_experts": 0,
                             "num_experts_per_tok": 0, "shared_intermediate_size": 320, "vocab_size": 256,
                             "mamba_n_heads": 4, "mamba_d_head": 64, "mamba_d_state": 16, "tie_word_embeddings": True,
                             "layer_types": ["mamba", "mamba", "attention", "mamba"]},
    "qwen3-next-sparse-step": {"model_type": "qwen3_next", "hidden_size": 128, "num_hidden_layers": 6,
                               "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
                               "attention_bias": True, "full_attention_interval": 3, "intermediate_size": 200,
                               "moe_intermediate_size": 40, "shared_expert_intermediate_size": 56, "num_experts": 6,
                               "num_experts_per_tok": 2, "decoder_sparse_step": 2, "mlp_only_layers": [3],
                               "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
                               "linear_value_head_dim": 24, "linear_conv_kernel_dim": 3, "vocab_size": 500},
    "qwen3-next-layer-list": {"model_type": "qwen3_next", "hidden_size": 96, "num_hidden_layers": 4,
                              "num_attention_heads": 6, "num_key_value_heads": 1, "head_dim": 16,
                              "layer_types": ["linear_attention", "full_attention", "linear_attention",
                                              "linear_attention"],
                              "moe_intermediate_size": 24, "shared_expert_intermediate_size": 32, "num_experts": 3,
                              "num_experts_per_tok": 1, "linear_num_key_heads": 3, "linear_num_value_heads": 3,
                              "linear_key_head_dim": 8, "linear_value_head_dim": 8, "tie_word_embeddings": True,
                              "vocab_size": 333},
    "zamba2-adapters": {"model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4,
                        "num_key_value_heads": 4, "intermediate_size": 80, "vocab_size": 100, "mamba_d_state": 16,
                        "n_mamba_heads": 8, "mamba_ngroups": 1, "num_mem_blocks": 2, "adapter_rank": 8,
                        "use_shared_attention_adapter": True,
                        "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "mamba", "hybrid"]},
    "zamba2-bias-untied": {"model_type": "zamba2", "hidden_size": 96, "num_hidden_layers": 5,
                           "num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 120, "mamba_d_state": 8,
                           "n_mamba_heads": 4, "mamba_ngroups": 2, "num_mem_blocks": 3, "adapter_rank": 4,
                           "tie_word_embeddings": False, "add_bias_linear": True,
                           "layers_block_type": ["hybrid", "mamba", "mamba", "hybrid", "mamba"]},
    "zamba2-default-pattern": {"model_type": "zamba2", "hidden_size": 64, "num_attention_heads": 4,
                               "vocab_size": 100, "n_mamba_heads": 8},
}


def count(raw: dict[str, Any]) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    return sum(p.numel() for p in model.parameters())  # a tied or shared tensor once


def main() -> None:
    import torch
    import transformers

    out: dict[str, Any] = {
        "_about": (f"Parameter counts by transformers {transformers.__version__} (torch {torch.__version__}) on the meta "
                   "device for unseen state-space and hybrid configs. Generated by tests/architectures/ssm_counts.py."),
    }
    for name, raw in CONFIGS.items():
        out[name] = {"config": raw, "params_total": count(raw)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
