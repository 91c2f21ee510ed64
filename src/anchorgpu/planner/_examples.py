"""Hand-built model records for doctests and tests (the registry in ``architectures`` is the real source).

Parameter counts follow the standard decoder layout (Llama-style: q/k/v/o projections without bias,
SwiGLU MLP, RMSNorm, untied head unless ``tied``); for Llama-3.1-8B and -70B they equal the counts in
``reference/configs/expected_params.json`` exactly (see tests/planner/test_examples.py).
"""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.architectures.spec import LinearGroup, ModelSpec, MoeSpec, ParamBreakdown

__all__ = ["decoder", "gpt3_175b", "llama_3_1_8b", "llama_3_1_70b", "llama_65b", "tiny_model"]


def decoder(
    *, name: str, layers: int, hidden: int, ffn: int, heads: int, kv_heads: int, vocab: int, context: int,
    head_dim: int | None = None, tied: bool = False, gated: bool = True, norm_params_per_layer: int | None = None,
    layernorm_bias: bool = False, position_embeddings: int = 0, qkv_bias: bool = False, mlp_bias: bool = False,
    moe: MoeSpec | None = None, windows: tuple[int | None, ...] | None = None, model_type: str = "llama",
) -> ModelSpec:
    """A decoder-only transformer built from its dimensions, with exact parameter counts."""
    d = head_dim if head_dim is not None else hidden // heads
    q_out, kv_out = heads * d, kv_heads * d
    groups = [
        LinearGroup(name="q", d_in=hidden, d_out=q_out, count=layers, active_count=layers),
        LinearGroup(name="k", d_in=hidden, d_out=kv_out, count=layers, active_count=layers),
        LinearGroup(name="v", d_in=hidden, d_out=kv_out, count=layers, active_count=layers),
        LinearGroup(name="o", d_in=q_out, d_out=hidden, count=layers, active_count=layers),
    ]
    attention = sum(g.params for g in groups) + (layers * (q_out + 2 * kv_out) if qkv_bias else 0)
    attention += layers * hidden if qkv_bias and not gated else 0  # GPT-2 style: output bias too
    mlp = experts = 0
    if moe is None:
        names = ("gate", "up", "down") if gated else ("up", "down")
        mlp_groups = [
            LinearGroup(name=n, d_in=ffn if n == "down" else hidden, d_out=hidden if n == "down" else ffn,
                        count=layers, active_count=layers)
            for n in names
        ]
        groups += mlp_groups
        mlp = sum(g.params for g in mlp_groups) + (layers * (ffn + hidden) if mlp_bias else 0)
    else:
        e, k, f = moe.num_experts, moe.experts_per_token, moe.expert_intermediate_size
        expert_groups = [
            LinearGroup(name="expert_" + n, d_in=f if n == "down" else hidden, d_out=hidden if n == "down" else f,
                        count=layers * e, active_count=layers * k)
            for n in ("gate", "up", "down")
        ]
        groups += expert_groups
        experts = sum(g.params for g in expert_groups)
    router = layers * hidden * moe.num_experts if moe is not None else 0
    per_norm = 2 * hidden if layernorm_bias else hidden
    norms = norm_params_per_layer * layers if norm_params_per_layer is not None else 2 * per_norm * layers
    norms += per_norm
    embeddings = vocab * hidden
    head = 0 if tied else vocab * hidden
    params = ParamBreakdown(
        embeddings=embeddings, position_embeddings=position_embeddings, attention=attention, mlp=mlp,
        experts=experts, shared_experts=0, router=router, norms=norms, head=head,
    )
    active = params.total - (experts - sum(g.d_in * g.d_out * g.active_count for g in groups
                                           if g.name.startswith("expert")))
    return ModelSpec(
        name=name, model_type=model_type, family=name, num_layers=layers, hidden_size=hidden,
        intermediate_size=0 if moe is not None else ffn, num_attention_heads=heads, num_kv_heads=kv_heads,
        head_dim=d, vocab_size=vocab, max_context_tokens=context, tie_word_embeddings=tied,
        attention_kind="mha" if kv_heads == heads else ("mqa" if kv_heads == 1 else "gqa"),
        gated_mlp=gated, params=params, params_active=active, linear_groups=tuple(groups),
        layer_windows=windows if windows is not None else (None,) * layers, moe=moe,
        source="anchorgpu.planner._examples (hand-built)",
    )


def tiny_model() -> ModelSpec:
    """A 2-layer toy model for doctests."""
    return decoder(name="tiny", layers=2, hidden=64, ffn=256, heads=4, kv_heads=2, vocab=1000, context=2048)


def llama_3_1_8b() -> ModelSpec:
    return decoder(name="llama-3.1-8b", layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8,
                   vocab=128256, context=131072)


def llama_3_1_70b() -> ModelSpec:
    return decoder(name="llama-3.1-70b", layers=80, hidden=8192, ffn=28672, heads=64, kv_heads=8,
                   vocab=128256, context=131072)


def llama_65b() -> ModelSpec:
    """LLaMA-65B (Touvron et al. 2023): L 80, h 8192, ffn 22016, 64 heads, vocab 32000."""
    return decoder(name="llama-65b", layers=80, hidden=8192, ffn=22016, heads=64, kv_heads=64,
                   vocab=32000, context=2048)


def gpt3_175b() -> ModelSpec:
    """GPT-3 175B (Brown et al. 2020): L 96, h 12288, 96 heads, ffn 4h, vocab 50257, context 2048; trained with
    dropout on its residual stream, as GPT-2's configs state (``resid_pdrop`` 0.1) and Korthikanti et al.'s GPT layers
    keep (their 1-byte masks)."""
    return replace(decoder(name="gpt3-175b", layers=96, hidden=12288, ffn=4 * 12288, heads=96, kv_heads=96, vocab=50257,
                   context=2048, tied=True, gated=False, layernorm_bias=True, qkv_bias=True, mlp_bias=True,
                   position_embeddings=2048 * 12288, model_type="gpt2"), hidden_dropout=0.1)
