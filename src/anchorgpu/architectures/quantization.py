"""The precision a checkpoint ships in, read from its ``quantization_config``. Pure; stdlib only.

:func:`read_quantization` turns the ``quantization_config`` of a Hugging Face ``config.json`` into a
frozen :class:`ShippedQuantization`: how the quantized linear layers are stored (:class:`QuantStorage`:
bits per value, which block of the matrix shares one scale, the scale's bits) and which linear-layer
families of the model are stored that way (the rest stay 16-bit: embeddings always, the LM head unless
the method quantizes it, MoE routers, and whatever the config's ignore list names).

Methods read (storage as the checkpoint holds it on disk and as vLLM/transformers load it):

* ``fp8`` (transformers FineGrainedFP8 / DeepSeek-V3): E4M3 values; with ``weight_block_size`` [bo, bi] one
  fp32 ``weight_scale_inv`` per bo x bi block (ceil(out/bo) x ceil(in/bi) per matrix); without it one fp32
  scale per tensor (plus an fp32 input scale when ``activation_scheme`` is static).
* ``fbgemm_fp8``: E4M3 values with an fp32 scale per output row.
* ``mxfp4`` (gpt-oss): FP4 E2M1 values with an E8M0 (8-bit) scale per 32 inputs; ``modules_to_not_convert``.
* ``awq``: ``bits``-bit values, per group of ``group_size`` inputs an fp16 scale and (``zero_point``) a packed
  ``bits``-bit zero point per output column (AutoAWQ GEMM layout: qweight, qzeros, scales).
* ``gptq``: ``bits``-bit values, per group an fp16 scale and a packed zero point (stored even when ``sym``),
  plus an int32 ``g_idx`` per input column; ``group_size`` -1 is one group per output row; ``lm_head``.
* ``compressed-tensors`` (llm-compressor): every ``config_groups`` scheme (``num_bits``, ``type`` int/float,
  ``strategy`` tensor/channel/group/block/tensor_group, ``symmetric``) on its ``targets``, minus ``ignore``.
* ``bitsandbytes``: 4-bit NF4/FP4 with an fp32 absmax per 64 values (double quantization: 8-bit absmax +
  an fp32 constant per 256 blocks), or 8-bit LLM.int8 with an fp32 scale per row; ``llm_int8_skip_modules``.

A method not listed, or a field with a value that changes the bytes and is not understood, is refused in
one line naming it: the planner never falls back to 16 bit without saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from anchorgpu.architectures.spec import LinearGroup, ModelSpec
from anchorgpu.errors import InvalidConfig

__all__ = [
    "SUPPORTED_QUANT_METHODS",
    "QuantStorage",
    "ShippedQuantization",
    "describe_shipped",
    "read_quantization",
    "shipped_from_name",
    "storage_for_name",
]

NativeCompute = Literal["fp8", "fp4"]

SUPPORTED_QUANT_METHODS: tuple[str, ...] = (
    "awq", "bitsandbytes", "compressed-tensors", "fbgemm_fp8", "fp8", "gptq", "mxfp4",
)


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
    """

    method: str
    storage: QuantStorage
    groups: tuple[tuple[str, float], ...]
    head_quantized: bool = False
    ignore: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

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


def _fp8_block(bo: int, bi: int) -> QuantStorage:
    return QuantStorage(name=f"fp8-block{bo}x{bi}", value_bits=8, block_out=bo, block_in=bi, scale_bits=32,
                        native="fp8", description=f"FP8 E4M3 with an fp32 scale per {bo}x{bi} block")


def _int_group(bits: int, kind: str, group: int) -> QuantStorage:
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
        return _fp8_block(int(m.group(1)), int(m.group(2)))
    m = _INT_GROUP.match(key)
    if m and int(m.group(1)) in (2, 3, 4, 8):
        group = 0 if _INT_GCH.search(key) else int(m.group(3) or 128)
        if group == 0 or group >= 8:
            return _int_group(int(m.group(1)), m.group(2), group)
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


# --------------------------------------------------------------------------------------------------
# Which linear layers: module paths and ignore patterns
# --------------------------------------------------------------------------------------------------

_ATTN = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "qkv": "qkv_proj", "q_a": "q_a_proj",
         "q_b": "q_b_proj", "kv_a": "kv_a_proj_with_mqa", "kv_b": "kv_b_proj"}
_MLP = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj", "gate_up": "gate_up_proj"}
_MIXTRAL = {"gate": "w1", "down": "w2", "up": "w3"}
_ROUTER_PATHS = ("mlp.gate", "mlp.router", "block_sparse_moe.gate", "mlp.shared_expert_gate", "feed_forward.router")
# Prefixes multimodal checkpoints put before the text model's layers (Llama 4, Gemma 3, Mistral 3 …).
_TEXT_PREFIXES = ("model.language_model.", "language_model.model.", "language_model.", "model.text_model.",
                  "text_model.")


def _paths(group: LinearGroup, layer: int) -> tuple[str, ...]:
    """Module names transformers gives this group's matrices in ``layer`` (a few spellings across families)."""
    base = f"model.layers.{layer}."
    prefix, _, rest = group.name.partition("_")
    if group.component == "router":
        return tuple(base + p for p in _ROUTER_PATHS)
    if group.component == "attention":
        leaf = _ATTN.get(group.name, group.name)
        return (base + "self_attn." + leaf, base + "attention." + leaf, base + "self_attention." + leaf)
    if group.component == "experts" and prefix == "expert":
        return (base + "mlp.experts.0." + _MLP.get(rest, rest), base + "mlp.experts." + _MLP.get(rest, rest),
                base + "block_sparse_moe.experts.0." + _MIXTRAL.get(rest, rest),
                base + "feed_forward.experts." + _MLP.get(rest, rest))
    if group.component == "shared_experts" and prefix == "shared":
        leaf = _MLP.get(rest, rest)
        return (base + "mlp.shared_experts." + leaf, base + "mlp.shared_expert." + leaf,
                base + "feed_forward.shared_expert." + leaf)
    if group.component == "mlp":
        return (base + "mlp." + _MLP.get(group.name, group.name), base + "feed_forward." + _MLP.get(group.name, group.name))
    return (base + f"{group.component or 'layer'}.{group.name}",)


def _group_layers(group: LinearGroup, model: ModelSpec) -> range:
    """Layer indices a group's matrices sit in. MoE models: experts, shared experts and routers in the last
    ``num_moe_layers`` layers, dense MLPs in the first (DeepSeek/Kimi/GLM ``first_k_dense_replace``)."""
    n = model.num_layers
    if model.moe is not None and group.component in ("experts", "shared_experts", "router"):
        return range(n - model.moe.num_moe_layers, n)
    if model.moe is not None and group.component == "mlp":
        return range(0, n - model.moe.num_moe_layers)
    return range(n)


class _Patterns:
    """Module-name patterns as configs write them: ``re:REGEX`` (compressed-tensors), globs with ``*``, dotted
    names matched on whole dotted segments, and plain substrings (transformers' ``modules_to_not_convert``)."""

    def __init__(self, patterns: Sequence[str], *, where: str, key: str) -> None:
        self.raw = tuple(patterns)
        regexes: list[str] = []
        for p in patterns:
            for prefix in _TEXT_PREFIXES:
                if p.startswith(prefix):
                    p = "model." + p[len(prefix):] if not p[len(prefix):].startswith("model.") else p[len(prefix):]
                    break
            if p.startswith("re:"):
                try:
                    re.compile(p[3:])
                except re.error as exc:
                    raise InvalidConfig(f"{where}: field {key!r} has an invalid regular expression {p!r} ({exc})") from None
                regexes.append(f"(?:{p[3:]})")
            else:
                body = re.escape(p.rstrip(".")).replace(r"\*", r"[^ ]*")
                regexes.append(rf"(?:(?:^|\.){body}(?:\.|$))" if "." in p or "*" in p else rf"(?:{body})")
        self.regex = re.compile("|".join(regexes)) if regexes else None
        self.layer_specific = any(re.search(r"(?:^|\.)\d+(?:\.|$)", p) for p in patterns)
        self.linear_class = any(p.lower() in ("linear", "torch.nn.linear") for p in patterns)

    def hit(self, path: str) -> bool:
        return self.regex is not None and self.regex.search(path) is not None


def _fraction(group: LinearGroup, model: ModelSpec, ignore: _Patterns, targets: _Patterns | None) -> float:
    """Fraction of the group's layers that are quantized: targeted (when targets are given) and not ignored."""
    layers = _group_layers(group, model)
    if not layers:
        return 0.0
    probe = layers if (ignore.layer_specific or (targets is not None and targets.layer_specific)) else layers[:1]
    kept = 0
    for layer in probe:
        paths = _paths(group, layer)
        targeted = targets is None or targets.linear_class or any(targets.hit(p) for p in paths)
        if targeted and not any(ignore.hit(p) for p in paths):
            kept += 1
    return kept / len(probe)


def _membership(model: ModelSpec, ignore: Sequence[str], *, where: str, key: str,
                targets: Sequence[str] | None = None, only: Sequence[str] | None = None
                ) -> tuple[tuple[tuple[str, float], ...], bool]:
    """(group fractions, LM head quantized?) for ignore patterns, optional targets and an optional
    ``only`` list of group names (GPTQ ``modules_in_block_to_quantize``)."""
    ig = _Patterns(ignore, where=where, key=key)
    tg = None if targets is None else _Patterns(targets, where=where, key="targets")
    groups: list[tuple[str, float]] = []
    for g in model.linear_groups:
        if g.component == "router":
            groups.append((g.name, 0.0))  # routers stay 16-bit: small, and engines keep them so
            continue
        frac = _fraction(g, model, ig, tg)
        if only is not None and not any(p in only for p in _paths(g, 0)[0].split(".")):
            frac = 0.0
        groups.append((g.name, frac))
    head = model.params.head > 0 and tg is not None and (tg.linear_class or tg.hit("lm_head")) and not ig.hit("lm_head")
    return tuple(groups), head


# --------------------------------------------------------------------------------------------------
# Reading quantization_config
# --------------------------------------------------------------------------------------------------

def _get(q: Mapping[str, object], where: str, key: str, kind: type | tuple[type, ...], default: object = None) -> object:
    value = q.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise InvalidConfig(f"{where}: field 'quantization_config.{key}' must be {_kind(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise InvalidConfig(f"{where}: field 'quantization_config.{key}' must be {_kind(kind)}, got {value!r}")
    return value


def _kind(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", bool: "true or false", str: "a string", list: "a list", dict: "an object"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _str_list(q: Mapping[str, object], where: str, key: str) -> tuple[str, ...]:
    value = q.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidConfig(f"{where}: field 'quantization_config.{key}' must be a list of module names, got {value!r}")
    return tuple(value)


def _bits(q: Mapping[str, object], where: str, key: str, allowed: tuple[int, ...], default: int | None = None) -> int:
    value = _get(q, where, key, int, default)
    if value not in allowed:
        raise InvalidConfig(f"{where}: field 'quantization_config.{key}' must be one of "
                            f"{', '.join(map(str, allowed))}, got {value!r}")
    assert isinstance(value, int)
    return value


def _group(q: Mapping[str, object], where: str, key: str, default: int = 128) -> int:
    value = _get(q, where, key, int, default)
    assert isinstance(value, int)
    if value == -1:
        return 0
    if value < 8:
        raise InvalidConfig(f"{where}: field 'quantization_config.{key}' must be -1 or a group of at least 8 inputs, "
                            f"got {value!r}")
    return value


def _fp8(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    block = q.get("weight_block_size")
    scheme = _get(q, where, "activation_scheme", str, "dynamic")
    if scheme not in ("dynamic", "static"):
        raise InvalidConfig(f"{where}: field 'quantization_config.activation_scheme' must be dynamic or static, got {scheme!r}")
    if block is not None:
        if (not isinstance(block, list) or len(block) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
            raise InvalidConfig(f"{where}: field 'quantization_config.weight_block_size' must be two positive "
                                f"integers [rows, columns], got {block!r}")
        storage = _fp8_block(block[0], block[1])
    else:
        storage = _FIXED["fp8" if scheme == "static" else "fp8-dynamic"]
    ignore = _str_list(q, where, "modules_to_not_convert") + _str_list(q, where, "ignored_layers")
    groups, _ = _membership(model, ignore, where=where, key="modules_to_not_convert")
    return ShippedQuantization(method="fp8", storage=storage, groups=groups, ignore=ignore)


def _fbgemm_fp8(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    ignore = _str_list(q, where, "modules_to_not_convert")
    groups, _ = _membership(model, ignore, where=where, key="modules_to_not_convert")
    return ShippedQuantization(method="fbgemm_fp8", storage=_FIXED["fp8-channel"], groups=groups, ignore=ignore)


def _mxfp4(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    ignore = _str_list(q, where, "modules_to_not_convert")
    groups, _ = _membership(model, ignore, where=where, key="modules_to_not_convert")
    return ShippedQuantization(method="mxfp4", storage=_FIXED["mxfp4"], groups=groups, ignore=ignore)


def _awq(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    bits = _bits(q, where, "bits" if "bits" in q else "w_bit", (4,), 4)
    group = _group(q, where, "group_size" if "group_size" in q else "q_group_size")
    version = str(_get(q, where, "version", str, "gemm")).lower()
    if version not in ("gemm", "gemv", "gemv_fast", "exllama", "ipex", "marlin"):
        raise InvalidConfig(f"{where}: field 'quantization_config.version' {version!r} is not an AWQ layout AnchorGPU knows")
    zero = _get(q, where, "zero_point", bool, True)
    storage = _int_group(bits, "awq" if zero else "sym", group)
    ignore = _str_list(q, where, "modules_to_not_convert")
    groups, _ = _membership(model, ignore, where=where, key="modules_to_not_convert")
    return ShippedQuantization(method="awq", storage=storage, groups=groups, ignore=ignore)


def _gptq(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    bits = _bits(q, where, "bits", (2, 3, 4, 8))
    group = _group(q, where, "group_size")
    dynamic = q.get("dynamic")
    if dynamic:
        raise InvalidConfig(f"{where}: field 'quantization_config.dynamic' (per-module GPTQ overrides) is not supported; "
                            "plan with --weights to choose one format")
    storage = _int_group(bits, "gptq", group)
    blocks = q.get("modules_in_block_to_quantize")
    only: list[str] | None = None
    if blocks is not None:
        if not isinstance(blocks, list) or not all(isinstance(b, list) and all(isinstance(x, str) for x in b) for b in blocks):
            raise InvalidConfig(f"{where}: field 'quantization_config.modules_in_block_to_quantize' must be a list of "
                                f"lists of module names, got {blocks!r}")
        only = [name.split(".")[-1] for block in blocks for name in block]
    groups, _ = _membership(model, (), where=where, key="modules_to_not_convert", only=only)
    head = bool(_get(q, where, "lm_head", bool, False)) and model.params.head > 0
    return ShippedQuantization(method="gptq", storage=storage, groups=groups, head_quantized=head)


def _bitsandbytes(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    four = bool(_get(q, where, "load_in_4bit", bool, False) or _get(q, where, "_load_in_4bit", bool, False))
    eight = bool(_get(q, where, "load_in_8bit", bool, False) or _get(q, where, "_load_in_8bit", bool, False))
    if four == eight:
        raise InvalidConfig(f"{where}: field 'quantization_config' of bitsandbytes must set exactly one of "
                            "load_in_4bit and load_in_8bit")
    if four:
        kind = _get(q, where, "bnb_4bit_quant_type", str, "fp4")
        if kind not in ("nf4", "fp4"):
            raise InvalidConfig(f"{where}: field 'quantization_config.bnb_4bit_quant_type' must be nf4 or fp4, got {kind!r}")
        dq = bool(_get(q, where, "bnb_4bit_use_double_quant", bool, False))
        name = ("nf4" if kind == "nf4" else "bnb-fp4") + ("-dq" if dq else "")
    else:
        name = "int8"
    ignore = _str_list(q, where, "llm_int8_skip_modules")
    groups, _ = _membership(model, ignore, where=where, key="llm_int8_skip_modules")
    return ShippedQuantization(method="bitsandbytes", storage=_FIXED[name], groups=groups, ignore=ignore,
                               notes=("bitsandbytes leaves the LM head in 16 bit",))


def _ct_storage(weights: Mapping[str, object], acts: object, where: str) -> QuantStorage:
    """One compressed-tensors weight scheme as a storage."""
    def field_(key: str, default: object = None) -> object:
        return weights.get(key, default)

    bits, kind, strategy = field_("num_bits"), field_("type", "int"), field_("strategy", "tensor")
    sym = field_("symmetric", True)
    group = field_("group_size")
    act_dynamic = isinstance(acts, Mapping) and bool(acts.get("dynamic", False))
    scheme = f"{kind} {bits}-bit {strategy}"
    if kind == "float" and bits == 8:
        if strategy == "tensor":
            return _FIXED["fp8-dynamic" if act_dynamic or acts is None else "fp8"]
        if strategy == "channel":
            return _FIXED["fp8-channel"]
        if strategy == "block":
            block = field_("block_structure")
            if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
                return _fp8_block(block[0], block[1])
    if kind == "float" and bits == 4 and strategy in ("tensor_group", "group") and group in (16, 32):
        return _FIXED["nvfp4" if group == 16 else "mxfp4"]
    if kind == "int" and bits in (2, 3, 4, 8) and isinstance(sym, bool):
        if strategy == "channel":
            return _FIXED["int8"] if bits == 8 and acts is not None else _int_group(bits, "sym" if sym else "asym", 0)
        if strategy == "group" and isinstance(group, int) and group >= 8:
            return _int_group(bits, "sym" if sym else "asym", group)
    raise InvalidConfig(f"{where}: compressed-tensors weight scheme {scheme}"
                        + (f" group {group}" if group else "") + " is not supported")


def _compressed_tensors(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    groups_cfg = q.get("config_groups")
    if not isinstance(groups_cfg, Mapping) or not groups_cfg:
        raise InvalidConfig(f"{where}: field 'quantization_config.config_groups' must be a non-empty object")
    storages: dict[str, QuantStorage] = {}
    targets: list[str] = []
    for gname, scheme in groups_cfg.items():
        if not isinstance(scheme, Mapping) or not isinstance(scheme.get("weights"), Mapping):
            raise InvalidConfig(f"{where}: compressed-tensors group {gname!r} has no 'weights' scheme")
        weights = scheme["weights"]
        assert isinstance(weights, Mapping)
        storage = _ct_storage(weights, scheme.get("input_activations"), where)
        storages[storage.name] = storage
        tg = scheme.get("targets", ["Linear"])
        if not isinstance(tg, list) or not all(isinstance(t, str) for t in tg):
            raise InvalidConfig(f"{where}: compressed-tensors group {gname!r} field 'targets' must be a list of names")
        targets += tg
    if len(storages) > 1:
        raise InvalidConfig(f"{where}: compressed-tensors with {len(storages)} different weight schemes "
                            f"({', '.join(storages)}) is not supported; plan with --weights to choose one")
    ignore = _str_list(q, where, "ignore")
    groups, head = _membership(model, ignore, where=where, key="ignore", targets=targets)
    storage = next(iter(storages.values()))
    return ShippedQuantization(method="compressed-tensors", storage=storage, groups=groups, head_quantized=head,
                               ignore=ignore)


_READERS = {
    "fp8": _fp8, "fbgemm_fp8": _fbgemm_fp8, "mxfp4": _mxfp4, "awq": _awq, "gptq": _gptq,
    "bitsandbytes": _bitsandbytes, "compressed-tensors": _compressed_tensors,
}


def read_quantization(cfg: Mapping[str, object], model: ModelSpec, *, where: str) -> ShippedQuantization | None:
    """The shipped quantization of ``model`` from its config's ``quantization_config`` (None when absent).

    >>> from anchorgpu.architectures import load_model
    >>> q = load_model("deepseek-v3").quantization
    >>> q.name, q.fraction("expert_down"), q.fraction("router"), q.head_quantized
    ('fp8-block128x128', 1.0, 0.0, False)
    """
    q = cfg.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, Mapping):
        raise InvalidConfig(f"{where}: field 'quantization_config' must be an object, got {q!r}")
    method = q.get("quant_method")
    if not isinstance(method, str) or not method:
        raise InvalidConfig(f"{where}: field 'quantization_config.quant_method' is missing; the shipped precision "
                            "cannot be read (plan with --weights to choose one)")
    reader = _READERS.get(method.lower())
    if reader is None:
        raise InvalidConfig(f"{where}: quantization_config.quant_method {method!r} is not supported "
                            f"(supported: {', '.join(SUPPORTED_QUANT_METHODS)}); its weight bytes would be a guess")
    return reader(q, model, where)


def shipped_from_name(name: str, model: ModelSpec, *, where: str) -> ShippedQuantization:
    """A registry row's ``shipped_weights`` (where the config cannot say): every linear layer of the
    transformer blocks in that storage, routers, embeddings and LM head 16-bit."""
    storage = storage_for_name(name)
    if storage is None:
        raise InvalidConfig(f"{where}: shipped_weights {name!r} is not a quantized format AnchorGPU knows")
    groups, _ = _membership(model, (), where=where, key="shipped_weights")
    return ShippedQuantization(method="registry", storage=storage, groups=groups)


def describe_shipped(q: ShippedQuantization) -> str:
    """One line: the format and what stays 16-bit.

    >>> from anchorgpu.architectures import load_model
    >>> describe_shipped(load_model("gpt-oss-20b").quantization)
    'mxfp4 (MXFP4: FP4 E2M1 values, an E8M0 scale per 32 inputs) on expert_gate_up, expert_down; 16-bit: embeddings, lm_head, q, k, v, o, router'
    """
    quantized = [name for name, frac in q.groups if frac > 0]
    partial = [f"{name} {frac:.0%}" for name, frac in q.groups if 0 < frac < 1]
    kept = ["embeddings"] + ([] if q.head_quantized else ["lm_head"]) + list(q.kept_16bit)
    text = f"{q.name} ({q.storage.description}) on {', '.join(quantized) or 'no linear layer'}"
    if partial:
        text += f" (partly: {', '.join(partial)})"
    return text + f"; 16-bit: {', '.join(kept)}"
