"""NVIDIA ModelOpt checkpoints (TensorRT Model Optimizer's unified Hugging Face export). Pure; stdlib only.

Split from :mod:`anchorgpu.architectures.quantization`. ModelOpt writes what it quantized twice
(``modelopt/torch/export/unified_export_hf.py``, ``convert_hf_config.py``):

* ``hf_quant_config.json``: ``{"producer": {...}, "quantization": {"quant_algo", "kv_cache_quant_algo",
  "group_size", "exclude_modules"}}`` (the file TensorRT-LLM and vLLM read first);
* ``config.json``'s ``quantization_config``: the same in compressed-tensors' shape, ``{"quant_method":
  "modelopt", "quant_algo", "ignore", "kv_cache_scheme", "config_groups", "producer"}``.

Storage per ``quant_algo`` (vLLM ``model_executor/layers/quantization/modelopt.py``, the ModelOpt export):

* ``NVFP4``: FP4 E2M1 values, an FP8 E4M3 ``weight_scale`` per 16 inputs, fp32 ``weight_scale_2`` and
  ``input_scale`` per tensor (``nvfp4``); ``group_size`` must be 16, the only block the kernels take.
* ``FP8``: E4M3 values with fp32 per-tensor ``weight_scale`` and ``input_scale`` (``fp8``).
* ``FP8_PER_CHANNEL_PER_TOKEN``: E4M3 with an fp32 scale per output row (``fp8-channel``).
* ``FP8_PB_WO``: E4M3 in 128 x 128 blocks with an fp32 scale each (``fp8-block128x128``).

Every other ``quant_algo`` (``MIXED_PRECISION``, the AWQ and W4A8/W4A16 variants, ``MXFP8`` …) changes the
bytes in ways not read here and is refused in one line. ``exclude_modules`` / ``ignore`` name what stays
16-bit, as module names with ``*`` wildcards (``model.layers.*.self_attn*``, ``lm_head``); the LM head is
quantized only where no pattern names it.

``kv_cache_quant_algo`` (``config.json``'s ``kv_cache_scheme``: the string, or ``{"num_bits": 8, "type":
"float"}``) ``FP8`` or ``NVFP4`` (``{"num_bits": 4, "type": "float"}``) is the KV cache the checkpoint ships: its
calibrated K/V scales, which vLLM (``vllm/utils/torch_utils.py`` ``resolve_kv_cache_dtype_string`` and
``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP``, 0.33.0: ``--kv-cache-dtype auto`` becomes ``fp8_e4m3`` or ``nvfp4``) and
TensorRT-LLM (``tensorrt_llm/llmapi/llm_utils.py`` ``_apply_modelopt_quant_config``: the checkpoint's
``kv_cache_quant_algo`` unless ``kv_cache_config.dtype`` names fp8 or nvfp4) run by default, so the plan's default
KV dtype (``fp8``, ``nvfp4``). An ``INT8`` KV cache, which the planner has no dtype for, is kept as a note.
"""

from __future__ import annotations

from collections.abc import Mapping

from anchorgpu.architectures._quant_layers import membership
from anchorgpu.architectures._quant_storage import (
    QuantStorage,
    ShippedQuantization,
    fixed_storage,
    fp8_block,
    required_name,
)
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidConfig

__all__ = ["MODELOPT_ALGOS", "modelopt_quantization_config", "read_modelopt"]

MODELOPT_ALGOS: tuple[str, ...] = ("NVFP4", "FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO")
_KV_ALGOS = ("FP8", "NVFP4", "INT8")


def _storage(algo: str, group: object, where: str) -> QuantStorage:
    if algo == "NVFP4":
        if group not in (None, 16):
            raise InvalidConfig(f"{where}: ModelOpt NVFP4 field 'group_size' must be 16 (an FP8 scale per 16 inputs), "
                                f"got {group!r}")
        return fixed_storage("nvfp4")
    if algo == "FP8":
        return fixed_storage("fp8")
    if algo == "FP8_PER_CHANNEL_PER_TOKEN":
        return fixed_storage("fp8-channel")
    return fp8_block(128, 128)


def _patterns(q: Mapping[str, object], where: str) -> tuple[str, ...]:
    out: list[str] = []
    for key in ("exclude_modules", "ignore"):
        value = q.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidConfig(f"{where}: field 'quantization_config.{key}' must be a list of module names, got {value!r}")
        out += value
    return tuple(dict.fromkeys(out))


def _kv_cache(q: Mapping[str, object], where: str) -> tuple[str | None, str, tuple[str, ...]]:
    """The KV dtype the checkpoint ships (``"fp8"``, ``"nvfp4"`` or None), the field that says so, and a note for
    one the planner has no dtype for."""
    kv = q.get("kv_cache_quant_algo")
    scheme = q.get("kv_cache_scheme")
    field = "kv_cache_quant_algo"
    if kv is None and isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8:
        kv, field = "FP8", "kv_cache_scheme"
    elif kv is None and isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 4:
        kv, field = "NVFP4", "kv_cache_scheme"  # vLLM's get_kv_cache_quant_algo_string reads it as nvfp4
    elif kv is None and isinstance(scheme, Mapping) and scheme.get("type") == "int" and scheme.get("num_bits") == 8:
        kv, field = "INT8", "kv_cache_scheme"
    elif kv is None and isinstance(scheme, str):
        kv, field = scheme, "kv_cache_scheme"
    elif kv is None and scheme is not None:  # any other scheme: its KV bytes would be a guess, never silently 16-bit
        raise InvalidConfig(f"{where}: field 'quantization_config.kv_cache_scheme' must be an object with num_bits 8 "
                            f"or 4 and type float (or num_bits 8 and type int), or a name such as FP8, got {scheme!r}")
    if kv is None:
        return None, "", ()
    if not isinstance(kv, str) or kv.upper() not in _KV_ALGOS:
        raise InvalidConfig(f"{where}: field 'quantization_config.kv_cache_quant_algo' must be one of "
                            f"{', '.join(_KV_ALGOS)} or null, got {kv!r}")
    if kv.upper() in ("FP8", "NVFP4"):
        return kv.lower(), f"{field} {kv.upper()}", ()
    return None, "", (f"ModelOpt calibrated a {kv.upper()} KV cache ({field}), which the planner has no dtype for; "
                      "the plan sizes it by --kv-cache (default bf16)",)


def read_modelopt(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    """A ModelOpt ``quantization_config`` (``quant_method`` ``modelopt``) as a shipped quantization.

    >>> from anchorgpu.architectures import load_model
    >>> m = load_model("llama-3.1-8b")
    >>> s = read_modelopt({"quant_algo": "NVFP4", "group_size": 16, "ignore": ["lm_head"]}, m, "x")
    >>> s.name, s.fraction("q"), s.head_quantized
    ('nvfp4', 1.0, False)
    """
    algo = required_name(q, where, "quant_algo", examples="'NVFP4' or 'FP8'",
                         missing="a ModelOpt checkpoint names its algorithm there (plan with --weights to choose one)"
                         ).upper()
    if algo not in MODELOPT_ALGOS:
        raise InvalidConfig(f"{where}: ModelOpt quant_algo {algo!r} is not supported (supported: "
                            f"{', '.join(MODELOPT_ALGOS)}); its weight bytes would be a guess")
    storage = _storage(algo, q.get("group_size"), where)
    ignore = _patterns(q, where)
    # ModelOpt quantizes every nn.Linear it is not told to skip, the LM head included (vLLM: lm_head is
    # quantized unless excluded); "Linear" as the target reproduces that
    groups, head = membership(model, ignore, where=where, key="exclude_modules", targets=["Linear"])
    kv, kv_field, notes = _kv_cache(q, where)
    return ShippedQuantization(method="modelopt", storage=storage, groups=groups, head_quantized=head, ignore=ignore,
                               notes=notes, kv_cache=kv, kv_cache_field=kv_field)


def modelopt_quantization_config(doc: object, *, where: str) -> dict[str, object]:
    """An ``hf_quant_config.json`` document as the ``quantization_config`` it stands for.

    >>> modelopt_quantization_config({"quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}},
    ...                              where="hf_quant_config.json")["quant_method"]
    'modelopt'
    """
    if not isinstance(doc, Mapping) or not isinstance(doc.get("quantization"), Mapping):
        raise InvalidConfig(f"{where}: must be a JSON object with a 'quantization' object (ModelOpt's hf_quant_config)")
    inner = doc["quantization"]
    assert isinstance(inner, Mapping)
    return {**inner, "quant_method": "modelopt"}
