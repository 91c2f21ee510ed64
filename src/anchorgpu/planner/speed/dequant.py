"""QLoRA's dequantization: the frozen 4-bit base turned into 16-bit weights before every pass that multiplies by it.
Pure; stdlib only.

bitsandbytes' ``MatMul4Bit`` (bitsandbytes-foundation/bitsandbytes ``bitsandbytes/autograd/_functions.py``)
dequantizes the whole 4-bit weight to the input's 16-bit dtype in the forward
(``torch.nn.functional.linear(A, F.dequantize_4bit(B, quant_state).to(A.dtype).t(), bias)``) and again in the backward
for the input's gradient (``torch.matmul(grad_output, F.dequantize_4bit(B, ctx.state).to(grad_output.dtype).t())``);
activation checkpointing runs the forward, and so the dequantization, once more. NeMo's QLoRA over Megatron-Core does
the same with torchao's ``NF4Tensor`` (NVIDIA/NeMo ``nemo/collections/nlp/modules/common/megatron/adapters/qlora.py``,
``LinearNF4``: ``F.linear(input, weight.to(input.dtype))`` forward, ``grad_output @ weight.to(grad_output.dtype)``
backward), so both training stacks pay it.

Each dequantization reads the packed weight with its block constants at the plan's base format's bits (the QLoRA
default ``nf4-dq``: 4.127 bits a weight, :func:`~anchorgpu.planner.formats.nf4_bits_per_weight`; ``nf4`` 4.5, GPTQ/AWQ
group 128 4.156, ``int8`` 8: :meth:`~anchorgpu.planner.formats.WeightFormat.group_bits`, the bits the memory counts
the base at) and writes a 16-bit copy: a memory-bound kernel, timed
at the share of the bandwidth the planner's other memory-bound copies get (``decode_mbu``, as FSDP2's copies and the
optimizer's update). The product then reads the 16-bit copy as it would a 16-bit base's weight: inside the product's
own time, not counted again. The embeddings and the LM head stay 16-bit (bitsandbytes' ``Linear4bit`` replaces the
blocks' linears; PEFT and answer.ai's ``replace_linear`` skip ``lm_head``), a router is never quantized, and a
linear the format keeps at 16 bits (MXFP4's attention beside its quantized experts) is read as it is, not dequantized.

Sharded (FSDP, ZeRO-3), the base is gathered as it is stored: packed (:func:`gathered_bytes_per_param`).
"""

from __future__ import annotations

from collections.abc import Callable

from anchorgpu.architectures.model_parts import LinearGroup
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.formats import NF4_CODE_BITS, format_for_model
from anchorgpu.planner.speed.flops import Recompute, TrainKind
from anchorgpu.planner.speed.links import ACTIVATION_BYTES

__all__ = ["QLORA_BASE_FORMAT", "dequant_bytes_per_layer", "dequant_expert_bytes_per_layer", "dequant_passes",
           "gathered_bytes_per_param"]

QLORA_BASE_FORMAT = "nf4-dq"
"""The base format a QLoRA step is timed with: the planner's default for ``--task qlora`` (``validate``), and what
bitsandbytes' ``Linear4bit`` stores by default (``compress_statistics=True``, answer.ai's fsdp_qlora included)."""


def dequant_passes(recompute: Recompute, *, op_sac: bool = False) -> float:
    """Dequantizations of each 4-bit weight in one micro-batch: the forward, the backward's input gradient, and the
    forward again under full recompute; PyTorch's op-level selective policy runs every other product again (half).

    >>> dequant_passes("none"), dequant_passes("full"), dequant_passes("selective", op_sac=True)
    (2.0, 3.0, 2.5)
    """
    if op_sac:
        return 2.5
    return 3.0 if recompute == "full" else 2.0


def dequant_bytes_per_layer(model: ModelSpec, base_format: str = QLORA_BASE_FORMAT) -> float:
    """Bytes one dequantization of a layer's 4-bit linears moves, averaged over the layers: the packed weight and its
    constants read at ``base_format``'s bits (the plan's ``--weights``; a name :func:`format_for_model` reads), the
    16-bit copy written (every expert's weight of a mixture of experts: each is dequantized whole when any token
    reaches it).

    Llama-2 70B (h 8,192, KV 1,024, MLP 28,672): 855.6M weights a layer, 855.6M x (4.127 / 8 + 2) bytes; NF4 without
    double quantization reads 4.5 bits a weight, 855.6M x (4.5 / 8 + 2):

    >>> from anchorgpu.architectures import load_model
    >>> round(dequant_bytes_per_layer(load_model("llama-2-70b")) / 1e9, 3)
    2.153
    >>> round(dequant_bytes_per_layer(load_model("llama-2-70b"), "nf4") / 1e9, 3)
    2.193
    """
    dense, experts = _dequant_bytes(model, base_format)
    return (dense + experts) / model.num_layers


def dequant_expert_bytes_per_layer(model: ModelSpec, base_format: str = QLORA_BASE_FORMAT) -> float:
    """The routed experts' part of :func:`dequant_bytes_per_layer`: a rank dequantizes only the experts it holds,
    ``1/EP`` of them under expert parallelism (not split by TP there: expert tensor parallelism 1, as the memory's
    ``shard_share`` holds them), ``1/TP`` without it; 0 for a dense model.

    >>> from anchorgpu.architectures import load_model
    >>> dequant_expert_bytes_per_layer(load_model("llama-2-70b"))
    0.0
    >>> m = load_model("qwen3-235b-a22b")  # 94 x 128 experts of 3 x 4,096 x 1,536 (227.1B) beside attention's 6.7B
    >>> round(dequant_expert_bytes_per_layer(m) / dequant_bytes_per_layer(m), 3)
    0.971
    """
    return _dequant_bytes(model, base_format)[1] / model.num_layers


def _dequant_bytes(model: ModelSpec, base_format: str) -> tuple[float, float]:
    """(one dequantization of the linears outside the routed experts, of the routed experts), bytes over all layers:
    each quantized weight's code with its block constants read at the format's bits for its group, its 16-bit copy
    written; a linear the format keeps at 16 bits or more (a router, MXFP4's attention) is not dequantized."""
    fmt = format_for_model(model, base_format)
    is_moe = model.moe is not None

    def moved(g: LinearGroup) -> float:  # bytes a weight: its code and constants read, its 16-bit copy written
        bits = fmt.group_bits(g.name, is_moe=is_moe)
        return 0.0 if bits >= 8 * ACTIVATION_BYTES else bits / 8 + ACTIVATION_BYTES

    return _by_part(model, moved)


def _by_part(model: ModelSpec, per_weight: Callable[[LinearGroup], float]) -> tuple[float, float]:
    """(outside the routed experts, the routed experts): ``per_weight`` of each quantized group's weights, summed."""
    dense = experts = 0.0
    for g in _quantized_groups(model):
        part = g.d_in * g.d_out * g.count * per_weight(g)
        if g.name.startswith("expert"):
            experts += part
        else:
            dense += part
    return dense, experts


def _quantized_groups(model: ModelSpec) -> list[LinearGroup]:
    """Every block linear but the routers (embeddings and LM head are not block linears)."""
    return [g for g in model.linear_groups if not (g.component == "router" or g.name == "router")]


def _quantized_weights(model: ModelSpec) -> tuple[float, float]:
    """(the 4-bit weights outside the routed experts, the routed experts' 4-bit weights): :func:`_quantized_groups`'
    weights."""
    return _by_part(model, lambda g: 1.0)


def gathered_bytes_per_param(model: ModelSpec, kind: TrainKind) -> tuple[float, float]:
    """Bytes an FSDP (ZeRO-3) all-gather, FSDP2's copy out of its buffer and a ``--offload params`` fetch move a
    parameter, averaged: (over the parameters outside the routed experts, over the routed experts' parameters).
    16 bits for a 16-bit base (full fine-tuning, LoRA); QLoRA's base is gathered as stored, its quantized linears at
    their packed NF4 codes (:data:`~anchorgpu.planner.formats.NF4_CODE_BITS`, half a byte) and the rest (embeddings,
    LM head, norms, routers) at 16 bits, and is dequantized only after the gather (:func:`dequant_bytes_per_layer`).

    Sources: FSDP shards only floating-point tensors, so bitsandbytes' ``Linear4bit``/``Params4bit`` take a
    ``quant_storage`` dtype (``bnb_4bit_quant_storage`` in transformers' ``BitsAndBytesConfig``) that the packed
    ``uint8`` codes are viewed as, the model's BF16 in answer.ai's fsdp_qlora (``train.py``: ``quant_storage=
    torch_dtype``) and in the FSDP-QLoRA guides of bitsandbytes (``docs/source/fsdp_qlora.md``: "FSDP only supports
    sharding float data types ... set ``bnb_4bit_quant_storage`` ... to match the model's dtype") and transformers; the
    bytes are the packed ones either way. The block constants (``quant_state``: absmax, its nested absmax, the code
    book) are not parameters or buffers, so FSDP neither shards nor gathers them: every rank keeps its own whole copy
    (AnswerDotAI/fsdp_qlora PR #4: "quant_state ... doesn't get synced by FSDP ... because it only supports syncing
    parameters and buffers"; bitsandbytes keeps a second copy on the module, ``fix_4bit_weight_quant_state_from_module``).

    Llama-2 70B: 68.45B of its 68.98B parameters are block linears, so a parameter gathers at about half a byte:

    >>> from anchorgpu.architectures import load_model
    >>> m = load_model("llama-2-70b")
    >>> gathered_bytes_per_param(m, "lora")
    (2.0, 2.0)
    >>> [round(b, 3) for b in gathered_bytes_per_param(m, "qlora")]
    [0.511, 0.5]
    """
    if kind != "qlora":
        return float(ACTIVATION_BYTES), float(ACTIVATION_BYTES)
    dense_q, experts_q = _quantized_weights(model)
    packed = NF4_CODE_BITS / 8
    experts = model.params.experts if model.moe is not None else 0.0
    dense_params = model.params_total - experts
    dense = (dense_q * packed + (dense_params - dense_q) * ACTIVATION_BYTES) / dense_params
    expert = (experts_q * packed + (experts - experts_q) * ACTIVATION_BYTES) / experts if experts else packed
    return dense, expert
