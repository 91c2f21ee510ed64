"""Which precisions a recommendation sweeps: the plan's own unless lower ones are listed or allowed.

Recommendations answer the same question as ``anchorgpu plan`` priced over the catalog, so they keep its
precision (the checkpoint's shipped weights; a bf16 KV cache, or the FP8 one the checkpoint ships where the GPU has
FP8 hardware). A cheaper row that only fits because the
weights or the cache were squeezed would change the model's outputs; it is shown only when the user asks
for lower precisions, and then it says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.planner.sweep_types import DEFAULT_INFERENCE_WEIGHTS, SweepSpec

__all__ = ["LOWER_PRECISION_NOTE", "PrecisionChoice", "lowered", "precision_choice"]

LOWER_PRECISION_NOTE = ("below the checkpoint's precision: the model's outputs change, so rerun your evaluations "
                        "before serving it")
"""What a row with weights or KV cache below the plan's precision says (page, CLI, API)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionChoice:
    """The precisions a recommendation sweeps and the plan's own (the reference a row is compared with)."""

    weights: tuple[str, ...]  # empty: the sweep's default for a training task (what plan() picks)
    kv_caches: tuple[str, ...]
    reference_weights: str | None  # inference: the checkpoint's shipped format
    reference_bits: float | None
    assumption: str
    reference_kv: str = "bf16"  # the plan's KV dtype: the FP8 or NVFP4 one the checkpoint ships, else bf16
    # the checkpoint ships a quantized KV cache and no KV dtype was listed: each GPU keeps the plan's own
    # (planner.validate.default_kv_cache: the checkpoint's where the GPU has the hardware for it, else fp8 or bf16;
    # rows with another are not the plan's)
    kv_per_gpu: bool = False


def precision_choice(model: ModelSpec, spec: SweepSpec, *, lower_precision: bool = False) -> PrecisionChoice:
    """Which weight formats and KV-cache dtypes to sweep.

    Serving keeps the plan's precision, as ``anchorgpu plan`` would answer: the checkpoint's shipped format
    (its ``quantization_config``, else bf16) and its KV cache (the FP8 one it ships on GPUs with FP8 hardware and
    bf16 on the others, else bf16: both are swept and :attr:`PrecisionChoice.kv_per_gpu` says so). Lower precisions are swept only when the
    user lists them (``--weights``/``--kv-cache``) or allows them (``lower_precision``: the usual fp8 and
    int4-awq below the shipped format, and an fp8 KV cache). Training keeps the task's default (bf16;
    nf4-dq for QLoRA) unless formats are listed.

    >>> from anchorgpu.architectures import load_model
    >>> c = precision_choice(load_model("llama-3.1-8b"), SweepSpec())
    >>> c.weights, c.kv_caches
    (('bf16',), ('bf16',))
    >>> precision_choice(load_model("llama-3.1-8b"), SweepSpec(), lower_precision=True).weights
    ('bf16', 'fp8', 'int4-awq')
    """
    from anchorgpu.planner.formats import format_for_model, shipped_format
    from anchorgpu.planner.validate import shipped_kv_cache

    if spec.workload.task != "inference":
        return PrecisionChoice(weights=spec.weights, kv_caches=spec.kv_caches, reference_weights=None,
                               reference_bits=None, assumption=(
                                   said("Weights as the plan keeps them for this task: {weights} (as listed).",
                                        weights=", ".join(spec.weights)) if spec.weights else
                                   said("Weights as the plan keeps them for this task.")))
    shipped = shipped_format(model)
    bits = shipped.linear_bits
    lower = tuple(n for n in DEFAULT_INFERENCE_WEIGHTS if format_for_model(model, n).linear_bits < bits)
    weights = spec.weights or ((shipped.name, *lower) if lower_precision else (shipped.name,))
    shipped_kv = shipped_kv_cache(model)
    ref_kv = shipped_kv or "bf16"
    kv_per_gpu = shipped_kv is not None and not spec.kv_caches
    kvs = spec.kv_caches or (("nvfp4", "fp8", "bf16") if shipped_kv == "nvfp4"
                             else (shipped_kv, "bf16") if shipped_kv is not None
                             else ("bf16", "fp8") if lower_precision else ("bf16",))
    how = (said("the formats listed") if spec.weights or spec.kv_caches else
           said("lower precisions allowed") if lower_precision else
           said("no lower precision unless allowed (CLI --lower-precision or a --weights list, API lower_precision, "
                "the page's checkbox)"))
    nvfp4_where = (said("on the GPUs where vLLM or SGLang runs it: vLLM's FlashInfer backend on NVIDIA compute "
                        "capability 8.0-12.1, not for MLA") if spec.workload.engine == "vllm" else
                   said("on Blackwell GPUs (TensorRT-LLM)"))
    kv_text = (said("KV cache nvfp4 as the checkpoint ships it {where} (fp8 on the others, bf16 on those without FP8 "
                    "either)", where=nvfp4_where) if shipped_kv == "nvfp4" else
               said("KV cache {kv} as the checkpoint ships it (bf16 on GPUs without FP8 hardware)", kv=shipped_kv)
               if shipped_kv is not None else said("KV cache bf16"))
    below = (weights != (shipped.name,) or (not kv_per_gpu and kvs != (ref_kv,)))
    text = said("The plan's precision: weights {shipped} as the checkpoint ships them, {kv_text}; {how}. Swept: "
                "weights {weights}; KV cache {kvs}.{below}", shipped=shipped.name, kv_text=kv_text, how=how,
                weights=", ".join(weights), kvs=", ".join(kvs),
                below=said(" Rows below the checkpoint's precision say so: their outputs change, rerun your "
                           "evaluations.") if below else "")
    return PrecisionChoice(weights=weights, kv_caches=kvs, reference_weights=shipped.name, reference_bits=bits,
                           assumption=text, reference_kv=ref_kv, kv_per_gpu=kv_per_gpu)


def lowered(model: ModelSpec, choice: PrecisionChoice, row: dict[str, Any]) -> bool:
    """True when the row's weights have fewer bits than the plan's, or its KV cache fewer bytes a value (fp8 where
    the plan's is bf16, nvfp4 where it is fp8 or bf16)."""
    from anchorgpu.planner.formats import format_for_model
    from anchorgpu.planner.inputs import KV_CACHE_DTYPES

    if choice.reference_bits is None:
        return False
    kv = row.get("kv_cache")
    if kv in KV_CACHE_DTYPES and KV_CACHE_DTYPES[kv] < KV_CACHE_DTYPES[choice.reference_kv]:
        return True
    name = str(row["weights"])
    return name != choice.reference_weights and format_for_model(model, name).linear_bits < choice.reference_bits
