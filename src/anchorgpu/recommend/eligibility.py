"""Which catalog offerings can run a workload at all, and why a rejected offering and server count was rejected:
the reasons ``recommend`` gives beside its ranked results (``plan`` refuses the same workloads with one line)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from anchorgpu.catalog import Catalog, Offering
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware import get_gpu
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.engine_choice import engine_refusal, engine_weights_refusal
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.engine_startup import startup_refusal
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.inputs import Overheads, Workload
from anchorgpu.planner.validate import serving_engine_named
from anchorgpu.quotes import UnpricedOffering, price_quote
from anchorgpu.recommend.records import Rejection
from anchorgpu.units import Term, fmt_bytes, fmt_figure, fmt_given

__all__ = ["able_to_run", "engine_cap", "miss_reason"]


def _unable(gpu: GpuSpec, workload: Any, kv_caches: tuple[str, ...] = (), model: Any = None,
            weights: tuple[str, ...] = ()) -> str | None:
    """Why ``gpu`` cannot run the workload at all (``plan`` refuses it there too), or None: FP8 and FP4 training
    need the GPU's FP8/FP4 tensor cores and a framework that trains in that precision there, TensorRT-LLM runs on NVIDIA GPUs only, and an NVFP4 KV cache (every KV
    dtype listed) needs a GPU where the workload's engine runs it (``planner.validate.nvfp4_kv_refusal``)."""
    from anchorgpu.planner.validate import kv_cache_refusal

    if workload.task in ("train", "lora", "qlora"):  # plan's refusal (GpuSpec.training_refusal)
        return gpu.training_refusal(workload.train_precision)
    if workload.task != "inference":
        return None
    refusals = [kv_cache_refusal(k, gpu, workload.engine, model, workload.engine_source) for k in kv_caches]
    if refusals and all(refusals):
        return refusals[0]
    # every weight format swept, where the engine has no kernels for it on this GPU (plan refuses each the same way)
    moe = getattr(model, "moe", None) is not None  # NVFP4 experts load on no AMD GPU (engine_weights_refusal)
    formats = [engine_weights_refusal(workload.engine, f, get_format(f).native, gpu, workload.engine_source, moe=moe)
               for f in weights] if (workload.engine == "trtllm" and gpu.vendor == "NVIDIA") or (
                   moe and gpu.vendor == "AMD" and "nvfp4" in weights) else []
    if formats and all(formats):
        return formats[0]
    return (engine_refusal(workload.engine, (gpu,), workload.engine_source)
            or startup_refusal(workload.engine, gpu, workload.gpu_memory_utilization, Overheads()))


def able_to_run(offerings: tuple[Offering, ...], workload: Any, catalog: Catalog, term: Term,
                 now: datetime, kv_caches: tuple[str, ...] = (),
                 model: Any = None, weights: tuple[str, ...] = ()) -> tuple[tuple[Offering, ...], list[Rejection]]:
    """The offerings whose GPU can run the workload (with one of the KV-cache dtypes listed), and a rejection for
    each other one (:func:`_unable`). One line, exit 2, when no offering can."""
    able, rejected = [], []
    for offering in offerings:
        gpu = get_gpu(offering.gpu)
        reason = _unable(gpu, workload, kv_caches, model, weights)
        if reason is None:
            able.append(offering)
            continue
        try:
            total: Decimal | None = price_quote(catalog, offering.id, 1, term, None, now).total_usd
        except UnpricedOffering:
            total = None
        rejected.append(Rejection(offering=offering.id, servers=1, total_usd=total, reason=reason))
    if not able:
        if not rejected:  # nothing to consider at all (the API's filters matched no offering)
            raise InvalidWorkload(said("no offering in the catalog matches the filters given (gpu, region, "
                                       "provider, servers)"))
        if workload.task == "inference" and kv_caches and all(k == "nvfp4" for k in kv_caches):
            where = {"vllm": "a GPU where vLLM or SGLang runs it (vLLM: NVIDIA compute capability 8.0-12.1, not "
                              "for MLA; SGLang: Blackwell)",
                     "sglang": "a Blackwell GPU (SGLang runs it on SM100 or SM120 only)"}.get(
                workload.engine, "a GPU with NVFP4 hardware (TensorRT-LLM runs it on Blackwell GPUs only)")
            engine = serving_engine_named(workload.engine, workload.engine_source)
            raise InvalidWorkload(said("--kv-cache nvfp4 with {engine}: no offering considered has {where}",
                                       engine=engine, where=where))
        nvidia = any(get_gpu(o.gpu).vendor == "NVIDIA" for o in offerings)  # TensorRT-LLM refused for its own figures
        if workload.task == "inference" and (workload.engine != "trtllm" or nvidia):  # nothing would start or load
            raise InvalidWorkload(said("no offering considered can run it: on {offering}, {reason} (each of the "
                                       "{rejected} offerings is refused for its own figures)",
                                       offering=rejected[0].offering, reason=rejected[0].reason,
                                       rejected=len(rejected)))
        if workload.task == "inference":
            option = "--recipe" if workload.engine_source == "recipe" else "--engine"
            raise InvalidWorkload(said("{option} trtllm: no offering considered has an NVIDIA GPU (TensorRT-LLM "
                                       "runs on NVIDIA GPUs only)", option=option))
        upper = workload.train_precision.upper()
        if any("no training framework" in r.reason for r in rejected):
            raise InvalidWorkload(said("--train-precision {train_precision}: no offering considered has a GPU "
                                       "where a training framework runs {upper} training (gpus.toml "
                                       "training_stacks)", train_precision=workload.train_precision, upper=upper))
        raise InvalidWorkload(said("--train-precision {train_precision}: no offering considered has a GPU with "
                                   "{upper} tensor cores", train_precision=workload.train_precision, upper=upper))
    return tuple(able), rejected


def engine_cap(workload: Workload, gpu: GpuSpec) -> int:
    """The sequences one serving replica's engine runs at once on ``gpu`` (vLLM's max_num_seqs or TensorRT-LLM's
    max_batch_size, as plan sizes it)."""
    return engine_limits(workload, large_gpu=large_engine_defaults(gpu))[1]


def miss_reason(row: Mapping[str, Any], min_tokens_per_s_per_user: float | None, training: bool,
                 cap: int | None = None, *, batch_tokens: int | None = None, seq_tokens: int | None = None,
                 max_ttft_s: float | None = None) -> str:
    """Why an offering and server count is rejected, from its configuration closest to fitting (``cap``: the
    sequences a serving replica's engine runs at once; ``batch_tokens`` and ``seq_tokens``: a training sweep's stated
    global batch and sequence, named when no layout splits the batch; ``max_ttft_s``: serving's TTFT limit)."""
    if row["fits"] and cap is not None and row["concurrency"] > row["dp"] * cap:
        queued = {"cap": cap, "dp": row["dp"], "queued": row["concurrency"] - row["dp"] * cap,
                  "concurrency": row["concurrency"]}
        if row["dp"] > 1:
            return said("its engines run at most {cap:,} sequences a replica at once (vLLM's max_num_seqs, SGLang's "
                        "max_running_requests, TensorRT-LLM's max_batch_size): {dp} replicas would queue {queued:,} of "
                        "the {concurrency:,} users", **queued)
        return said("its engines run at most {cap:,} sequences a replica at once (vLLM's max_num_seqs, SGLang's "
                    "max_running_requests, TensorRT-LLM's max_batch_size): {dp} replica would queue {queued:,} of the "
                    "{concurrency:,} users", **queued)
    if training and not row.get("splits_batch", True):
        round_tokens = row['dp'] * row['concurrency'] * seq_tokens if seq_tokens else None
        need = f" = {round_tokens:,} tokens" if round_tokens else ""
        # a batch of at least one micro-batch per rank that is not a whole number of them (planner.global_batch)
        what = ("does not split into whole micro-batches per data-parallel rank for any" if round_tokens
                and (batch_tokens or 0) >= round_tokens else "smaller than one micro-batch per data-parallel rank of every")
        return (f"--global-batch {batch_tokens or 0:,}: {what} "
                f"layout tried (the fewest ranks: TP {row['tp']}, PP {row['pp']}, DP {row['dp']} x micro-batch "
                f"{row['concurrency']}" + (f" x {seq_tokens:,} tokens" if seq_tokens else "") + need + ")")
    per_user = row.get("decode_tokens_per_s_per_user")
    if row["fits"] and max_ttft_s is not None and (min_tokens_per_s_per_user is None or (
            per_user is not None and per_user >= min_tokens_per_s_per_user)):
        ttft = row.get("prefill_s")
        if ttft is None:
            return said("no configuration gives a first token within {limit} s", limit=fmt_given(max_ttft_s))
        return said("no configuration gives a first token within {limit} s (best fit: {best} s)",
                    limit=fmt_given(max_ttft_s), best=fmt_figure(ttft, 2))
    if row["fits"] and min_tokens_per_s_per_user is not None:
        return (said("no configuration reaches {min_tokens_per_s_per_user} tokens/s per user (best fit: "
                     "{decode_tokens_per_s_per_user})",
                     min_tokens_per_s_per_user=fmt_given(min_tokens_per_s_per_user),
                     decode_tokens_per_s_per_user=fmt_figure(row['decode_tokens_per_s_per_user'], 1)))
    cp = said("CP {cp}, ", cp=row["cp"]) if row.get("cp", 1) > 1 else ""
    reserve = row.get("engine_reserve_bytes")  # SGLang's memory outside mem_fraction_static (None elsewhere)
    if not training and reserve is not None and row["activations_bytes"] > reserve:
        # plan refuses it (planner.engine_startup.sglang_reserve_refusal): the pool is allocated at start-up, so the
        # first full prefill chunk would run out of memory
        return (said("the closest configuration (TP {tp}, PP {pp}, {cp}DP {dp}, {weights} weights): SGLang's KV "
                     "pool would leave {reserve} outside mem_fraction_static for the {activations_bytes} prefill "
                     "peak of a full chunk, and that chunk would run out of memory: lower "
                     "--gpu-memory-utilization or --max-num-batched-tokens", tp=row['tp'], pp=row['pp'], cp=cp,
                     dp=row['dp'], weights=row['weights'], reserve=fmt_bytes(reserve),
                     activations_bytes=fmt_bytes(row['activations_bytes'])))
    shape = {"tp": row["tp"], "pp": row["pp"], "cp": cp, "dp": row["dp"], "weights": row["weights"],
             "need": fmt_bytes(row["per_gpu_total_bytes"])}
    closest = (said("does not fit: the closest configuration (TP {tp}, PP {pp}, {cp}DP {dp}, {weights} weights) needs "
                    "{need} per GPU", **shape) if training else
               said("does not fit: the closest configuration (TP {tp}, PP {pp}, {cp}DP {dp}, {weights} weights, {kv} "
                    "KV) needs {need} per GPU", kv=row["kv_cache"], **shape))
    held = row.get("weights_bytes", 0) + row.get("activations_bytes", 0) + row.get("other_bytes", 0)
    if not training and row["budget_bytes"] <= held:
        # TensorRT-LLM's budget follows the weights (its KV cache a share of what they leave): where nothing is left
        # it is just what the engine holds, and "of X usable" would read as room; SGLang's stays at its share (the
        # activations, non-torch memory and mem_fraction_static of the free memory), below what weights overflowing it hold
        if row["budget_bytes"] < held:
            return said("{closest}: its weights, activations and non-torch memory alone take {held} of {budget} "
                        "usable, no room for the KV cache", closest=closest, held=fmt_bytes(held),
                        budget=fmt_bytes(row["budget_bytes"]))
        return said("{closest}: its weights, activations and non-torch memory alone take {held}, no room for the KV "
                    "cache", closest=closest, held=fmt_bytes(held))
    return said("{closest} of {budget_bytes} usable", closest=closest, budget_bytes=fmt_bytes(row['budget_bytes']))
