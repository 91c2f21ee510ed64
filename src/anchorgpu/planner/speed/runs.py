"""Measured runs restated in the planner's terms, and the model's prediction for each. Pure.

``data/measured_runs.json`` holds one row per published figure (``../shared/reference/perf_measured.md``
and ``published_figures.md``): its layout, precision, sequence or request lengths, the metric and value,
the source, and what was assumed where the source is silent. ``role`` says whether the calibration fits
on the row (``fit``) or only reports how well it is predicted (``holdout``). A serving row may state the
engine's ``max_num_seqs`` and ``max_num_batched_tokens`` where they differ from the planner's defaults (vLLM
keeps its small ones on an A100 of any size), and ``kv_free_fraction`` where the engine sizes its KV cache as
TensorRT-LLM does, from the memory its profiling pass leaves free: planned with ``Workload.engine="trtllm"`` and
that fraction, as a user planning for TensorRT-LLM is. ``engine`` names the serving engine a row ran on where its
source says so (``rows_report.engine_of`` reads it, for evidence per engine, and for the kernels whose cost its steps
take: TensorRT-LLM's MoE per-row cost, ``engine_terms.trtllm_moe_s_per_token``); a row of ``engine: "sglang"`` is
planned as a user planning for SGLang is (``Workload.engine="sglang"``: its own ``mem_fraction_static``, KV pool,
admission, decode graphs and, on ROCm, the absorbed weights' dequantisation), its ``gpu_memory_utilization`` (vLLM's
setting) not read.
A static batch of ``batch`` equal requests prefilled together and then decoded together (TensorRT-LLM's 2023
``gptSessionBenchmark``) is timed as that batch: ``request_latency_s`` from the first prompt token to the last output,
``static_batch_output_tokens_per_s`` the batch's output tokens over that time.
A training row with ``kind: "lora"`` trained low-rank adapters on a frozen model (timed as ``--task lora`` is);
``grad_bytes_per_value: 4`` marks one whose gradients were reduced in FP32 (FSDP's ``reduce_dtype``), twice the bytes.
``fsdp1: true`` marks a PyTorch-native run on PyTorch's first FSDP (Composer): its parameters are views of the gathered
flat parameter, so FSDP2's copies out of the gather buffer and into the scatter buffer are not timed.
``cross_entropy`` names the loss's implementation where the run's recipe sets one other than its stack's default
(``te``: Megatron-Bridge's recipes and performance scripts from r0.1.0, Transformer Engine's fused kernel).
A trtllm-bench row states ``bench_requests`` (the perf-overview page's ``$num_requests`` for its shape) and is timed
over that run's makespan (:mod:`~anchorgpu.planner.speed.bench_makespan`) at any ``pp``, unless restated from
attention DP (those keep their steady state); its decode graphs are the ones the engine trtllm-bench sized keeps
(:func:`~anchorgpu.planner.speed.row_engines.trtllm_bench_graph_sizes`).
A benchmark that sent ``burst_requests`` equal requests at once is timed as that burst
(``burst_output_tokens_per_s``: :func:`~anchorgpu.planner.speed.burst.burst_makespan_s`), after the start delay its
page's own latencies show where it states them (``front_end``: :mod:`~anchorgpu.planner.speed.front_end`). A burst
of ``dataset: "sharegpt"`` (``vllm bench serve --dataset-name sharegpt``) is timed step by step over the request
lengths that benchmark draws (``length_draw``: :func:`~anchorgpu.planner.speed.burst_mix.sharegpt_pairs`), not at its
mean lengths: its makespan is its longest answers'. ``host_overlap: false``
marks an engine whose host work ran between GPU steps rather than beside them (vLLM 0.11, whose async scheduling was
opt-in: vllm-project/vllm PR #19970). ``absorbed_dequant: true`` marks an engine that kept an MLA model's absorbed
latent weights in FP8 and dequantised them every step (SGLang on ROCm: ``launches.absorbed_dequant_bytes``).
``attention_dp_weights: true`` marks a TensorRT-LLM row that ran attention data parallelism over its TP GPUs (the
perf-overview page's MoE command) but is timed as TP of every layer: its KV cache gets the memory left once each GPU
holds what attention DP keeps whole (``row_engines.attention_dp_extra_weights_bytes``), and is sized as attention DP keeps it
(``Workload.attention_dp_kv``): each rank holds its own sequences' caches with every KV head, so a model with fewer KV
heads than the TP size has none replicated, and a GPU holds and each decode step reads 1/TP of the group's cache.
``moe_backend`` names the MoE kernel a TensorRT-LLM row's ``moe_config.backend`` stated (``"TRTLLM"``: TRTLLM-gen;
``"CUTLASS"``); a row without one takes the engine's AUTO choice (:mod:`~anchorgpu.planner.speed.moe_backend`).
``attention_dp_balance: true`` marks a TensorRT-LLM attention-DP row whose ``attention_dp_config`` set
``enable_balance`` (``Workload.attention_dp_balance``): the ranks' prompts are held until every rank has one.
A row's ``model`` is a registry name (``{"registry": ...}``), a config (``{"config": {...}}``), or a registry
architecture with the ModelOpt ``hf_quant_config.json`` of the checkpoint that ran (``{"registry": ...,
"hf_quant_config": FILE}``, FILE under ``architectures/data/quant_configs/``): its ``weights`` then name that file's
algorithm (``nvfp4``), which plans the checkpoint's own layout, its excluded layers 16-bit in bytes and products
(:func:`~anchorgpu.planner.formats.format_for_model`), not the format everywhere.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.pipeline_layout import PipelineLayout, parse_pipeline_layout
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.row_engines import (
    attention_dp_extra_weights_bytes,
    row_engine,
    trtllm_bench_engine,
    trtllm_bench_graph_sizes,
)
from anchorgpu.units import gbit_per_s_to_bytes_per_s

if TYPE_CHECKING:
    from anchorgpu.planner.inputs import TrainPrecision
    from anchorgpu.planner.speed.serving_plan import KvReservation

__all__ = ["Run", "load_runs", "predict", "training_plan_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    id: str
    role: str  # "fit" | "holdout"
    phase: str  # "train" | "serve"
    metric: str
    value: float
    source: str
    note: str
    row: dict[str, Any]

    @property
    def higher_is_better(self) -> bool:
        return self.metric.endswith("_per_s") or not self.metric.endswith("_s")


@lru_cache(maxsize=1)
def load_runs() -> tuple[Run, ...]:
    text = resources.files("anchorgpu.planner.speed").joinpath("data", "measured_runs.json").read_text("utf-8")
    doc = json.loads(text)
    return tuple(Run(id=r["id"], role=r["role"], phase=r["phase"], metric=r["metric"], value=float(r["value"]),
                     source=r["source"], note=r.get("note", ""), row=r) for r in doc["rows"])


def _model(row: dict[str, Any]) -> ModelSpec:
    return _model_of(row["id"])


@lru_cache(maxsize=512)
def _model_of(run_id: str) -> ModelSpec:
    """A row's model, read once (the fit predicts every row thousands of times)."""
    from anchorgpu.architectures import load_model
    from anchorgpu.architectures.hf import from_hf_config
    from anchorgpu.architectures.loader import load_with_hf_quant_config

    row = next(run.row for run in load_runs() if run.id == run_id)
    ref = row["model"]
    spec: object
    if "hf_quant_config" in ref:  # the checkpoint that ran: the registry architecture, ModelOpt's file its layout
        spec = load_with_hf_quant_config(ref["registry"], ref["hf_quant_config"])
    elif "registry" in ref:
        spec = load_model(ref["registry"], offline=True)
    else:
        spec = from_hf_config(ref["config"], name=row["id"], source=row["source"])
    assert isinstance(spec, ModelSpec)
    return spec


def _as_measured(gpu: Any, row: dict[str, Any]) -> Any:
    """The GPU as the source describes it, where that differs from the catalog's part: a stated memory
    bandwidth (torchtitan's H100s are the 96 GB HBM2e variant, 2.4 TB/s, not the SXM part's 3.35)."""
    if row.get("memory_bandwidth_tb_per_s"):
        return replace(gpu, memory_bandwidth_bytes_per_s=float(row["memory_bandwidth_tb_per_s"]) * 1e12)
    return gpu


def _train(run: Run, cal: Calibration) -> float:
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.links import power_capped
    from anchorgpu.planner.speed.train_layout import TrainLayout
    from anchorgpu.planner.speed.training import training_step

    r = run.row
    model, gpu = _model(r), get_gpu(r["gpu"])
    if r.get("power_limit_w"):  # the source says the GPUs ran below their rated power
        gpu = power_capped(gpu, r["power_limit_w"])
    gpu = _as_measured(gpu, r)
    split = r["tp"] * r["pp"] * r["cp"]
    lay = TrainLayout(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"] // split, ep=r.get("ep", 1),
                      zero=r["zero"], virtual_stages=r["virtual_stages"], tp_overlap=r["tp_overlap"],
                      ep_overlap=r.get("ep_overlap", False), pipeline_layout=_pipeline_layout_of(r, model))
    st = training_step(model, gpu, lay, seq_tokens=r["seq_tokens"], micro_batch=r["micro_batch"],
                       global_batch_tokens=r["global_batch_tokens"], recompute=r["recompute"],
                       precision=r["precision"], network_bytes_per_s=gbit_per_s_to_bytes_per_s(r["network_gbit_per_s_per_gpu"]),
                       cal=cal, attention_kernel=r.get("attention_kernel", "flash"), kind=r.get("kind", "full"),
                       grad_bytes_per_value=int(r.get("grad_bytes_per_value", 2)),
                       train_stack=r.get("train_stack", "megatron"),
                       offload_activation_layers=int(r.get("offload_activation_layers", 0)),
                       optimizer_state=r.get("optimizer_state", "fp32"), fsdp1=bool(r.get("fsdp1", False)),
                       moe_dispatcher=r.get("moe_dispatcher", "alltoall"))
    metric = run.metric
    if metric == "tokens_per_s_per_gpu":
        return st.tokens_per_s / lay.gpus
    if metric == "hw_tflops_per_gpu":  # Megatron-LM 2021 counts the recomputed forward pass
        return st.tokens_per_s * st.hardware_flops_per_token / lay.gpus / 1e12
    if metric == "model_tflops_per_gpu":
        return st.tflops_per_gpu
    if metric == "step_s":
        return st.step_s
    raise ValueError(f"{run.id}: unknown metric {metric}")


def _pipeline_layout_of(r: dict[str, Any], model: ModelSpec) -> PipelineLayout | None:
    """A row's explicit pipeline layout (``pipeline_layout``, Megatron-Core's syntax) parsed for its PP and virtual
    stages, or None where the row states none (its layers split as evenly as whole layers allow)."""
    text = r.get("pipeline_layout")
    if text is None:
        return None
    return parse_pipeline_layout(text, pp=r["pp"], virtual_stages=r["virtual_stages"], num_layers=model.num_layers,
                                 model_name=model.name)


TRAIN_PRECISION_OF: dict[str, TrainPrecision] = {"bf16": "mixed", "fp8": "fp8", "fp4": "fp4"}
"""A training row's compute precision as ``--train-precision`` names it (BF16 products are mixed precision)."""


def training_plan_of(r: dict[str, Any]) -> Any:
    """The plan of a training row ``r`` with its published layout, as ``anchorgpu plan`` gives it with the row's
    flags (its memory: whether the run fits; the speed is :func:`predict`'s)."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, Workload, plan

    split = r["tp"] * r["pp"] * r["cp"]
    w = Workload(task={"full": "train"}.get(r.get("kind", "full"), r.get("kind", "full")), seq_tokens=r["seq_tokens"],
                 micro_batch=r["micro_batch"], recompute=r["recompute"], global_batch_tokens=r["global_batch_tokens"],
                 train_precision=TRAIN_PRECISION_OF[r["precision"]], grad_bytes_per_value=int(r.get("grad_bytes_per_value", 2)),
                 allow_long_context=True, train_stack=r.get("train_stack", "megatron"),
                 offload_activation_layers=int(r.get("offload_activation_layers", 0)),
                 cross_entropy=r.get("cross_entropy"), optimizer_state=r.get("optimizer_state", "fp32"))
    ep = int(r.get("ep", 1))
    return plan(_model(r), w, gpu=_as_measured(get_gpu(r["gpu"]), r), suggest=False, choose_layout=False,
                layout=Layout(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"] // split,
                              ep=ep if ep > 1 else None, zero=r["zero"], virtual_stages=r["virtual_stages"],
                              pipeline_layout=r.get("pipeline_layout")))


@lru_cache(maxsize=512)
def _serve_plan(run_id: str) -> Any:
    """A serving row's plan: its memory and layout, which no speed constant changes (planned once per row)."""
    return serve_plan_of(next(run.row for run in load_runs() if run.id == run_id))


def serve_plan_of(r: dict[str, Any]) -> Any:
    """The plan of a serving row ``r`` (:func:`_serve_plan`'s, uncached): a restated row (another layout, say)
    is planned the same way."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
    from anchorgpu.planner.serving_engine import engine_rope_table_bytes

    model, gpu = _model(r), _as_measured(get_gpu(r["gpu"]), r)
    max_seqs, max_tokens = r.get("max_num_seqs"), r.get("max_num_batched_tokens")
    pp = int(r.get("pp", 1))
    if r.get("engine_limits") == "trtllm-bench":  # the benchmark sized its engine itself: a batch per micro-batch
        max_seqs, max_tokens = trtllm_bench_engine(model, gpu.memory_bytes, r)
    trtllm = "kv_free_fraction" in r  # TensorRT-LLM's KV sizing: a fraction of the memory its profiling leaves free
    sglang = r.get("engine") == "sglang"  # SGLang's own sizing: its derived mem_fraction_static unless the row gives one
    utilization = (float(r["kv_free_fraction"]) if trtllm else r.get("mem_fraction_static") if sglang
                   else r["gpu_memory_utilization"])
    held = 0  # bytes a GPU holds that vLLM's rule, which a TensorRT-LLM run without kv_free_fraction is sized by,
    # does not count: its RoPE table is float32 where vLLM's footprint counts a 16-bit one (engine_rope_table_bytes)
    if not trtllm and not sglang and row_engine(r) == "trtllm":
        held = engine_rope_table_bytes(model, "trtllm") - engine_rope_table_bytes(model, "vllm")
    if r.get("attention_dp_weights"):  # timed as TP, but each GPU held what attention DP keeps whole
        if sglang:
            raise ValueError(f"{r['id']}: attention_dp_weights is read under vLLM's or TensorRT-LLM's sizing only")
        extra = attention_dp_extra_weights_bytes(model, r["weights"], tp=r["tp"], pp=pp, ep=int(r.get("ep", 1)))
        if trtllm:  # a share of the memory free after the weights: the GPU as the KV sizing sees it
            gpu = replace(gpu, memory_bytes=gpu.memory_bytes - extra)
        else:  # a share of the whole memory holds the weights: that share less the extra weights
            held += extra
    if held:  # a share of the whole memory holds them
        utilization = float(r["gpu_memory_utilization"]) - held / gpu.memory_bytes
    w = Workload(prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"], concurrency=int(r.get("concurrency", 1)),
                 gpu_memory_utilization=utilization, max_num_seqs=max_seqs, max_num_batched_tokens=max_tokens,
                 engine="trtllm" if trtllm else "sglang" if sglang else "vllm",
                 images_per_request=int(r.get("images_per_request", 0)),
                 attention_dp_kv=bool(r.get("attention_dp_weights", False)), moe_backend=r.get("moe_backend"),
                 attention_dp_balance=bool(r.get("attention_dp_balance", False)))
    ep = int(r.get("ep", 1))
    if r.get("attention_dp_weights") and "ep" not in r:  # attention DP's MoE splits the experts by EP over the TP
        ep = int(r["tp"])  # GPUs (whole experts a GPU, not TP slices): timed as EP inside TP (Stop 57)
    return plan(model, w, precision=PrecisionPlan(weights=r["weights"], kv_cache=r["kv_cache"]),
                layout=Layout(gpus=r["gpus"], tp=r["tp"], pp=pp, dp=r["gpus"] // (r["tp"] * pp), ep=ep),
                gpu=gpu, suggest=False, choose_layout=False)


def _reservation(r: dict[str, Any]) -> KvReservation:
    """The admission a serving row is planned with: the one it states, else SGLang's own for a run on SGLang
    (``serving_plan.ENGINE_RESERVATION``), else vLLM's ``average`` (a TensorRT-LLM row states ``full``)."""
    return cast("KvReservation", r.get("kv_reservation", "ratio" if r.get("engine") == "sglang" else "average"))


def _graph_sizes(r: dict[str, Any], p: Any) -> tuple[int, ...]:
    """The decode graphs a serving row's engine padded its batch to: its ``graph_batch_sizes``, as an engine
    trtllm-bench sized kept them (:func:`~anchorgpu.planner.speed.row_engines.trtllm_bench_graph_sizes`)."""
    sizes = tuple(int(x) for x in r.get("graph_batch_sizes", ()))
    if not sizes or r.get("engine_limits") != "trtllm-bench":
        return sizes
    from anchorgpu.hardware import get_gpu

    return trtllm_bench_graph_sizes(p.model, _as_measured(get_gpu(r["gpu"]), r).memory_bytes, r, sizes)


def _serve(run: Run, cal: Calibration) -> float:
    from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
    from anchorgpu.planner.speed.rows_report import engine_of
    from anchorgpu.planner.speed.serving import decode_step

    r = run.row
    p = _serve_plan(run.id)
    model, gpu = p.model, p.gpu
    overlap = bool(r.get("host_overlap", True))  # False: an engine scheduling between GPU steps (vLLM 0.11)
    dequant = bool(r.get("absorbed_dequant", False))  # True: MLA's absorbed weights dequantised every step (SGLang ROCm)
    engine = engine_of(run)  # the engine whose kernels ran (its MoE cost), which the row's plan may not name
    if run.metric == "max_output_tokens_per_s":
        # trtllm-bench's makespan (bench_makespan.times_row: a row restated from attention DP as TP keeps its
        # steady state: its ranks' own schedules, each rank's batch and token budget, are not what it is timed as;
        # that steady state runs at most the run's requests, bench_steady_output_tokens_per_s)
        from anchorgpu.planner.speed import bench_makespan as bench

        if "bench_requests" in r:
            from anchorgpu.planner.speed.serving_plan import serving_saturation

            # an attention-DP group admits tp x a rank's limits (bench_makespan.attention_dp_group_plan)
            timing = p if bench.times_row(r) else bench.attention_dp_group_plan(p)
            setup, _, sat = serving_saturation(timing, r["prompt_tokens"], r["output_tokens"], cal, _reservation(r),
                                               _graph_sizes(r, p), overlap, None, dequant, engine)
            timed = bench.staged_bench_output_tokens_per_s if bench.times_row(r) else bench.bench_steady_output_tokens_per_s
            rate = timed(p, setup, sat, cal, requests=int(r["bench_requests"]), prompt_tokens=r["prompt_tokens"],
                         output_tokens=r["output_tokens"]) if setup.replicas == 1 else None
            if rate is not None:
                return rate
        value = plan_performance(p, cal=cal, kv_reservation=_reservation(r),
                                 graph_batch_sizes=_graph_sizes(r, p),
                                 host_overlap=overlap, absorbed_dequant=dequant, engine=engine).get("max_output_tokens_per_s")
        return float(value) if value else float("nan")
    if run.metric == "burst_output_tokens_per_s":  # every request sent at once: output tokens over the makespan
        from anchorgpu.planner.speed.burst import burst_makespan_s
        from anchorgpu.planner.speed.front_end import front_end_delay_s
        from anchorgpu.planner.speed.serving_capacity import engine_limits_of

        reservation = _reservation(r)
        sat = plan_performance(p, cal=cal, kv_reservation=reservation)["saturation_concurrency"]
        setup = serving_setup(p, prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"],
                              host_overlap=overlap, absorbed_dequant=dequant, engine=engine)
        n = int(r["burst_requests"])
        # vLLM admits a request when its prompt fits, up to its sequence cap, and preempts when the cache runs out:
        # what the cache holds, in tokens at the average length the plan sizes it by; TensorRT-LLM reserves a
        # request's whole length, so its waves are what the cache holds at full length
        kv_tokens = None
        if reservation == "average":
            held = (float(p.breakdown["kv_cache_capacity_bytes"]) / setup.kv_bytes_per_sequence_per_gpu
                    * (r["prompt_tokens"] + r["output_tokens"] // 2))
            if held >= r["prompt_tokens"] + r["output_tokens"]:  # else not one request at full length: as sized
                kv_tokens, sat = held, setup.replicas * engine_limits_of(p)[1]
        if r.get("dataset") == "sharegpt":  # the requests' own lengths, as vllm bench serve drew them (burst_mix.py)
            from anchorgpu.planner.speed.burst_mix import mixed_burst_makespan_s, sharegpt_pairs
            from anchorgpu.planner.speed.serving_capacity import kv_bytes_per_gpu

            reserve_tokens = None
            if reservation == "full":  # TensorRT-LLM reserves each request's prompt and max_tokens: the cache in
                # tokens, as the plan sizes it at the row's lengths; the sequence cap its own
                length = r["prompt_tokens"] + r["output_tokens"]
                reserve_tokens = float(p.breakdown["kv_cache_capacity_bytes"]) / kv_bytes_per_gpu(p, length) * length
                sat = setup.replicas * engine_limits_of(p)[1]
            makespan = mixed_burst_makespan_s(
                model, gpu, setup, pairs=sharegpt_pairs(r["length_draw"])[:n], concurrency=max(1, sat), cal=cal,
                kv_tokens=kv_tokens, reserve_tokens=reserve_tokens,
                kv_bytes_at=lambda tokens: float(kv_bytes_per_gpu(p, round(tokens))))
            return float(n * r["output_tokens"]) / (front_end_delay_s(r) + makespan)
        # the front end's start delay the row's own page shows (front_end.py), before the engine's planned burst
        return float(n * r["output_tokens"]) / (front_end_delay_s(r) + burst_makespan_s(
            model, gpu, setup, requests=n, concurrency=max(1, sat), prompt_tokens=r["prompt_tokens"],
            output_tokens=r["output_tokens"], cal=cal, kv_tokens=kv_tokens))
    if run.metric == "tpot_s":  # a benchmark holding the row's concurrency of requests in flight
        value = plan_performance(p, cal=cal, kv_reservation=_reservation(r),
                                 host_overlap=overlap, absorbed_dequant=dequant, engine=engine).get(run.metric)
        return float(value) if value else float("nan")
    setup = serving_setup(p, prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"], host_overlap=overlap,
                          absorbed_dequant=dequant, engine=engine)
    if run.metric == "decode_step_s":  # one sequence, no prompt sharing the step
        return decode_step(model, gpu, setup, batch=1, cached_tokens=r["prompt_tokens"], cal=cal).step_s
    if run.metric == "prefill_s":  # one prompt alone
        return decode_step(model, gpu, setup, batch=0, prefill_tokens=r["prompt_tokens"],
                           prompt_tokens=r["prompt_tokens"], cal=cal).step_s
    if run.metric in ("request_latency_s", "static_batch_output_tokens_per_s"):
        # a static batch of equal requests: first prompt token to last output, or its output tokens over that time
        batch, prompt, output = int(r["batch"]), r["prompt_tokens"], r["output_tokens"]
        budget = setup.max_num_batched_tokens
        prefill_steps = math.ceil(batch * prompt / budget)
        prefill = prefill_steps * decode_step(model, gpu, setup, batch=0, prefill_tokens=batch * prompt / prefill_steps,
                                              prompt_tokens=prompt, cal=cal).step_s
        step = decode_step(model, gpu, setup, batch=batch, cached_tokens=prompt + output // 2, cal=cal).step_s
        latency = float(prefill + output * step)
        return latency if run.metric == "request_latency_s" else batch * output / latency
    raise ValueError(f"{run.id}: unknown metric {run.metric}")


def predict(run: Run, cal: Calibration | None = None) -> float:
    """The model's figure for ``run``, in the row's own metric and unit."""
    cal = cal or calibration()
    return _train(run, cal) if run.phase == "train" else _serve(run, cal)
