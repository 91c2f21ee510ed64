"""What PyTorch-native selective activation checkpointing keeps and runs again: torchtitan's op-level policy
(``--activation_checkpoint.mode selective --activation_checkpoint.selective_ac_option op``), which the planner takes
for ``--recompute selective`` with ``--train-stack pytorch`` (:mod:`anchorgpu.planner.memory`). Pure.

The policy (torchtitan ``torchtitan/parallelisms/parallelize_llama.py``, 2024, the version of the December 2024
benchmark runs; ``torchtitan/distributed/activation_checkpoint.py`` later): inside each transformer block, the
outputs of the matrix products (``aten.mm``), the attention kernel (SDPA) and the tensor-parallel reduce-scatters
are saved, except every second matrix product, which is run again in the backward pass with every pointwise
operation (norms, rotary embedding, activation function). The block's input is kept by the checkpoint itself.

A Llama block's products run in the order q, k, v, o, gate, up, down: q, v, gate and down are kept; k, o and up run
again. The block keeps ``4h + kv·d + f`` values a token (input, SDPA output, q, v, gate, down) where Megatron's
selective recompute keeps ``10 + 2q + 4kv + 2q + 6f/h`` bytes per hidden unit: for Llama 3.1 8B 15.5 bytes per
hidden unit against 36.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner._frozen import memo_on_frozen

__all__ = ["OpSacLayer", "op_sac_layer"]


@dataclass(frozen=True, slots=True)
class OpSacLayer:
    """An average layer under the op-level policy, per token: values kept that tensor parallelism splits
    (``split_values``), values kept whole on every rank unless sequence parallelism splits them
    (``replicated_values``: the block's input and the row-parallel products' outputs), and the parameters of the
    products run again (``recomputed_params``: two FLOPs each a token in the recomputed forward pass)."""

    split_values: float
    replicated_values: float
    recomputed_params: float


@memo_on_frozen
def op_sac_layer(model: ModelSpec) -> OpSacLayer:
    """The op-level policy's kept values and recomputed parameters for an average layer of ``model``.

    Attention as four products (q, k, v, o; an attention layer's share of them), then the MLP's (gate, up and down
    when gated, else up and down; a mixture of experts' routed and shared experts as one MLP of their summed width,
    an approximation: grouped expert products are not ``aten.mm``), numbered from 1 within the block; the odd ones
    are kept. A recurrent (Mamba/linear-attention) layer keeps its mixer's values as
    :func:`~anchorgpu.planner.memory.layer_activation_bytes` counts them.

    >>> from anchorgpu.architectures import load_model
    >>> m = load_model("llama-3.1-8b"); lay = op_sac_layer(m)
    >>> (lay.split_values + lay.replicated_values) / m.hidden_size  # 4h + kv + f over h
    7.75
    >>> round(lay.recomputed_params / 1e6, 1)  # k, o and up: 4096 x (1024 + 4096 + 14336)
    79.7
    """
    h = model.hidden_size
    layers = max(1, model.num_layers)
    attention_share = model.attention_layers / layers
    mlp_share = (model.mlp_layers if model.mlp_layers is not None else layers) / layers
    q_out = model.num_attention_heads * model.head_dim
    kv_out = model.num_kv_heads * model.head_dim
    # (output values a token, parameters, the output is whole on every TP rank, share of layers with the product)
    products: list[tuple[float, float, bool, float]] = [
        (q_out, h * q_out, False, attention_share), (kv_out, h * kv_out, False, attention_share),
        (kv_out, h * kv_out, False, attention_share), (h, q_out * h, True, attention_share),
    ]
    moe = model.moe
    width = (moe.expert_intermediate_size * (moe.experts_per_token + moe.num_shared_experts) if moe is not None
             else model.intermediate_size)
    if model.gated_mlp:
        products += [(width, h * width, False, mlp_share), (width, h * width, False, mlp_share)]
    else:
        products.append((width, h * width, False, mlp_share))
    products.append((h, width * h, True, mlp_share))
    split = attention_share * q_out  # the attention kernel's output
    replicated = float(h)  # the block's input
    recomputed = 0.0
    for number, (out, params, whole, share) in enumerate(products, start=1):
        if number % 2:
            if whole:
                replicated += share * out
            else:
                split += share * out
        else:
            recomputed += share * params
    if model.recurrent is not None:
        split += model.recurrent_layers / layers * model.recurrent.activation_values_per_token
    return OpSacLayer(split_values=split, replicated_values=replicated, recomputed_params=recomputed)
