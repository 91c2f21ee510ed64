"""Activation memory per GPU, in bytes: a training layer's (Korthikanti et al. 2022 and its variants), the
logits, and the serving engine's profile run (prefill, sampler) (:mod:`anchorgpu.planner.memory`). Pure; stdlib
only."""

from __future__ import annotations

import math

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.planner.inputs import Recompute
from anchorgpu.planner.memory.model_states import stage_layers
from anchorgpu.planner.memory.op_sac import op_sac_layer

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
    fp8_linear_inputs: bool = False,
) -> float:
    """Activation bytes of one layer of ``model``: Korthikanti's table generalised to GQA, SwiGLU and MoE.

    Replicated (÷t only with SP): layer-norm inputs 4, QKV and MLP inputs 2 + 2, dropout masks 2 → 10·sbh. The
    masks only where the model trains with dropout on its residual stream (``ModelSpec.hidden_dropout`` > 0): at
    p = 0 neither torch's dropout nor Megatron-Core's fused bias-dropout-add keeps one (ATen ``Dropout.cpp`` returns
    its input; ``megatron/core/fusions/fused_bias_dropout.py``), and Llama-style configs state none, so 8·sbh there.
    Split by t: Q 2·(a·d/h), K and V 4·(kv·d/h), attention output 2·(a·d/h), MLP 4·ffn/h (6·ffn/h when
    gated: gate, up and the down-projection input are all saved; formulas.md item 6, our derivation),
    MoE: top-k routed copies of that with the expert width. Attention core 5·a·s/h, or ~0 with flash
    attention (softmax statistics only, 4·a·s·b bytes). Recompute as in Korthikanti.
    For a GPT layer (a·d = h, kv = a, ffn = 4h, not gated) with dropout this equals
    :func:`korthikanti_layer_activation_bytes`.

    ``fp8_linear_inputs``: FP8 products as Transformer Engine runs them under Megatron-Core
    (:func:`fp8_cached_input_saving`): the inputs of the linear layers kept as 1-byte copies.

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
    replicated = 8.0 + (2 if model.hidden_dropout > 0 else 0)
    if fp8_linear_inputs:
        fp8_replicated, fp8_split = fp8_cached_input_saving(model, recompute)
        replicated -= fp8_replicated
        split -= fp8_split
    replicated = replicated / t if sp else replicated
    core_bytes = 0.0
    if recompute in ("none", "moe"):
        core_bytes = 4 * model.num_attention_heads * s * b / t if flash else 5 * model.num_attention_heads * s * s * b / t
        core_bytes *= attention_share
    return sbh * (replicated + split / t) + core_bytes


def keeps_fp8_input_copies(train_stack: str, precision: str) -> bool:
    """Whether a training step keeps Transformer Engine's 1-byte copies of its products' inputs
    (:func:`fp8_cached_input_saving`): FP8 or FP4 products under Megatron-Core; a PyTorch-native stack's float8 keeps
    its own activations.

    >>> keeps_fp8_input_copies("megatron", "fp8"), keeps_fp8_input_copies("pytorch", "fp8")
    (True, False)
    """
    return train_stack != "pytorch" and precision in ("fp8", "fp4")


def fp8_cached_input_saving(model: ModelSpec, recompute: Recompute) -> tuple[float, float]:
    """(replicated, TP-split) values per token and hidden unit an average layer keeps fewer when Transformer Engine
    runs its products in FP8 under Megatron-Core, each a byte in place of two (TE 2.x ``LayerNormLinear`` and
    ``Linear`` keep only their own column-wise FP8 copy of the product's input, ``update_usage(rowwise_usage=False)``):

    - replicated: the two norm outputs, the QKV and fc1 inputs, 1 byte each instead of 2 (the norms' 16-bit inputs
      stay): 2 fewer, 1 a norm;
    - split: the fc2 input (the activation's output) in 1 byte: ``ffn/h`` fewer an MLP, the expert width times the
      routed and shared experts in a MoE block (none when ``--recompute moe`` keeps no MoE block); the attention
      output gains a 1-byte copy beside the 16-bit one the attention kernel keeps: ``a·d/h`` more an attention layer.
      The fc1 output that SwiGLU keeps stays 16 bit (``activation_func_fp8_input_store`` is off by default).

    A Llama block keeps 29.5 bytes a token and hidden unit in place of 34 (Llama 3.1 8B, no TP). Read from the code
    (benchmarks/activation_memory_findings.md, section 2); no measured Megatron-Core peak checks it yet. MXFP8's
    scales (1/32 byte a value) are left out.

    >>> from anchorgpu.architectures import load_model
    >>> fp8_cached_input_saving(load_model("llama-3.1-8b"), "none")
    (2.0, 2.5)
    """
    layers = max(1, model.num_layers)
    attention_share = model.attention_layers / layers
    mlp_share = (model.mlp_layers if model.mlp_layers is not None else layers) / layers
    if recompute == "moe" and model.moe is not None:
        mlp_share = max(0.0, mlp_share - model.moe.num_moe_layers / layers)
    fc2_input = _mlp_values_per_hidden(model) / (6 if model.gated_mlp else 4)
    q = model.num_attention_heads * model.head_dim / model.hidden_size
    return 2.0, mlp_share * fc2_input - attention_share * q


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


def sequence_parallel_share(model: ModelSpec) -> float:
    """The share of an average layer's kept activations (16-bit, no recompute, the attention core aside) that
    sequence parallelism splits over the TP ranks and plain TP keeps whole on each: :func:`layer_activation_bytes`'s
    replicated ``8`` (``10`` with dropout) over that plus its TP-split values. The speed model splits the memory-bound
    operators' traffic the same way (the operators that write these values run where they are kept). A GPT layer:
    10 of 34 (Korthikanti et al. 2022, Table 2); Llama 3.1 8B (no dropout, SwiGLU, GQA): 8 of 34.

    >>> from anchorgpu.architectures import load_model
    >>> round(sequence_parallel_share(load_model("llama-3.1-8b")) * 34, 6)
    8.0
    """
    replicated = 8.0 + (2 if model.hidden_dropout > 0 else 0)
    return replicated / (replicated + _activation_shares(model)[0])


FP32_LOGITS_BYTES_PER_LOGIT = 4
"""The logits in fp32 and nothing else, as Megatron's ``theoretical_memory_usage.py`` counts them: the default of
:func:`logits_bytes` and the base of fine-tuning's measured loss terms (``planner/data/finetune_memory.json`` adds
their fp32 gradient). What full training's loss holds depends on its cross-entropy implementation
(:mod:`anchorgpu.planner.memory.loss`: 6 bytes for Megatron-Core's own, 2 for Transformer Engine's, 12 for PyTorch's
eager loss)."""


def logits_bytes(*, s: int, b: int, vocab: int, t: int, bytes_per_logit: int = FP32_LOGITS_BYTES_PER_LOGIT) -> int:
    """Logits for the loss: ``bytes_per_logit`` · s · b · V / t, 4 for fp32 logits alone (Megatron
    ``theoretical_memory_usage.py``); a loss implementation's figure from :mod:`anchorgpu.planner.memory.loss`.

    >>> logits_bytes(s=512, b=1, vocab=128256, t=1)
    262668288
    """
    return math.ceil(bytes_per_logit * s * b * vocab / t)


def op_sac_layer_activation_bytes(model: ModelSpec, *, s: int, b: int, t: int, sp: bool) -> float:
    """Activation bytes of one average layer under PyTorch-native op-level selective checkpointing
    (:mod:`~anchorgpu.planner.memory.op_sac`): the values it keeps in 16 bit, the row-parallel outputs and the block's
    input split by t only with sequence parallelism, and the attention kernel's softmax statistics (4·a·s·b bytes).

    >>> from anchorgpu.architectures import load_model
    >>> m = load_model("llama-3.1-8b")
    >>> round(op_sac_layer_activation_bytes(m, s=8192, b=2, t=1, sp=False) / (8192 * 2 * m.hidden_size), 2)
    15.53
    """
    lay = op_sac_layer(model)
    values = lay.split_values / t + lay.replicated_values / (t if sp else 1)
    stats = 4 * model.num_attention_heads * s * b / t * model.attention_layers / max(1, model.num_layers)
    return s * b * 2 * values + stats


def training_activation_bytes(
    model: ModelSpec, *, s: int, b: int, tp: int, pp: int, sp: bool, recompute: Recompute, flash: bool = True,
    op_sac: bool = False, loss_bytes_per_logit: int = FP32_LOGITS_BYTES_PER_LOGIT, fp8_linear_inputs: bool = False,
    offloaded_layers: int = 0, stated: int | None = None, in_flight: int | None = None,
) -> int:
    """Activations on the most-loaded GPU: the first pipeline stage holds L layers' worth.

    With 1F1B scheduling the first stage keeps p micro-batches in flight, each with ceil(L/p) layers:
    ceil(L/p)·p layers (= L when p divides L). Full recompute adds one layer's un-checkpointed
    activations during its backward recomputation. Logits (:func:`logits_bytes`) count when p = 1; with
    p > 1 the last stage (1 micro-batch, ceil(L/p) layers + logits) is compared with the first.
    Source: Korthikanti et al. 2022, section 4.2.3; formulas.md item 6. ``op_sac`` with ``recompute="selective"``:
    PyTorch's op-level policy (:func:`op_sac_layer_activation_bytes`) in place of Megatron's selective recompute, one
    layer's recomputed values added while it runs again. ``fp8_linear_inputs``: Transformer Engine's 1-byte copies of
    the products' inputs (:func:`fp8_cached_input_saving`). ``offloaded_layers``: Megatron-Core's CPU activation
    offloading (one stage only, ``p = 1``): that many layers' activations wait in host memory, one of them on the GPU
    while it is copied out or back (TE's ``get_cpu_offload_context``: the group being offloaded is released at its
    window point, and the backward pass reloads one group ahead; benchmarks/activation_memory_findings.md, section 3).
    ``stated``: the busiest rank's layers of an explicit pipeline layout, planned for the first and the last stage
    alike (an upper bound on each). ``in_flight``: the micro-batches the first stage holds, 1F1B's ``p`` when None; 1
    where the stages run one after another (accelerate's ``device_map``: each micro-batch's backward ends before the
    next one's forward starts, :func:`~anchorgpu.planner.speed.pipeline.pipeline_schedule`).
    """
    stage = stage_layers(model.num_layers, pp, stated)
    working = 0.0
    if op_sac and recompute == "selective":
        per_layer = op_sac_layer_activation_bytes(model, s=s, b=b, t=tp, sp=sp)
        whole = layer_activation_bytes(model, s=s, b=b, t=tp, sp=sp, recompute="none", flash=flash)
        working = max(0.0, whole - per_layer)
    else:
        per_layer = layer_activation_bytes(model, s=s, b=b, t=tp, sp=sp, recompute=recompute, flash=flash,
                                           fp8_linear_inputs=fp8_linear_inputs)
    if recompute == "full":
        working = layer_activation_bytes(model, s=s, b=b, t=tp, sp=sp, recompute="none", flash=flash,
                                         fp8_linear_inputs=fp8_linear_inputs)
    elif recompute == "moe" and model.moe is not None:  # one MoE block's intermediates while it runs again backward
        working = s * b * model.hidden_size * _mlp_values_per_hidden(model) / tp
    logits = logits_bytes(s=s, b=b, vocab=model.vocab_size, t=tp, bytes_per_logit=loss_bytes_per_logit)
    resident = stage - offloaded_layers + (1 if offloaded_layers else 0)
    first = per_layer * resident * (pp if in_flight is None else in_flight) + working + (logits if pp == 1 else 0)
    last = per_layer * resident + working + logits
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


# the activation assumptions a training plan states (planner.training)
FP8_ACTIVATIONS_LINE = (
    "Activations as Transformer Engine keeps them under 8-bit products (Megatron-Core): the inputs of the linear "
    "layers (the norm outputs, the attention output, the MLP's down-projection input) as 1-byte copies, the norms' "
    "inputs, q, k, v, the attention output and the gated MLP's input in 16 bit; read from TE's code, not yet checked "
    "against a measured Megatron peak (FP4 products are planned at the same byte).")
FLASH_ATTENTION_LINE = said("Attention by a flash-attention kernel: no s² score matrix is stored.")
NO_DROPOUT_LINE = said("No dropout masks: the model's config states no dropout on the residual stream, and at p = 0 "
                       "neither PyTorch nor Megatron-Core keeps one.")
