"""Quantized weight storages (bits, scale blocks) and the shipped-quantization record. Pure; stdlib only.

Split from :mod:`anchorgpu.architectures.quantization`, which reads ``quantization_config`` into these.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from anchorgpu.errors import InvalidConfig

__all__ = ["NativeCompute", "QuantStorage", "ShippedQuantization", "fixed_storage", "fp8_block", "int_group",
           "required_name", "storage_for_name"]

NativeCompute = Literal["fp8", "fp4"]

@dataclass(frozen=True, slots=True, kw_only=True)
class QuantStorage:
    """How one quantized linear matrix of ``d_in`` inputs and ``d_out`` outputs is stored.

    ``block_out`` x ``block_in`` values share one scale (0 = the whole dimension); ``scale_bits`` counts the
    scale and its zero point. ``per_matrix_bytes``: per-tensor scales; ``per_in_col_bytes``: GPTQ ``g_idx``;
    ``flat_block``: bitsandbytes quantizes the flattened tensor in blocks (``block_in`` unused then).
    ``native``: the matrix math the format allows (W8A8 FP8, FP4) where the hardware has it; None = the
    weights are dequantized to 16 bit for the math (weight-only formats).
    """

    name: str
    value_bits: int
    block_out: int = 0
    block_in: int = 0
    scale_bits: float = 0
    per_matrix_bytes: int = 0
    per_in_col_bytes: int = 0
    flat_block: int = 0
    second_level_block: int = 0  # bitsandbytes double quantization: one fp32 constant per this many blocks
    native: NativeCompute | None = None
    pad_expert_width_to: int = 0  # engines pad the experts' intermediate width to a multiple of this (MXFP4)
    description: str = ""

    def matrix_bytes(self, d_in: int, d_out: int) -> float:
        """Bytes of one ``d_in x d_out`` matrix in this storage, scales included.

        DeepSeek-V3's expert gate_proj (7168 -> 2048) in FP8 with 128 x 128 blocks:
        7168·2048 + 16·56·4 = 14,683,648 bytes.

        >>> storage_for_name("fp8-block128x128").matrix_bytes(7168, 2048)
        14683648.0
        """
        values = d_in * d_out
        out = values * self.value_bits / 8 + self.per_matrix_bytes + d_in * self.per_in_col_bytes
        if self.flat_block:
            blocks = math.ceil(values / self.flat_block)
            out += blocks * self.scale_bits / 8
            if self.second_level_block:
                out += math.ceil(blocks / self.second_level_block) * 4
            return out
        rows = 1 if self.block_out == 0 else math.ceil(d_out / self.block_out)
        cols = 1 if self.block_in == 0 else math.ceil(d_in / self.block_in)
        return out + rows * cols * self.scale_bits / 8

    @property
    def bits_per_value(self) -> float:
        """Approximate bits per weight, scales included, for a large matrix with whole blocks."""
        per_block = (self.block_out or 4096) * (self.block_in or 4096)
        block = self.flat_block or per_block
        return self.value_bits + self.scale_bits / block


@dataclass(frozen=True, slots=True, kw_only=True)
class ShippedQuantization:
    """What a checkpoint's ``quantization_config`` says: one storage and the layers stored in it.

    ``groups``: (linear-group name, fraction of its matrices quantized) for every linear group of the model;
    a fraction below 1 means the ignore list names some layers (DeepSeek AWQ keeps its first layers 16-bit).
    ``head_quantized``: the untied LM head is stored in the quantized format too.
    ``kv_cache``: the KV-cache dtype the checkpoint was calibrated for and ships scales of (``"fp8"``,
    ``"nvfp4"``), which vLLM and TensorRT-LLM then run by default; None when it states none. ``kv_cache_field`` names where the
    config says so (``kv_cache_quant_algo FP8``), for the plan's assumption line.
    """

    method: str
    storage: QuantStorage
    groups: tuple[tuple[str, float], ...]
    head_quantized: bool = False
    ignore: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    kv_cache: str | None = None
    kv_cache_field: str = ""

    @property
    def name(self) -> str:
        return self.storage.name

    def fraction(self, group: str) -> float:
        for name, frac in self.groups:
            if name == group:
                return frac
        return 0.0

    @property
    def kept_16bit(self) -> tuple[str, ...]:
        """Linear groups left wholly in 16 bit."""
        return tuple(name for name, frac in self.groups if frac == 0)


# --------------------------------------------------------------------------------------------------
# Storages by canonical name (so ``--weights NAME`` and the sweep name the same thing)
# --------------------------------------------------------------------------------------------------

_FP8_BLOCK = re.compile(r"^fp8-block(\d+)x(\d+)$")
_INT_GROUP = re.compile(r"^int(\d)-(awq|gptq|sym|asym)(?:-g(\d+)|-gch)?$")
_INT_GCH = re.compile(r"-gch$")


def fp8_block(bo: int, bi: int) -> QuantStorage:
    return QuantStorage(name=f"fp8-block{bo}x{bi}", value_bits=8, block_out=bo, block_in=bi, scale_bits=32,
                        native="fp8", description=f"FP8 E4M3 with an fp32 scale per {bo}x{bi} block")


def int_group(bits: int, kind: str, group: int) -> QuantStorage:
    """AWQ / GPTQ / compressed-tensors integer weights in groups of ``group`` inputs (0 = a whole row)."""
    zero = bits if kind in ("awq", "gptq", "asym") else 0
    suffix = "" if (group == 128 and kind in ("awq", "gptq")) else ("-gch" if group == 0 else f"-g{group}")
    what = {"awq": "AWQ", "gptq": "GPTQ", "sym": "symmetric", "asym": "asymmetric"}[kind]
    per = "per output row" if group == 0 else f"per {group} inputs"
    return QuantStorage(
        name=f"int{bits}-{kind}{suffix}", value_bits=bits, block_out=1, block_in=group, scale_bits=16 + zero,
        per_in_col_bytes=4 if kind == "gptq" else 0,
        description=f"{what} int{bits}: a 16-bit scale{' and a packed zero point' if zero else ''} {per}"
                    + (", int32 g_idx per input" if kind == "gptq" else ""))


def storage_for_name(name: str) -> QuantStorage | None:
    """The storage a canonical shipped-format name stands for, or None (16-bit and GGUF formats live in
    the planner's :mod:`~anchorgpu.planner.formats`).

    >>> storage_for_name("int4-gptq").scale_bits, storage_for_name("int4-sym-g32").block_in
    (20, 32)
    """
    key = name.strip().lower()
    fixed = _FIXED.get(key)
    if fixed is not None:
        return fixed
    m = _FP8_BLOCK.match(key)
    if m:
        return fp8_block(int(m.group(1)), int(m.group(2)))
    m = _INT_GROUP.match(key)
    if m and int(m.group(1)) in (2, 3, 4, 8):
        group = 0 if _INT_GCH.search(key) else int(m.group(3) or 128)
        if group == 0 or group >= 8:
            return int_group(int(m.group(1)), m.group(2), group)
    return None


_FIXED: dict[str, QuantStorage] = {
    s.name: s for s in (
        QuantStorage(name="fp8", value_bits=8, per_matrix_bytes=8, native="fp8",
                     description="FP8 E4M3 with fp32 per-tensor weight and input scales"),
        QuantStorage(name="fp8-dynamic", value_bits=8, per_matrix_bytes=4, native="fp8",
                     description="FP8 E4M3 with an fp32 per-tensor weight scale (activations scaled at run time)"),
        QuantStorage(name="fp8-channel", value_bits=8, block_out=1, block_in=0, scale_bits=32, native="fp8",
                     description="FP8 E4M3 with an fp32 scale per output row"),
        QuantStorage(name="mxfp4", value_bits=4, block_out=1, block_in=32, scale_bits=8, native="fp4",
                     pad_expert_width_to=256,
                     description="MXFP4: FP4 E2M1 values, an E8M0 scale per 32 inputs"),
        QuantStorage(name="nvfp4", value_bits=4, block_out=1, block_in=16, scale_bits=8, per_matrix_bytes=8,
                     native="fp4", description="NVFP4: FP4 E2M1 values, an FP8 scale per 16 inputs, fp32 global scales"),
        QuantStorage(name="nf4", value_bits=4, flat_block=64, scale_bits=32,
                     description="bitsandbytes NF4, an fp32 absmax per 64 values"),
        QuantStorage(name="nf4-dq", value_bits=4, flat_block=64, scale_bits=8, second_level_block=256,
                     description="bitsandbytes NF4 with double quantization (8-bit absmax per 64, fp32 per 256 blocks)"),
        QuantStorage(name="bnb-fp4", value_bits=4, flat_block=64, scale_bits=32,
                     description="bitsandbytes FP4, an fp32 absmax per 64 values"),
        QuantStorage(name="bnb-fp4-dq", value_bits=4, flat_block=64, scale_bits=8, second_level_block=256,
                     description="bitsandbytes FP4 with double quantization"),
        QuantStorage(name="int8", value_bits=8, block_out=1, block_in=0, scale_bits=32,
                     description="int8 with an fp32 scale per output row (LLM.int8 / W8A8)"),
    )
}



def fixed_storage(name: str) -> QuantStorage:
    """One of the fixed-name storages (fp8, fp8-dynamic, fp8-channel, mxfp4, nvfp4, nf4, nf4-dq, bnb-fp4, int8 …)."""
    return _FIXED[name]


def required_name(q: Mapping[str, object], where: str, key: str, *, examples: str, missing: str) -> str:
    """The ``quantization_config`` field ``key`` as the non-empty name it must be, else refused in one line: a value of
    another type named with ``examples`` of what it could be, an absent or empty one with ``missing`` (why it matters).

    >>> required_name({"quant_method": "fp8"}, "x", "quant_method", examples="'fp8'", missing="?")
    'fp8'
    >>> required_name({"quant_method": 5}, "x", "quant_method", examples="'fp8'", missing="?")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidConfig: x: field 'quantization_config.quant_method' must be a name such as 'fp8', got 5
    """
    value = q.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidConfig(f"{where}: field 'quantization_config.{key}' must be a name such as {examples}, got {value!r}")
    if not isinstance(value, str) or not value:
        raise InvalidConfig(f"{where}: field 'quantization_config.{key}' is missing; {missing}")
    return value
