"""Hand-built model records for figures whose models are not in the registry (dimensions from their configs)."""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner._examples import decoder


def tinyllama_1_1b() -> ModelSpec:
    """TinyLlama-1.1B (TinyLlama/TinyLlama-1.1B config.json): L 22, h 2048, ffn 5632, 32 heads, 4 KV heads."""
    return decoder(name="tinyllama-1.1b", layers=22, hidden=2048, ffn=5632, heads=32, kv_heads=4, vocab=32000,
                   context=2048)


def stablelm_base_alpha_3b() -> ModelSpec:
    """stabilityai/stablelm-base-alpha-3b (GPT-NeoX): L 16, h 4096, 32 heads, ffn 4h, vocab 50688, biases."""
    return decoder(name="stablelm-base-alpha-3b", layers=16, hidden=4096, ffn=16384, heads=32, kv_heads=32,
                   vocab=50688, context=4096, gated=False, layernorm_bias=True, qkv_bias=True, mlp_bias=True,
                   model_type="gpt_neox")


def phi_2() -> ModelSpec:
    """microsoft/phi-2: L 32, h 2560, 32 heads, ffn 10240 (GELU), vocab 51200, biases, untied head."""
    return decoder(name="phi-2", layers=32, hidden=2560, ffn=10240, heads=32, kv_heads=32, vocab=51200,
                   context=2048, gated=False, layernorm_bias=True, qkv_bias=True, mlp_bias=True, model_type="phi")


def llama_7b() -> ModelSpec:
    """LLaMA-7B (Touvron et al. 2023): L 32, h 4096, ffn 11008, 32 heads, vocab 32000."""
    return decoder(name="llama-7b", layers=32, hidden=4096, ffn=11008, heads=32, kv_heads=32, vocab=32000,
                   context=2048)
