"""Weight storage formats with their metadata (the bytes a model's weights take in each: :mod:`.weight_parts`). Pure.

A format gives the bits per weight of the *quantized linear layers including block metadata* (scales,
zero points, absmax constants), the bits kept for embeddings, the LM head and the remaining small
tensors (norms, biases, routers), and per-matrix extras. Sources for each constant are in
:data:`WEIGHT_FORMATS` and in formulas.md section "Quantized weights":

* bitsandbytes NF4: 4 bits + an fp32 absmax per 64 weights = 4.5 bits; with double quantization the
  absmax is 8-bit per 64 with an fp32 constant per 256 of those: 4 + 8/64 + 32/(64*256) = 4.127 bits
  (Dettmers et al. 2023, QLoRA, section 3). bnb leaves embeddings and the LM head in 16 bit.
* GPTQ/AWQ group 128: 4 bits + a 16-bit scale and a packed 4-bit zero per 128 = 4.156 bits; GPTQ also
  stores an int32 ``g_idx`` per input channel.
* MXFP4 (OCP microscaling): blocks of 32 FP4 values share an 8-bit scale = 4.25 bits. gpt-oss ships its
  MoE experts in MXFP4 and keeps attention, router and embeddings in bf16 (OpenAI model card).
* NVFP4: blocks of 16 FP4 values with an FP8 scale = 4.5 bits, plus fp32 per-tensor scales.
* GGUF (llama.cpp ``ggml-common.h`` block sizes): Q4_0 18 B/32 = 4.5, Q4_1 5.0, Q5_0 5.5, Q5_1 6.0,
  Q8_0 34 B/32 = 8.5; k-quants per 256: Q2_K 84 B = 2.625, Q3_K 110 B = 3.4375, Q4_K 144 B = 4.5,
  Q5_K 176 B = 5.5, Q6_K 210 B = 6.5625. The ``_M``/``_S`` recipes keep some tensors at a higher type
  (llama.cpp ``llama_tensor_get_type``: attn_v and ffn_down at Q6_K on about half of the layers for
  Q4_K_M/Q5_K_M, output.weight at Q6_K); norms stay fp32.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from anchorgpu.architectures.quantization import QuantStorage, ShippedQuantization, storage_for_name
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said

__all__ = [
    "WEIGHT_FORMATS",
    "WeightFormat",
    "format_for_model",
    "get_format",
    "shipped_format",
    "nf4_bits_per_weight",
    "NF4_CODE_BITS",
    "bnb_code_format",
    "qlora_default_format",
]

NativeHardware = Literal["fp8", "fp4"]

# GGUF bits per weight, block bytes * 8 / block weights (llama.cpp ggml-common.h).
_Q2_K, _Q3_K, _Q4_K, _Q5_K, _Q6_K = 84 * 8 / 256, 110 * 8 / 256, 144 * 8 / 256, 176 * 8 / 256, 210 * 8 / 256
_Q4_0, _Q4_1, _Q5_0, _Q5_1, _Q8_0 = 18 * 8 / 32, 20 * 8 / 32, 22 * 8 / 32, 24 * 8 / 32, 34 * 8 / 32
_GROUP128_INT4 = 4 + (16 + 4) / 128  # 16-bit scale + packed 4-bit zero per group of 128


NF4_CODE_BITS = 4
"""Bits of a weight's own NF4 code, packed two to a byte: what bitsandbytes' ``Params4bit`` data holds, without the
block constants (its ``quant_state``)."""


def nf4_bits_per_weight(*, double_quant: bool, block: int = 64, second_block: int = 256) -> float:
    """Bits per weight of bitsandbytes NF4 including its quantization constants.

    Without double quantization: 4 + 32/block. With it: 4 + 8/block + 32/(block * second_block).
    Source: Dettmers et al. 2023 (QLoRA), section 3: 0.5 -> 0.127 bits of constants per parameter.

    >>> nf4_bits_per_weight(double_quant=False)
    4.5
    >>> round(nf4_bits_per_weight(double_quant=True) - 4, 3)
    0.127
    """
    if double_quant:
        return NF4_CODE_BITS + 8 / block + 32 / (block * second_block)
    return NF4_CODE_BITS + 32 / block


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightFormat:
    """A weight storage format. Bits are per weight, metadata included."""

    name: str
    linear_bits: float
    embed_bits: float = 16
    head_bits: float = 16
    other_bits: float = 16  # norms, biases, routers
    per_matrix_bytes: int = 0  # per-tensor scales
    per_out_row_bytes: int = 0  # per-output-channel scales
    per_in_col_bytes: int = 0  # GPTQ g_idx
    # (group-name suffix, fraction of those matrices, bits) kept at a higher type
    upgrades: tuple[tuple[str, float, float], ...] = ()
    moe_experts_only: bool = False  # MoE models: quantize only the routed experts (gpt-oss MXFP4)
    pad_expert_width_to: int = 0  # engines pad the experts' intermediate width to a multiple of this
    native: NativeHardware | None = None  # hardware math needed to compute in this format
    quantized: bool = True
    source: str = ""
    # Exact storage of a quantized matrix (scales per block by shape) and, for a checkpoint's own format,
    # which linear groups it covers (fractions) and whether the LM head is quantized. None: the rules above.
    storage: QuantStorage | None = None
    shipped: ShippedQuantization | None = None

    def group_bits(self, group_name: str, *, is_moe: bool) -> float:
        """Bits per weight for one linear-group family (``q``, ``down``, ``expert_down`` …)."""
        if group_name == "router" or (self.moe_experts_only and is_moe and not group_name.startswith("expert")):
            return 16  # MoE routers stay 16-bit in every format
        bits = self.linear_bits
        for suffix, fraction, upgraded_bits in self.upgrades:
            if group_name == suffix or group_name.endswith("_" + suffix):
                bits = fraction * upgraded_bits + (1 - fraction) * bits
        return bits


def _gguf(name: str, base: float, *, upgrades: tuple[tuple[str, float, float], ...] = (),
          head: float = _Q6_K, source: str = "") -> WeightFormat:
    return WeightFormat(
        name=name, linear_bits=base, embed_bits=base, head_bits=head, other_bits=32, upgrades=upgrades,
        source=source or "llama.cpp ggml-common.h block layouts; llama_tensor_get_type recipe (simplified)",
    )


WEIGHT_FORMATS: Mapping[str, WeightFormat] = {
    f.name: f
    for f in (
        WeightFormat(name="fp32", linear_bits=32, embed_bits=32, head_bits=32, other_bits=32, quantized=False,
                     source="IEEE single precision"),
        WeightFormat(name="bf16", linear_bits=16, quantized=False, source="bfloat16"),
        WeightFormat(name="fp16", linear_bits=16, quantized=False, source="IEEE half precision"),
        WeightFormat(name="fp8", linear_bits=8, per_matrix_bytes=8, native="fp8",
                     source="FP8 E4M3 with fp32 per-tensor weight and input scales (vLLM/compressed-tensors)"),
        WeightFormat(name="int8", linear_bits=8, per_out_row_bytes=4,
                     source="LLM.int8 / W8A8: int8 with an fp32 scale per output row"),
        WeightFormat(name="int4-gptq", linear_bits=_GROUP128_INT4, per_in_col_bytes=4,
                     source="GPTQ group 128: fp16 scale + packed 4-bit zero per group, int32 g_idx per input"),
        WeightFormat(name="int4-awq", linear_bits=_GROUP128_INT4,
                     source="AWQ group 128: fp16 scale + packed 4-bit zero per group"),
        WeightFormat(name="nf4", linear_bits=nf4_bits_per_weight(double_quant=False),
                     source="bitsandbytes NF4, fp32 absmax per 64 (QLoRA section 3)"),
        WeightFormat(name="nf4-dq", linear_bits=nf4_bits_per_weight(double_quant=True),
                     source="bitsandbytes NF4 with double quantization (QLoRA section 3)"),
        WeightFormat(name="mxfp4", linear_bits=4 + 8 / 32, moe_experts_only=True, native="fp4", pad_expert_width_to=256,
                     source="OCP MX: 32 FP4 values share an 8-bit E8M0 scale; gpt-oss quantizes experts only; "
                            "vLLM's MXFP4 MoE kernels pad the expert width to a multiple of 256 (gpt-oss 2880 -> "
                            "3072), which reproduces its logged 13.47/64.38 GiB for gpt-oss-20b/120b within 1 %"),
        WeightFormat(name="nvfp4", linear_bits=4 + 8 / 16, per_matrix_bytes=8, native="fp4",
                     source="NVFP4: 16 FP4 values share an FP8 E4M3 scale, plus fp32 per-tensor scales"),
        _gguf("gguf-q8_0", _Q8_0, head=_Q8_0),
        _gguf("gguf-q6_k", _Q6_K),
        _gguf("gguf-q5_k_m", _Q5_K, upgrades=(("v", 0.5, _Q6_K), ("down", 0.5, _Q6_K))),
        _gguf("gguf-q5_k_s", _Q5_K),
        _gguf("gguf-q5_1", _Q5_1),
        _gguf("gguf-q5_0", _Q5_0),
        _gguf("gguf-q4_k_m", _Q4_K, upgrades=(("v", 0.5, _Q6_K), ("down", 0.5, _Q6_K))),
        _gguf("gguf-q4_k_s", _Q4_K, upgrades=(("down", 0.125, _Q5_K),)),
        _gguf("gguf-q4_1", _Q4_1),
        _gguf("gguf-q4_0", _Q4_0),
        _gguf("gguf-q3_k_m", _Q3_K, upgrades=(("v", 1.0, _Q4_K), ("down", 1.0, _Q4_K))),
        _gguf("gguf-q2_k", _Q2_K, upgrades=(("v", 1.0, _Q3_K), ("down", 1.0, _Q3_K))),
    )
}


def get_format(name: str) -> WeightFormat:
    """The :class:`WeightFormat` called ``name`` (case-insensitive; ``q4_k_m`` = ``gguf-q4_k_m``).

    >>> get_format("Q8_0").linear_bits
    8.5
    """
    key = name.strip().lower()
    for candidate in (key, "gguf-" + key):
        if candidate in WEIGHT_FORMATS:
            return WEIGHT_FORMATS[candidate]
    storage = storage_for_name(key)
    if storage is not None:
        return _from_storage(storage)
    raise InvalidWorkload(said("unknown weight format {name!r}; valid: {WEIGHT_FORMATS}, fp8-blockRxC, "
                               "fp8-channel, int4-gptq-gN, int4-awq-gN, int4-sym-gN (and 'shipped')", name=name,
                               WEIGHT_FORMATS=', '.join(WEIGHT_FORMATS)))


def _from_storage(storage: QuantStorage, shipped: ShippedQuantization | None = None) -> WeightFormat:
    """A planner format over an exact storage (the bits shown are those of a large matrix)."""
    return WeightFormat(name=storage.name, linear_bits=storage.bits_per_value, native=storage.native,
                        pad_expert_width_to=storage.pad_expert_width_to, storage=storage, shipped=shipped,
                        moe_experts_only=storage.name == "mxfp4" and shipped is None,
                        source=storage.description)


def shipped_format(model: ModelSpec) -> WeightFormat:
    """The format the checkpoint ships in: its ``quantization_config`` exactly (storage, scales and the
    layers it covers), or bf16 for a 16-bit checkpoint.

    >>> from anchorgpu.architectures import load_model
    >>> shipped_format(load_model("deepseek-v3")).name, shipped_format(load_model("llama-3.1-8b")).name
    ('fp8-block128x128', 'bf16')
    """
    q = getattr(model, "quantization", None)
    if q is None:
        return WEIGHT_FORMATS["bf16"]
    hit = _SHIPPED.get(id(model))  # one format object per (frozen) model: its weight parts are memoised by identity
    if hit is not None and hit[0] is model:
        return hit[1]
    fmt = _from_storage(q.storage, q)
    if len(_SHIPPED) >= 512:
        _SHIPPED.clear()
    _SHIPPED[id(model)] = (model, fmt)
    return fmt


_SHIPPED: dict[int, tuple[object, WeightFormat]] = {}


def format_for_model(model: ModelSpec, name: str | None) -> WeightFormat:
    """``--weights`` for this model: None or ``shipped`` is the shipped format; the shipped format's own name
    is the shipped format too (with its ignore list); any other name is :func:`get_format`."""
    shipped = shipped_format(model)
    if name is None or name.strip().lower() in ("shipped", shipped.name):
        return shipped
    return get_format(name)


def qlora_default_format(model: ModelSpec) -> WeightFormat:
    """QLoRA's base where ``--weights`` is not given: the checkpoint's own bitsandbytes 4-bit format where it ships
    one, else ``nf4-dq`` (quantized on load, as bitsandbytes' ``Linear4bit`` stores it by default)."""
    shipped = shipped_format(model)
    return shipped if shipped.storage is not None and shipped.storage.flat_block > 0 else get_format("nf4-dq")


@lru_cache(maxsize=64)  # one object per format, so the parts memo (keyed on it) hits
def bnb_code_format(fmt: WeightFormat) -> WeightFormat | None:
    """``fmt`` without its block constants where it is a bitsandbytes 4-bit format (``nf4``, ``nf4-dq``, or a
    checkpoint's own bitsandbytes storage: NF4/FP4 quantized flat in blocks), else None: the packed codes alone,
    :data:`NF4_CODE_BITS` a weight, what ``Params4bit`` holds as a parameter. The constants (absmax and, with double
    quantization, its nested constants) live in its ``quant_state``, which FSDP neither shards nor gathers
    (AnswerDotAI/fsdp_qlora PR #4), so a ZeRO-3/FSDP plan shards these bytes and keeps the rest whole.

    >>> bnb_code_format(get_format("nf4-dq")).linear_bits, bnb_code_format(get_format("int4-awq"))
    (4, None)
    """
    if fmt.storage is not None:
        if not fmt.storage.flat_block:
            return None
        return replace(fmt, storage=replace(fmt.storage, scale_bits=0, second_level_block=0))
    if fmt.name not in ("nf4", "nf4-dq"):
        return None
    return replace(fmt, linear_bits=NF4_CODE_BITS)
