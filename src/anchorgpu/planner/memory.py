"""One small function per memory term, per GPU, in bytes. Pure; stdlib only.

Notation (formulas.md): L layers, h hidden, a heads, kv KV heads, d head dim, V vocabulary, s sequence,
b micro-batch, t tensor-parallel ranks, p pipeline stages, N data-parallel ranks. Every function returns
integer bytes (or parameter counts where named) and names its source; none reads a clock, a file or
the environment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.formats import ModelParts
from anchorgpu.planner.inputs import Recompute
from anchorgpu.units import ceil_div

__all__ = [
    "SAMPLER_BYTES_PER_SEQ_VOCAB",
    "FUSED_LORA_TARGETS",
    "RECURRENT_LORA_TARGETS",
    "SSM_DEFAULT_LORA_TARGETS",
    "adapter_params",
    "expand_lora_targets",
    "gather_buffer_bytes",
    "gradient_bytes",
    "inference_activation_bytes",
    "korthikanti_layer_activation_bytes",
    "kv_cache_bytes",
    "kv_values_per_token_per_gpu",
    "layer_activation_bytes",
    "logits_bytes",
    "master_weight_bytes",
    "optimizer_moment_bytes",
    "prefill_activation_bytes",
    "recurrent_state_bytes",
    "sampler_activation_bytes",
    "STATE_BYTES_PER_VALUE",
    "shard_share",
    "stage_layers",
    "training_activation_bytes",
    "zero_fraction",
]



# --------------------------------------------------------------------------------------------------
# Sharding
# --------------------------------------------------------------------------------------------------

def stage_layers(num_layers: int, pp: int) -> int:
    """Transformer layers on the most-loaded pipeline stage: ceil(L / p).

    >>> stage_layers(80, 3)
    27
    """
    return ceil_div(num_layers, pp)


def shard_share(parts: ModelParts, *, tp: int, pp: int, ep: int, dp_shard: int = 1) -> int:
    """Per-GPU share of a model split into :class:`ModelParts` (parameters or bytes), most-loaded stage.

    Formula (Megatron ``theoretical_memory_usage.py``, "most-loaded shard"):
    ``layers · ceil(L/p)/L + edge``, where layers = dense/t + experts/(EP if EP > 1 else t) + layer_other
    (norms replicated across TP) and edge = (embed + head)/t when p = 1, else max(embed, head or a tied
    copy of embed)/t (first stage holds the embedding, last stage the head). Divided by ``dp_shard``
    under ZeRO-3/FSDP.

    >>> from anchorgpu.planner.formats import ModelParts
    >>> parts = ModelParts(dense=800, experts=0, layer_other=8, embed=100, head=100, num_layers=8, tied=False)
    >>> shard_share(parts, tp=2, pp=1, ep=1)
    508
    >>> shard_share(parts, tp=1, pp=2, ep=1)
    504
    """
    expert_split = ep if ep > 1 else tp
    per_layers = parts.dense / tp + parts.experts / expert_split + parts.layer_other
    layer_share = per_layers * stage_layers(parts.num_layers, pp) / max(1, parts.num_layers)
    if pp == 1:
        edge = (parts.embed + parts.head) / tp
    else:
        edge = max(parts.embed, parts.head if not parts.tied else parts.embed) / tp
    return math.ceil((layer_share + edge) / dp_shard)


def routed_expert_share(parts: ModelParts, *, tp: int, pp: int, ep: int) -> float:
    """The routed experts' part of :func:`shard_share` (most-loaded stage): under EP one GPU holds 1/ep of a
    stage's experts (1/tp of each without EP, as the rest).

    >>> from anchorgpu.planner.formats import ModelParts
    >>> routed_expert_share(ModelParts(dense=80, experts=800, layer_other=0, embed=0, head=0, num_layers=8,
    ...                                tied=False), tp=1, pp=2, ep=8)
    50.0
    """
    return parts.experts / (ep if ep > 1 else tp) * stage_layers(parts.num_layers, pp) / max(1, parts.num_layers)


def expert_data_parallel(*, tp: int, dp: int, cp: int, ep: int) -> int:
    """The GPUs of one pipeline stage that hold the same routed experts under expert parallelism, what ZeRO can
    shard the experts' states over (Megatron's expert data-parallel group, tp x cp x dp / ep with expert tensor
    parallelism 1); ``dp`` without EP, where the experts are replicated over the data-parallel ranks as the rest.

    >>> expert_data_parallel(tp=1, dp=128, cp=1, ep=64), expert_data_parallel(tp=8, dp=4, cp=1, ep=1)
    (2, 4)
    """
    return max(1, tp * dp * cp // ep) if ep > 1 else dp


def gather_buffer_bytes(weight_parts: ModelParts, *, tp: int, units: int = 2) -> int:
    """ZeRO-3/FSDP gather buffers: ``units`` unsharded transformer layers (current + prefetched), / t.

    Source: formulas.md item 2 (FSDP holds one or two unsharded units for prefetch; DeepSpeed's
    gathered-layer buffer). Default 2 units.

    >>> from anchorgpu.planner.formats import ModelParts
    >>> gather_buffer_bytes(ModelParts(dense=800, experts=0, layer_other=0, embed=0, head=0, num_layers=8,
    ...                                tied=False), tp=1)
    200
    """
    return math.ceil(units * weight_parts.largest_layer / tp)


def zero_fraction(*, zero: int, stage_from: int, dp: int) -> float:
    """1/N when the ZeRO stage shards this state (stage >= ``stage_from``), else 1.

    ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states (master + moments), stage 2 also
    gradients, stage 3 also parameters.

    >>> zero_fraction(zero=2, stage_from=1, dp=64)
    0.015625
    >>> zero_fraction(zero=1, stage_from=2, dp=64)
    1.0
    """
    return 1 / dp if zero >= stage_from else 1.0


# --------------------------------------------------------------------------------------------------
# Model states (training)
# --------------------------------------------------------------------------------------------------

def gradient_bytes(params: float, *, bytes_per_value: int, zero: int, dp: int) -> int:
    """Gradient buffers: params · bytes (2 in ZeRO's accounting, 4 for fp32 grads) / N at ZeRO >= 2.

    >>> gradient_bytes(7_500_000_000, bytes_per_value=2, zero=0, dp=64)
    15000000000
    """
    return math.ceil(params * bytes_per_value * zero_fraction(zero=zero, stage_from=2, dp=dp))


def master_weight_bytes(params: float, *, mixed_precision: bool, zero: int, dp: int) -> int:
    """fp32 master copy in mixed precision: 4 · params / N at ZeRO >= 1; none in pure bf16 training.

    >>> master_weight_bytes(1_000, mixed_precision=True, zero=1, dp=4)
    1000
    """
    if not mixed_precision:
        return 0
    return math.ceil(4 * params * zero_fraction(zero=zero, stage_from=1, dp=dp))


OPTIMIZER_MOMENT_BYTES: dict[str, int] = {"adamw": 8, "adamw-8bit": 2, "sgd": 4, "lion": 4}


def optimizer_moment_bytes(
    params: int, *, optimizer: str, zero: int, dp: int, moment_scale: float = 1.0,
    matrix_shapes: Sequence[tuple[int, int, int]] = (),
) -> int:
    """Optimizer state (moments only, no master copy) per GPU.

    Bytes per parameter at fp32 moments: AdamW 8 (m, v), 8-bit AdamW 2 (bitsandbytes block-wise; its
    per-2048 fp32 absmax is ignored, 0.4 %), SGD with momentum 4, Lion 4 (one momentum). Adafactor keeps
    factored second moments: (d_in + d_out) · 4 per matrix and 4 per remaining parameter, no momentum.
    ``moment_scale`` = 0.5 when moments live in bf16 (``torch.optim`` keeps them in the parameter dtype).
    Sharded by ZeRO >= 1. Sources: EleutherAI "Transformer Math 101"; Shazeer & Stern 2018 (Adafactor);
    published_figures.md A (GPT-2 124M Adam state, moments in the parameter dtype).

    >>> optimizer_moment_bytes(124_439_808, optimizer="adamw", zero=0, dp=1)
    995518464
    """
    frac = zero_fraction(zero=zero, stage_from=1, dp=dp)
    if optimizer == "adafactor":
        matrix_params = sum(count * d_in * d_out for count, d_in, d_out in matrix_shapes)
        factored = sum(count * (d_in + d_out) for count, d_in, d_out in matrix_shapes)
        values = factored + max(0, params - matrix_params)
        return math.ceil(4 * values * moment_scale * frac)
    return math.ceil(params * OPTIMIZER_MOMENT_BYTES[optimizer] * moment_scale * frac)


def adapter_params(model: ModelSpec, *, rank: int, targets: Sequence[str]) -> int:
    """LoRA adapter parameters: r · (d_in + d_out) per targeted matrix (Hu et al. 2021, section 4).

    A target ``gate`` also matches ``shared_gate`` and ``expert_gate``. ``qkv`` stands for q, k, v and
    ``gate_up`` for gate, up. A fused module (``qkv``: Phi-3 qkv_proj, GPT-2 c_attn, Falcon/GPT-NeoX
    query_key_value; ``gate_up``: Phi-3, gpt-oss experts) gets one adapter whose B covers only the targeted
    output slices: r · (d_in + Σ d_out of the targeted parts). With every part targeted that is the
    adapter PEFT puts on the fused module, r · (d_in + d_out); with q, v only, the k rows get none.

    >>> from anchorgpu.planner._examples import tiny_model
    >>> adapter_params(tiny_model(), rank=4, targets=("q", "v"))  # 2 layers: 4·(64+64)·2 + 4·(64+32)·2
    1792
    """
    wanted = set(expand_lora_targets(targets))
    total = 0
    for group in model.linear_groups:
        prefix, _, rest = group.name.partition("_")
        prefixed = prefix in ("expert", "shared")
        base = rest if prefixed else group.name
        if group.name in wanted or (not group.parts and base in wanted):
            total += rank * (group.d_in + group.d_out) * group.count
        elif group.parts:
            d_out = sum(size for part, size in group.parts
                        if part in wanted or (prefixed and f"{prefix}_{part}" in wanted))
            if d_out:
                total += rank * (group.d_in + d_out) * group.count
    return total


# Fused module names a user may target, and the parts they stand for.
FUSED_LORA_TARGETS: dict[str, tuple[str, ...]] = {"qkv": ("q", "k", "v"), "gate_up": ("gate", "up")}

RECURRENT_LORA_TARGETS: tuple[str, ...] = ("in_proj", "x_proj", "dt_proj", "out_proj", "in_proj_qkvz", "in_proj_ba")
"""Projections of Mamba, Mamba-2 and gated-DeltaNet mixers a LoRA may target (the module names PEFT uses)."""

SSM_DEFAULT_LORA_TARGETS: tuple[str, ...] = ("in_proj", "x_proj", "out_proj")
"""What a LoRA adapts on a model without attention when no target is named: the mixer projections PEFT's Mamba
example targets (``in_proj``, ``x_proj``, ``out_proj``; Mamba-2 has no ``x_proj``)."""


def expand_lora_targets(targets: Sequence[str]) -> tuple[str, ...]:
    """``qkv`` → q, k, v and ``gate_up`` → gate, up; other names unchanged; duplicates dropped, order kept.

    >>> expand_lora_targets(("qkv", "o", "v"))
    ('q', 'k', 'v', 'o')
    """
    out: dict[str, None] = {}
    for target in targets:
        for name in FUSED_LORA_TARGETS.get(target, (target,)):
            out[name] = None
    return tuple(out)


# --------------------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------------------

def kv_values_per_token_per_gpu(model: ModelSpec, *, tp: int) -> int:
    """Cached values per token per layer on one TP rank.

    MHA/GQA/MQA: 2 · max(1, kv/t) · d (heads replicated when t > kv; vLLM ``kv_heads_per_rank``).
    MLA: kv_lora_rank + qk_rope_head_dim, no factor 2, and the latent is whole on every TP rank
    (vLLM replicates it). Source: formulas.md section 5 item 3.

    >>> from anchorgpu.planner._examples import llama_3_1_70b
    >>> kv_values_per_token_per_gpu(llama_3_1_70b(), tp=8), kv_values_per_token_per_gpu(llama_3_1_70b(), tp=16)
    (256, 256)
    """
    if model.mla is not None:
        return model.mla.cache_values_per_token_per_layer
    return 2 * max(1, model.num_kv_heads // tp) * model.head_dim


def kv_cache_bytes(
    model: ModelSpec, *, context_tokens: int, sequences: int, bytes_per_value: float, tp: int, pp: int,
    block_size: int = 16,
) -> int:
    """KV cache per GPU for ``sequences`` of ``context_tokens`` each, most-loaded pipeline stage.

    Per layer: ceil(min(context, window) / block) · block tokens (paged; sliding-window layers keep only
    their window) × :func:`kv_values_per_token_per_gpu` × bytes per value; summed over layers, times
    ceil(L/p)/L for the pipeline stage. Sources: vLLM ``kv_cache_interface.py`` page size
    ``2 · block · kv_heads_per_rank · d · dtype``; formulas.md section 5.

    Llama-3.1-8B, one sequence of 8,192 tokens, bf16, TP 1: 32 · 2 · 8 · 128 · 2 · 8192 = 1 GiB.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> kv_cache_bytes(llama_3_1_8b(), context_tokens=8192, sequences=1, bytes_per_value=2, tp=1, pp=1)
    1073741824
    """
    values, groups, stage, layers = _kv_shape(model, tp, pp)
    token_slots = 0
    for window, count in groups:
        tokens = context_tokens if window is None else min(context_tokens, window)
        token_slots += -(-tokens // block_size) * block_size * count  # ceil_div(tokens, block_size)
    return math.ceil(token_slots * values * bytes_per_value * sequences * stage / layers)


def longest_kv_context(
    model: ModelSpec, *, capacity: int, sequences: int, bytes_per_value: float, tp: int, pp: int, block_size: int,
    limit: int,
) -> int:
    """Longest context, at most ``limit`` tokens, whose :func:`kv_cache_bytes` for ``sequences`` fits ``capacity``.

    The same answer as a bisection over ``kv_cache_bytes`` from 0 to ``limit`` (the cache grows with the
    context, one block at a time), found on the block count instead: below ``limit`` it is a whole number of
    blocks, each candidate costs one pass over the window groups with the same arithmetic, and the search
    starts from the count the full-attention rate gives (exact for models without sliding windows).

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> longest_kv_context(llama_3_1_8b(), capacity=2**30, sequences=1, bytes_per_value=2, tp=1, pp=1,
    ...                    block_size=16, limit=131072)
    8192
    """
    if capacity < 0:
        return 0
    values, groups, stage, layers = _kv_shape(model, tp, pp)

    def fits(blocks: int) -> bool:  # kv_cache_bytes at blocks · block_size tokens, the same operations in order
        token_slots = 0
        for window, count in groups:
            used = blocks if window is None else min(blocks, ceil_div(window, block_size))
            token_slots += used * block_size * count
        return math.ceil(token_slots * values * bytes_per_value * sequences * stage / layers) <= capacity

    top = -(-limit // block_size)  # ceil_div(limit, block_size)
    if fits(top):
        return limit
    lo, hi = 0, top - 1  # fits(0) holds (an empty cache); nothing above hi fits
    per_block = block_size * _attention_layers(groups) * values * bytes_per_value * sequences * stage / layers
    guess = min(hi, int(capacity // per_block)) if per_block > 0 else hi
    step = 1
    if fits(guess):
        lo = guess
        while lo + step <= hi:
            if not fits(lo + step):
                hi = lo + step - 1
                break
            lo += step
            step *= 2
    else:
        hi = guess - 1
        while hi - step + 1 > lo:
            if fits(hi - step + 1):
                lo = hi - step + 1
                break
            hi -= step
            step *= 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo * block_size


STATE_BYTES_PER_VALUE = 2
"""Recurrent (Mamba/SSM, linear-attention) state in the model's 16-bit dtype: vLLM's ``mamba_cache_dtype`` and
``mamba_ssm_cache_dtype`` default to ``auto`` (the model dtype), whatever the KV-cache dtype; a model that pins
its SSM state to float32 (Nemotron-H's ``mamba_ssm_cache_dtype``) keeps 4 bytes there (``RecurrentSpec``).
Source: vLLM ``model_executor/layers/mamba/mamba_utils.py`` (``MambaStateDtypeCalculator``: ``auto`` resolves to
the model dtype), docs.vllm.ai v0.10.2."""


def recurrent_state_bytes(
    model: ModelSpec, *, sequences: int, tp: int, pp: int, bytes_per_value: float = STATE_BYTES_PER_VALUE,
) -> int:
    """Recurrent state per GPU for ``sequences`` sequences, most-loaded pipeline stage; independent of length.

    Per sequence: Σ over recurrent layers of the convolution state and the SSM state
    (:meth:`ModelSpec.state_bytes_per_sequence`), split over the TP ranks (vLLM shards the mixer heads and
    channels) and by ceil(L/p)/L for the stage. A transformer has none.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> recurrent_state_bytes(llama_3_1_8b(), sequences=8, tp=1, pp=1)
    0
    """
    per_sequence = model.state_bytes_per_sequence(bytes_per_value)
    if per_sequence == 0:
        return 0
    stage = stage_layers(model.num_layers, pp)
    return math.ceil(per_sequence * sequences * stage / (tp * max(1, model.num_layers)))


_KvShape = tuple[int, tuple[tuple[int | None, int], ...], int, int]
_KV_SHAPES: dict[tuple[int, int, int], tuple[ModelSpec, _KvShape]] = {}


def _kv_shape(model: ModelSpec, tp: int, pp: int) -> _KvShape:
    """(values per token per layer on one GPU, layers by attention window, layers of the most-loaded stage,
    max(1, layers)): the part of a KV-cache size that depends on the model and the split only, memoised per
    (frozen) model object and split; a plan asks for it several times, and every plan of that split reuses it."""
    key = (id(model), tp, pp)
    hit = _KV_SHAPES.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    shape = (kv_values_per_token_per_gpu(model, tp=tp), _window_groups(model.attention_windows),
             stage_layers(model.num_layers, pp), max(1, model.num_layers))
    if len(_KV_SHAPES) >= 1024:
        _KV_SHAPES.clear()
    _KV_SHAPES[key] = (model, shape)
    return shape


@lru_cache(maxsize=256)
def _attention_layers(groups: tuple[tuple[int | None, int], ...]) -> int:
    """The layers in the window groups (the KV-caching layers)."""
    return sum(count for _, count in groups)


@lru_cache(maxsize=256)
def _window_groups(windows: tuple[int | None, ...]) -> tuple[tuple[int | None, int], ...]:
    """Layers grouped by attention window: ((window, layer count), …) in first-seen order."""
    counts: dict[int | None, int] = {}
    for window in windows:
        counts[window] = counts.get(window, 0) + 1
    return tuple(counts.items())


# --------------------------------------------------------------------------------------------------
# Activations (training)
# --------------------------------------------------------------------------------------------------

def korthikanti_layer_activation_bytes(
    *, s: int, b: int, h: int, a: int, t: int = 1, sp: bool = False, recompute: Recompute = "none",
) -> float:
    """Activation bytes of one GPT layer, exactly as Korthikanti et al. 2022 (arXiv 2205.05198), Table 2.

    16-bit activations, 4h MLP, 1-byte dropout masks:
    none: s·b·h·(10 + 24/t + 5·a·s/(h·t)) (t = 1 gives 34 + 5as/h); with SP: s·b·h·(34/t + 5as/(ht));
    selective: s·b·h·(10 + 24/t), with SP 34·s·b·h/t; full: 2·s·b·h (÷t with SP).

    >>> korthikanti_layer_activation_bytes(s=2048, b=1, h=12288, a=96) / (2048 * 12288)
    114.0
    """
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sp else 1)
    core = 0.0 if recompute == "selective" else 5 * a * s / (h * t)
    if sp:
        return sbh * (34 / t + core)
    return sbh * (10 + 24 / t + core)


def layer_activation_bytes(
    model: ModelSpec, *, s: int, b: int, t: int, sp: bool, recompute: Recompute, flash: bool = True,
) -> float:
    """Activation bytes of one layer of ``model``: Korthikanti's table generalised to GQA, SwiGLU and MoE.

    Replicated (÷t only with SP): layer-norm inputs 4, QKV and MLP inputs 2 + 2, dropout masks 2 → 10·sbh.
    Split by t: Q 2·(a·d/h), K and V 4·(kv·d/h), attention output 2·(a·d/h), MLP 4·ffn/h (6·ffn/h when
    gated: gate, up and the down-projection input are all saved; formulas.md item 6, our derivation),
    MoE: top-k routed copies of that with the expert width. Attention core 5·a·s/h, or ~0 with flash
    attention (softmax statistics only, 4·a·s·b bytes). Recompute as in Korthikanti.
    For a GPT layer (a·d = h, kv = a, ffn = 4h, not gated) this equals
    :func:`korthikanti_layer_activation_bytes`.

    Hybrid and state-space models: an average layer. Attention terms weigh by the share of attention layers,
    the MLP term by the share of layers with an MLP; a recurrent (Mamba/linear-attention) layer keeps its
    mixer's inputs and outputs, 2 bytes per value (``RecurrentSpec.activation_values_per_token``: in_proj and
    convolution outputs, the scan output and its gate) — an estimate stated as such, not a measured figure.
    """
    h = model.hidden_size
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sp else 1)
    split, attention_share = _activation_shares(model)
    if recompute == "moe":  # the MoE blocks keep their input only (in the replicated 10) and run again backward
        split -= moe_block_activation_share(model)
    replicated = 10 / t if sp else 10
    core_bytes = 0.0
    if recompute in ("none", "moe"):
        core_bytes = 4 * model.num_attention_heads * s * b / t if flash else 5 * model.num_attention_heads * s * s * b / t
        core_bytes *= attention_share
    return sbh * (replicated + split / t) + core_bytes


def moe_block_activation_share(model: ModelSpec) -> float:
    """Values per token and hidden unit an average layer's MoE block keeps for its backward pass (TP-split): the
    gated expert intermediates of its routed and shared experts, ``6 * f * (k + shared) / h`` in a MoE layer, over
    all layers; what ``--recompute moe`` does not keep (0.0 for a dense model).

    >>> from anchorgpu.architectures import load_model
    >>> round(moe_block_activation_share(load_model("qwen3-30b-a3b")), 2), moe_block_activation_share(load_model("llama-3.1-8b"))
    (18.0, 0.0)
    """
    moe = model.moe
    if moe is None:
        return 0.0
    return _mlp_values_per_hidden(model) * moe.num_moe_layers / max(1, model.num_layers)


def _mlp_values_per_hidden(model: ModelSpec) -> float:
    """Values per token and hidden unit one MLP (a MoE: its routed and shared experts) keeps for its backward pass:
    gate, up and the down-projection input when gated (``6 * ffn / h``), else ``4 * ffn / h``."""
    moe = model.moe
    width = (moe.expert_intermediate_size * (moe.experts_per_token + moe.num_shared_experts) if moe is not None
             else model.intermediate_size)
    return (6 if model.gated_mlp else 4) * width / model.hidden_size


_SHARES: dict[int, tuple[ModelSpec, tuple[float, float]]] = {}


def _activation_shares(model: ModelSpec) -> tuple[float, float]:
    """(values per token and hidden unit that TP splits, share of attention layers) of an average layer, as
    :func:`layer_activation_bytes` describes them: they depend on the (frozen) model only, so they are worked
    out once per model object."""
    hit = _SHARES.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    h = model.hidden_size
    q = model.num_attention_heads * model.head_dim / h
    kv = model.num_kv_heads * model.head_dim / h
    mlp = _mlp_values_per_hidden(model)
    layers = max(1, model.num_layers)
    attention_share = model.attention_layers / layers
    mlp_share = (model.mlp_layers if model.mlp_layers is not None else layers) / layers
    recurrent = 0.0
    if model.recurrent is not None:
        recurrent = model.recurrent_layers / layers * 2 * model.recurrent.activation_values_per_token / h
    shares = (attention_share * (2 * q + 4 * kv + 2 * q) + mlp_share * mlp + recurrent, attention_share)
    if len(_SHARES) >= 512:
        _SHARES.clear()
    _SHARES[id(model)] = (model, shares)
    return shares


def logits_bytes(*, s: int, b: int, vocab: int, t: int) -> int:
    """fp32 logits for the loss: 4 · s · b · V / t (Megatron ``theoretical_memory_usage.py``).

    >>> logits_bytes(s=512, b=1, vocab=128256, t=1)
    262668288
    """
    return math.ceil(4 * s * b * vocab / t)


def training_activation_bytes(
    model: ModelSpec, *, s: int, b: int, tp: int, pp: int, sp: bool, recompute: Recompute, flash: bool = True,
) -> int:
    """Activations on the most-loaded GPU: the first pipeline stage holds L layers' worth.

    With 1F1B scheduling the first stage keeps p micro-batches in flight, each with ceil(L/p) layers:
    ceil(L/p)·p layers (= L when p divides L). Full recompute adds one layer's un-checkpointed
    activations during its backward recomputation. Logits (:func:`logits_bytes`) count when p = 1; with
    p > 1 the last stage (1 micro-batch, ceil(L/p) layers + logits) is compared with the first.
    Source: Korthikanti et al. 2022, section 4.2.3; formulas.md item 6.
    """
    per_layer = layer_activation_bytes(model, s=s, b=b, t=tp, sp=sp, recompute=recompute, flash=flash)
    stage = stage_layers(model.num_layers, pp)
    working = 0.0
    if recompute == "full":
        working = layer_activation_bytes(model, s=s, b=b, t=tp, sp=sp, recompute="none", flash=flash)
    elif recompute == "moe" and model.moe is not None:  # one MoE block's intermediates while it runs again backward
        working = s * b * model.hidden_size * _mlp_values_per_hidden(model) / tp
    logits = logits_bytes(s=s, b=b, vocab=model.vocab_size, t=tp)
    first = per_layer * stage * pp + working + (logits if pp == 1 else 0)
    last = per_layer * stage + working + logits
    return math.ceil(max(first, last))


# --------------------------------------------------------------------------------------------------
# Activations (inference, vLLM profile run)
# --------------------------------------------------------------------------------------------------

SAMPLER_BYTES_PER_SEQ_VOCAB = 35
"""Bytes per (sequence x vocabulary entry) in vLLM's dummy sampler run: fp32 logits, probabilities,
sorted copies and int64 sort indices for top-k/top-p. Calibrated on llm-d's measured activation peaks
(published_figures.md D: Qwen3-0.6B 5.56 GiB, gpt-oss-20b/120b 7.38 GiB; Llama family 4.8 GiB) with the
V1 default of 1,024 sequences; the three fall within 8 % (tests/planner/test_published_figures.py)."""


def sampler_activation_bytes(*, sequences: int, vocab: int) -> int:
    """Sampler peak: sequences · V · 35 bytes (see :data:`SAMPLER_BYTES_PER_SEQ_VOCAB`).

    >>> sampler_activation_bytes(sequences=1024, vocab=1000)
    35840000
    """
    return sequences * vocab * SAMPLER_BYTES_PER_SEQ_VOCAB


def prefill_activation_bytes(model: ModelSpec, *, tokens: int, tp: int, bytes_per_value: int = 2) -> int:
    """Largest transient of one prefill forward over ``tokens`` batched tokens, per TP rank.

    Residual stream, normed input and attention output (4 · h values per token, replicated) plus the
    larger of the MLP intermediates ((2·ffn + ffn)/t for gated: fused gate_up output and activation
    output; vLLM fused-MoE caches k·(3·f + h) per token), the QKV output ((a + 2·kv)·d/t) and, for a
    recurrent mixer, its intermediates (``RecurrentSpec.activation_values_per_token``/t).
    """
    h = model.hidden_size
    if model.moe is not None:
        k = model.moe.experts_per_token + model.moe.num_shared_experts
        mlp = k * (3 * model.moe.expert_intermediate_size + h) / tp
    else:
        mlp = (3 if model.gated_mlp else 2) * model.intermediate_size / tp
    qkv = (model.num_attention_heads + 2 * model.num_kv_heads) * model.head_dim / tp
    mixer = model.recurrent.activation_values_per_token / tp if model.recurrent is not None else 0.0
    return math.ceil(tokens * bytes_per_value * (4 * h + max(mlp, qkv, mixer)))


def inference_activation_bytes(model: ModelSpec, *, batched_tokens: int, sequences: int, tp: int) -> int:
    """vLLM's profiled activation peak: prefill of ``max_num_batched_tokens`` plus the sampler over
    ``min(tokens, max_num_seqs)`` sequences (vLLM ``gpu_worker.determine_available_memory``).
    The sampler holds whole-vocabulary logits on every rank, so it is not divided by TP (llm-d found the
    peak "not reduced by TP").
    """
    seqs = min(batched_tokens, sequences)
    return prefill_activation_bytes(model, tokens=batched_tokens, tp=tp) + sampler_activation_bytes(
        sequences=seqs, vocab=model.vocab_size
    )
