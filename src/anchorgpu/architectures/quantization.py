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
  ``strategy`` tensor/channel/group/block/tensor_group, ``symmetric``) on its ``targets``, minus ``ignore``;
  a ``kv_cache_scheme`` of 8-bit floats is the FP8 KV cache it ships (``ShippedQuantization.kv_cache``).
* ``modelopt`` (NVIDIA ModelOpt, also ``modelopt_fp4``; :mod:`._modelopt`): ``quant_algo`` NVFP4 (FP4 E2M1 values,
  an FP8 scale per 16 inputs, fp32 per-tensor scales), FP8 (per tensor), FP8 per channel, FP8 in 128 x 128 blocks,
  minus ``exclude_modules`` / ``ignore``; ``hf_quant_config.json`` beside a config is read as the same.
* ``quark`` (AMD Quark; :mod:`._quark`): ``global_quant_config.weight`` fp4 per group of 32 (OCP MXFP4) or fp8_e4m3
  per tensor / per channel, on every linear layer minus ``exclude`` (the LM head too unless excluded).
* ``bitsandbytes``: 4-bit NF4/FP4 with an fp32 absmax per 64 values (double quantization: 8-bit absmax +
  an fp32 constant per 256 blocks), or 8-bit LLM.int8 with an fp32 scale per row; ``llm_int8_skip_modules``.

A method not listed, or a field with a value that changes the bytes and is not understood, is refused in
one line naming it: the planner never falls back to 16 bit without saying so.
"""

from __future__ import annotations

from collections.abc import Mapping

from anchorgpu.architectures._modelopt import read_modelopt
from anchorgpu.architectures._quant_layers import membership as _membership
from anchorgpu.architectures._quant_storage import (
    QuantStorage,
    ShippedQuantization,
    fixed_storage,
    fp8_block,
    int_group,
    required_name,
    storage_for_name,
)
from anchorgpu.architectures._quark import read_quark
from anchorgpu.architectures.spec import ModelSpec
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

SUPPORTED_QUANT_METHODS: tuple[str, ...] = (
    "awq", "bitsandbytes", "compressed-tensors", "fbgemm_fp8", "fp8", "gptq", "modelopt", "mxfp4", "quark",
)

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
        storage = fp8_block(block[0], block[1])
    else:
        storage = fixed_storage("fp8" if scheme == "static" else "fp8-dynamic")
    ignore = _str_list(q, where, "modules_to_not_convert") + _str_list(q, where, "ignored_layers")
    groups, _ = _membership(model, ignore, where=where, key="modules_to_not_convert")
    return ShippedQuantization(method="fp8", storage=storage, groups=groups, ignore=ignore)


def _fbgemm_fp8(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    ignore = _str_list(q, where, "modules_to_not_convert")
    groups, _ = _membership(model, ignore, where=where, key="modules_to_not_convert")
    return ShippedQuantization(method="fbgemm_fp8", storage=fixed_storage("fp8-channel"), groups=groups, ignore=ignore)


def _mxfp4(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    ignore = _str_list(q, where, "modules_to_not_convert")
    groups, _ = _membership(model, ignore, where=where, key="modules_to_not_convert")
    return ShippedQuantization(method="mxfp4", storage=fixed_storage("mxfp4"), groups=groups, ignore=ignore)


def _awq(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    bits = _bits(q, where, "bits" if "bits" in q else "w_bit", (4,), 4)
    group = _group(q, where, "group_size" if "group_size" in q else "q_group_size")
    version = str(_get(q, where, "version", str, "gemm")).lower()
    if version not in ("gemm", "gemv", "gemv_fast", "exllama", "ipex", "marlin"):
        raise InvalidConfig(f"{where}: field 'quantization_config.version' {version!r} is not an AWQ layout AnchorGPU knows")
    zero = _get(q, where, "zero_point", bool, True)
    storage = int_group(bits, "awq" if zero else "sym", group)
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
    storage = int_group(bits, "gptq", group)
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
    return ShippedQuantization(method="bitsandbytes", storage=fixed_storage(name), groups=groups, ignore=ignore,
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
            return fixed_storage("fp8-dynamic" if act_dynamic or acts is None else "fp8")
        if strategy == "channel":
            return fixed_storage("fp8-channel")
        if strategy == "block":
            block = field_("block_structure")
            if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
                return fp8_block(block[0], block[1])
    if kind == "float" and bits == 4 and strategy in ("tensor_group", "group") and group in (16, 32):
        return fixed_storage("nvfp4" if group == 16 else "mxfp4")
    if kind == "int" and bits in (2, 3, 4, 8) and isinstance(sym, bool):
        if strategy == "channel":
            return fixed_storage("int8") if bits == 8 and acts is not None else int_group(bits, "sym" if sym else "asym", 0)
        if strategy == "group" and isinstance(group, int) and group >= 8:
            return int_group(bits, "sym" if sym else "asym", group)
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
    kv = _ct_kv_cache(q.get("kv_cache_scheme"), where)
    return ShippedQuantization(method="compressed-tensors", storage=storage, groups=groups, head_quantized=head,
                               ignore=ignore, kv_cache=kv, kv_cache_field="kv_cache_scheme 8-bit float" if kv else "")


def _ct_kv_cache(scheme: object, where: str) -> str | None:
    """A compressed-tensors ``kv_cache_scheme``: 8-bit float is the FP8 KV cache the checkpoint ships scales for
    (vLLM runs it when ``--kv-cache-dtype`` is ``auto``: ``Attention.__init__``, ``layers/attention/attention.py``);
    vLLM takes no other, so neither does the planner."""
    if scheme is None:
        return None
    if isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8:
        return "fp8"
    what = (f"{scheme.get('type', 'int')} {scheme.get('num_bits')}-bit" if isinstance(scheme, Mapping) else repr(scheme))
    raise InvalidConfig(f"{where}: compressed-tensors kv_cache_scheme {what} is not supported (an 8-bit float KV "
                        "cache is, the only one vLLM runs); its KV bytes would be a guess")


_READERS = {
    "fp8": _fp8, "fbgemm_fp8": _fbgemm_fp8, "mxfp4": _mxfp4, "awq": _awq, "gptq": _gptq,
    "bitsandbytes": _bitsandbytes, "compressed-tensors": _compressed_tensors,
    "modelopt": read_modelopt, "modelopt_fp4": read_modelopt, "quark": read_quark,
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
    method = required_name(q, where, "quant_method", examples="'fp8' or 'modelopt'",
                           missing="the shipped precision cannot be read (plan with --weights to choose one)")
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
