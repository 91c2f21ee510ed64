"""AMD Quark checkpoints (``quant_method`` ``quark``, its Hugging Face export). Pure; stdlib only.

Split from :mod:`anchorgpu.architectures.quantization`. Quark writes ``config.json``'s ``quantization_config`` as
``{"quant_method": "quark", "global_quant_config": {"weight": {...}, "input_tensors": {...}}, "layer_quant_config":
{}, "layer_type_quant_config": {}, "exclude": [...], "export": {...}}`` (``quark/torch/quantization/config/config.py``
``Config.to_dict``). Every ``nn.Linear`` not named by an ``exclude`` wildcard is quantized as ``global_quant_config``
says, the LM head included unless excluded. Weight storage read:

* ``dtype`` ``fp4`` (or ``fp4_e2m1``), ``qscheme`` ``per_group``, ``group_size`` 32 (``scale_format`` ``e8m0`` when
  given): OCP MXFP4, FP4 E2M1 values and an E8M0 scale per 32 inputs (``mxfp4``);
* ``dtype`` ``fp8_e4m3``, ``qscheme`` ``per_tensor`` (``fp8``) or ``per_channel`` (``fp8-channel``).

Per-layer overrides (``layer_quant_config``, ``layer_type_quant_config``), a list of weight specs (Quark's two-stage
``ProgressiveSpec``) and every other weight spec change the bytes in ways not read here and are refused in one line.
"""

from __future__ import annotations

from collections.abc import Mapping

from anchorgpu.architectures._quant_layers import membership
from anchorgpu.architectures._quant_storage import QuantStorage, ShippedQuantization, fixed_storage
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidConfig

__all__ = ["read_quark"]


def _weight_storage(weight: Mapping[str, object], where: str) -> QuantStorage:
    dtype = str(weight.get("dtype", "")).lower()
    scheme = str(weight.get("qscheme", "")).lower()
    if dtype in ("fp4", "fp4_e2m1") and scheme in ("per_group", ""):
        scale = weight.get("scale_format")
        if weight.get("group_size") != 32 or scale not in (None, "e8m0"):
            raise InvalidConfig(f"{where}: Quark fp4 weights must have group_size 32 and scale_format e8m0 (OCP "
                                f"MXFP4), got group_size {weight.get('group_size')!r}, scale_format {scale!r}")
        return fixed_storage("mxfp4")
    if dtype == "fp8_e4m3" and scheme in ("per_tensor", "per_channel"):
        return fixed_storage("fp8" if scheme == "per_tensor" else "fp8-channel")
    raise InvalidConfig(f"{where}: Quark weight dtype {dtype or None!r} with qscheme {scheme or None!r} is not "
                        "supported (fp4 per_group 32, fp8_e4m3 per_tensor or per_channel); its weight bytes would "
                        "be a guess")


def read_quark(q: Mapping[str, object], model: ModelSpec, where: str) -> ShippedQuantization:
    """A Quark ``quantization_config`` as a shipped quantization.

    >>> from anchorgpu.architectures import load_model
    >>> m = load_model("deepseek-r1", offline=True)
    >>> s = read_quark({"global_quant_config": {"weight": {"dtype": "fp4", "qscheme": "per_group",
    ...                 "group_size": 32}}, "exclude": ["*self_attn*", "*mlp.gate.*", "*lm_head"]}, m, "x")
    >>> s.name, s.fraction("o"), s.fraction("shared_up"), s.fraction("up"), s.fraction("expert_down"), s.head_quantized
    ('mxfp4', 0.0, 1.0, 1.0, 1.0, False)
    """
    for key in ("layer_quant_config", "layer_type_quant_config"):
        if q.get(key):
            raise InvalidConfig(f"{where}: Quark field 'quantization_config.{key}' (per-layer overrides) is not "
                                "supported; its weight bytes would be a guess")
    glob = q.get("global_quant_config")
    if not isinstance(glob, Mapping):
        raise InvalidConfig(f"{where}: Quark field 'quantization_config.global_quant_config' must be an object "
                            f"holding the weight spec, got {glob!r}")
    weight = glob.get("weight")
    if not isinstance(weight, Mapping):
        raise InvalidConfig(f"{where}: Quark field 'quantization_config.global_quant_config.weight' must be one "
                            f"weight spec (an object), got {weight!r}")
    storage = _weight_storage(weight, where)
    exclude = q.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
        raise InvalidConfig(f"{where}: field 'quantization_config.exclude' must be a list of module names, got "
                            f"{exclude!r}")
    # Quark quantizes every nn.Linear it is not told to skip, the LM head included: "Linear" as the target
    groups, head = membership(model, exclude, where=where, key="exclude", targets=["Linear"])
    return ShippedQuantization(method="quark", storage=storage, groups=groups, head_quantized=head,
                               ignore=tuple(exclude))
