"""The vectorized sweep gives the same memory as ``plan()`` and the same speed as ``performance``.

Configurations are drawn at random (fixed seed, plus Hypothesis) from full-catalog sweeps and recomputed
one by one with the scalar planner.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.engine_choice import engine_weights_refusal
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.inputs import RECOMPUTES
from anchorgpu.planner.sglang import decode_graph_batch_sizes
from anchorgpu.planner.speed.batching import others_output_tokens, prompt_bound_output_tokens, serving_estimate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
from anchorgpu.planner.speed.flops import train_kind
from anchorgpu.planner.speed.pipeline import default_batch_tokens, pipeline_schedule
from anchorgpu.planner.speed.serving import decode_step
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepResult, SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from sweep_rows import plan_of_row

SHAPES = shapes_from_catalog(load_catalog().offerings, max_servers=3)


def _shapes(engine: str = "vllm", shapes: tuple = SHAPES) -> tuple:
    """The catalog's shapes an engine runs on: TensorRT-LLM on NVIDIA GPUs only (plan and the sweep refuse AMD)."""
    return shapes if engine != "trtllm" else tuple(s for s in shapes if s.gpu.vendor == "NVIDIA")


def _inference_sweep(model_name: str, **workload) -> tuple[SweepResult, object]:
    model = load_model(model_name)
    spec = SweepSpec(workload=Workload(task="inference", **workload), weights=("bf16", "fp8", "int4-awq", "nvfp4"))
    return sweep(model, _shapes(str(workload.get("engine", "vllm"))), spec), model


INFERENCE_CASES = {
    "llama-70b-8k-32": ("llama-3.1-70b", dict(context_tokens=8192, concurrency=32)),
    "llama-8b-ladder": ("llama-3.1-8b", dict(context_tokens=32768)),
    # no context: each concurrency sized as plan --concurrency N sizes it (one sequence at the model's window, more at
    # the request timed); a mixture of experts too, whose attention-DP layouts are planned whole
    "llama-8b-no-context-ladder": ("llama-3.1-8b", dict()),
    "qwen3-30b-moe-no-context-ladder": ("qwen3-30b-a3b", dict()),
    "mixtral-4k-ladder": ("mixtral-8x7b-v0.1", dict(context_tokens=4096)),
    "deepseek-v3-mla": ("deepseek-v3", dict(context_tokens=16384, concurrency=8)),
    # TensorRT-LLM's sizing: its KV cache a share of what the profiling pass leaves free, the budget per weight format
    "qwen3-32b-trtllm": ("qwen3-32b", dict(context_tokens=8192, concurrency=48, engine="trtllm")),
    # a mixture of experts on TensorRT-LLM: its MoE kernel's per-routed-row cost (speed.step_constants), per GPU family
    "qwen3-30b-moe-trtllm": ("qwen3-30b-a3b", dict(context_tokens=4096, concurrency=256, engine="trtllm")),
    # gpt-oss on TensorRT-LLM: its AUTO MoE backend, TRTLLM-gen on Blackwell for NVFP4 (the measured falloff), CUTLASS
    # elsewhere and for the formats TRTLLM-gen does not take (speed.moe_backend), per GPU and weight format
    "gpt-oss-moe-trtllm": ("gpt-oss-120b", dict(context_tokens=4096, concurrency=64, engine="trtllm")),
    # SGLang: its KV pool and budget, and its steps' terms (speed.serving_setup.sglang_step_terms): decode-only steps
    # padded to the CUDA graph that holds the batch (eager above cuda_graph_max_bs), over the batch ladder
    "qwen3-32b-sglang-ladder": ("qwen3-32b", dict(context_tokens=8192, engine="sglang")),
    "qwen3-30b-moe-sglang": ("qwen3-30b-a3b", dict(context_tokens=4096, concurrency=100, engine="sglang")),
    # and on AMD GPUs an FP8 MLA model's absorbed weights dequantised every step
    "deepseek-v3-mla-sglang": ("deepseek-v3", dict(context_tokens=16384, concurrency=8, engine="sglang")),
    # Llama 4 past its chunked layers' 8,192-token window (iRoPE: 3 of 4 layers attend within 8,192-token chunks), on
    # TensorRT-LLM (the chunked layers' decode read through MMHA on Hopper: speed.serving_plan) and with the default
    # image's tokens on top of the text context (media.sequence_tokens): P L4S-H200-20000/2000's length
    "llama-4-scout-trtllm-20k": ("llama-4-scout-17b-16e", dict(context_tokens=20480, concurrency=16,
                                                                engine="trtllm")),
    "llama-4-maverick-trtllm-32k": ("llama-4-maverick-17b-128e-fp8", dict(context_tokens=32768, concurrency=8,
                                                                          engine="trtllm")),
    # sliding windows past the window: gpt-oss's 128-token layers on vLLM, Gemma 3's 1,024-token ones on TensorRT-LLM
    "gpt-oss-window-vllm-32k": ("gpt-oss-120b", dict(context_tokens=32768, concurrency=32)),
    "gemma-3-window-trtllm-32k": ("gemma-3-27b", dict(context_tokens=32768, concurrency=16, engine="trtllm")),
    # MLA on TensorRT-LLM; hybrids whose recurrent layers hold a fixed state a sequence (Jamba's with experts)
    "deepseek-v3-mla-trtllm": ("deepseek-v3", dict(context_tokens=16384, concurrency=8, engine="trtllm")),
    "jamba-hybrid-moe-32k": ("jamba-1.5-mini", dict(context_tokens=32768, concurrency=16)),
    "nemotron-h-hybrid-trtllm": ("nemotron-nano-9b-v2", dict(context_tokens=32768, concurrency=32, engine="trtllm")),
}
RESULTS = {name: _inference_sweep(model, **kw) for name, (model, kw) in INFERENCE_CASES.items()}


def _given_context(result: SweepResult, concurrency: int, asked: int | None = None) -> int | None:
    """The context to plan a row with: the one given to the sweep (every concurrency sized alike), else None, so that
    plan sizes the sequences itself (as ``plan --concurrency N`` does with no length) and the row must match.
    ``asked``: the ``--context`` the sweep was given; None: the sweep's own context, which is the one asked for a text
    model only: a vision model's sequence holds the image tokens on top of the text context asked
    (media.sequence_tokens), and planning that total again put them on twice (Llama 4 Scout at 20,480 tokens: 20,627
    asked of plan, which sized 20,774; stop59_trtmoe.md's 27 MiB "mismatch", stop59_sweepscout.md)."""
    if len(set(dict(result.concurrency_contexts).values())) > 1:
        return None
    return result.context_at(concurrency) if asked is None else asked


def _engine_refuses(row: dict, gpu, engine: str, moe: bool = False) -> bool:  # type: ignore[type-arg]
    """Whether ``engine`` has no kernels for the row's weights on its GPU (TensorRT-LLM's FP8 below Ada, FP4 below
    Hopper; NVFP4 experts on AMD GPUs): the sweep's grid holds the row, recommend masks it and plan refuses it
    (stop56 qa16, stop57 qa19)."""
    return engine_weights_refusal(engine, row["weights"], get_format(row["weights"]).native, gpu,
                                  moe=moe) is not None


def _check_inference_row(result: SweepResult, model, i: int, engine: str = "vllm",
                         asked_context: int | None = None) -> None:
    """Row ``i`` of ``result`` against plan() of its layout; ``asked_context``: the sweep's ``--context`` (needed
    for a model that takes images: :func:`_given_context`)."""
    assert asked_context is not None or model.image is None or len(set(dict(result.concurrency_contexts).values())) > 1
    row = result.row(i)
    shape = next(s for s in result.shapes if s.id == row["shape"])
    if _engine_refuses(row, shape.gpu, engine, model.moe is not None):
        with pytest.raises(InvalidWorkload, match="TensorRT-LLM runs|through Petit"):
            plan(model, Workload(task="inference", concurrency=row["concurrency"], engine=engine),
                 precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                 layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"]), gpu=shape.gpu,
                 suggest=False, choose_layout=False)
        return
    if row["ep"] > row["tp"]:  # attention data parallelism: planned whole (tests/recommend/test_attention_dp_sweep.py)
        _check_attention_dp_row(result, model, row, shape, engine, i, asked_context)
        return
    p = plan(model, Workload(task="inference", context_tokens=_given_context(result, row["concurrency"], asked_context),
                             concurrency=row["concurrency"], engine=engine),
             precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
             layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"],
                           ep=row["ep"] if row["ep"] > 1 else None),  # EP inside TP: the experts whole over TP
             gpu=shape.gpu, suggest=False, choose_layout=False)
    assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
    assert row["weights_bytes"] == p.per_gpu.weights_bytes
    assert row["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes
    assert p.workload.context_tokens == result.context_at(row["concurrency"])
    assert row["budget_bytes"] == p.budget_bytes
    assert row["fits"] == p.fits
    # speed: the scalar serving model for the same configuration (steady state, then time to first token)
    per_replica = math.ceil(row["concurrency"] / row["dp"])
    prompt, output = result.prompt_tokens, result.output_tokens
    setup = replace(serving_setup(p, prompt_tokens=prompt, output_tokens=output),
                    gpus_per_server=shape.gpus_per_server)
    est = serving_estimate(model, shape.gpu, setup, prompt_tokens=prompt, output_tokens=output,
                           concurrency=row["concurrency"], saturation_concurrency=row["concurrency"])
    assert row["decode_tokens_per_s_per_user"] == pytest.approx(1 / est.tpot_s, rel=1e-6)
    # the total adds each replica's own rate (users split unevenly: the lighter replicas at their own pace)
    assert row["decode_tokens_per_s_total"] == pytest.approx(est.output_tokens_per_s, rel=1e-6)
    assert row["prefill_s"] == pytest.approx(est.ttft_s, rel=1e-6)
    # and the steady step is the scalar decode step where every step carries prompt tokens, spread over the
    # micro-batches (over pipeline stages, only once every micro-batch's share fills a chunk: fewer chunks than
    # micro-batches ride whole in some of them)
    # (a chunk at least one token, as speed.batching.prefill_chunk_share clamps it: the ladder past 512 reaches a
    # batch as large as the token budget)
    # (a user's step carries the other users' prompts only: speed.batching.others_output_tokens)
    # (past the token budget, T - B of them: speed.batching.prompt_bound_output_tokens)
    between = (prompt_bound_output_tokens(per_replica, prompt, output, setup.max_num_batched_tokens)
               or others_output_tokens(per_replica, output))
    share = per_replica * prompt / between / max(1, min(prompt, setup.max_num_batched_tokens - per_replica))
    if share >= 1 and (setup.pp == 1 or share >= min(setup.pp, per_replica)):
        step = decode_step(model, shape.gpu, setup, batch=per_replica, prefill_tokens=per_replica * prompt / between,
                           prompt_tokens=prompt, cached_tokens=prompt + output // 2)
        assert est.tpot_s == pytest.approx(step.step_s, rel=1e-9)


def _check_attention_dp_row(result: SweepResult, model, row: dict, shape, engine: str, i: int,  # type: ignore[type-arg]
                            asked_context: int | None = None) -> None:
    # one server's engine, on each of the row's servers (tests/recommend/test_attention_dp_servers.py)
    assert row["pp"] == 1 and row["ep"] * row["servers"] == row["gpus"] == row["tp"] * row["dp"] and row["ep"] > row["tp"]
    if row["per_gpu_total_bytes"] == math.inf:  # over a ladder, a concurrency of several servers sized otherwise;
        # or a layout's saturation at one precision, left out at the others (sweep_attention_dp._saturation_plan)
        rungs = len(result.concurrency_contexts)
        saturation_entry = bool(rungs) and i % (rungs + len(result.weights) * len(result.kv_caches)) >= rungs
        assert (row["servers"] > 1 or saturation_entry) and not row["fits"]
        return
    given = _given_context(result, row["concurrency"], asked_context)
    # the sweep's request is plan's own for a text model; a vision model's speed prompt holds the image and tower
    # tokens, which plan adds to a text prompt given (the speed below is timed at the sweep's request either way)
    text = result.encoder_prefill_equivalent_tokens == 0
    request = {} if given is None or not text else {"prompt_tokens": result.prompt_tokens,
                                                    "output_tokens": result.output_tokens}
    p = plan(model, Workload(task="inference", context_tokens=given, concurrency=row["concurrency"], engine=engine,
                             **request),
             precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
             layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=1, dp=row["dp"], ep=row["ep"]), gpu=shape.gpu,
             suggest=False, choose_layout=False)
    assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes and row["fits"] == p.fits
    assert row["weights_bytes"] == p.per_gpu.weights_bytes and row["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes
    if p.fits:
        perf = plan_performance(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens)
        assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-9)
        assert row["prefill_s"] == pytest.approx(perf["ttft_s"], rel=1e-9)
    else:  # no speed for a plan that does not fit (a row reads NaN as None)
        speed = row["decode_tokens_per_s_total"]
        assert speed is None or math.isnan(speed)


def _check_case_row(case: str, i: int) -> None:
    """Row ``i`` of an INFERENCE_CASES sweep against plan(), given the case's engine and context."""
    result, model = RESULTS[case]
    asked = INFERENCE_CASES[case][1]
    context = asked.get("context_tokens")
    _check_inference_row(result, model, i, str(asked.get("engine", "vllm")), None if context is None else int(context))


@pytest.mark.parametrize("case", list(INFERENCE_CASES))
def test_sampled_inference_configurations_match_the_scalar_planner_exactly(case: str) -> None:
    result, model = RESULTS[case]
    rng = random.Random(20261129)
    for i in rng.sample(range(result.evaluated), 25):
        _check_case_row(case, i)


@pytest.mark.parametrize("case", [name for name, (model, _) in INFERENCE_CASES.items()
                                  if load_model(model).moe is not None])
def test_rows_with_the_experts_whole_over_tp_match_the_scalar_planner(case: str) -> None:
    """A mixture of experts' layouts with EP inside TP (the routed experts whole over each TP group, as the serving
    chooser tries them: serving_layouts.ep_inside_tp_sizes), swept in numpy, are plan()'s with ``--ep`` = TP."""
    result, model = RESULTS[case]
    ep, tp = np.asarray(result.columns["ep"]), np.asarray(result.columns["tp"])
    inside = np.flatnonzero((ep > 1) & (ep == tp))
    assert inside.size
    for i in random.Random(20261206).sample(inside.tolist(), min(10, inside.size)):
        _check_case_row(case, i)


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(list(INFERENCE_CASES)), fraction=st.floats(0, 1, exclude_max=True))
def test_any_inference_configuration_matches_the_scalar_planner(case: str, fraction: float) -> None:
    result, model = RESULTS[case]
    _check_case_row(case, int(fraction * result.evaluated))


@pytest.mark.parametrize(("task", "model_name", "stack"), [
    ("train", "llama-3.1-8b", "megatron"), ("qlora", "llama-3.1-70b", "megatron"),
    ("qlora", "llama-3.1-70b", "pytorch"),  # QLoRA's own stack: pipeline stages one after another (device_map)
    ("lora", "mistral-7b-v0.1", "megatron")])
def test_sampled_training_configurations_match_the_scalar_planner(task: str, model_name: str, stack: str) -> None:
    model = load_model(model_name)
    workload = Workload(task=task, seq_tokens=2048, micro_batch=2, train_stack=stack)  # type: ignore[arg-type]
    result = sweep(model, SHAPES, SweepSpec(workload=workload, train_tokens=10**10))
    rng = random.Random(7)
    for i in rng.sample(range(result.evaluated), 15):
        row = result.row(i)
        shape = next(s for s in result.shapes if s.id == row["shape"])
        for rc in ("none", "selective", "full"):  # the sweep takes the least recompute that fits
            p = plan(model, replace(workload, recompute=rc), precision=PrecisionPlan(weights=row["weights"]),
                     gpu=shape.gpu, suggest=False, choose_layout=False,
                     layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], zero=row["zero"],
                                   virtual_stages=row["virtual_stages"]))
            if p.fits:
                break
        assert row["virtual_stages"] == p.layout.virtual_stages
        assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
        assert row["fits"] == p.fits
        lay = TrainLayout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], zero=row["zero"],
                          virtual_stages=row["virtual_stages"])
        step = training_step(model, shape.gpu, lay, seq_tokens=2048, micro_batch=2,
                             global_batch_tokens=max(default_batch_tokens(task, 2048), row["dp"] * 2 * 2048),
                             recompute=p.workload.recompute or "none", kind=train_kind(task),
                             gpus_per_server=shape.gpus_per_server, network_bytes_per_s=shape.network_bytes_per_s,
                             train_stack=stack, schedule=pipeline_schedule(task, stack))
        assert row["train_tokens_per_s"] == pytest.approx(step.tokens_per_s, rel=1e-9)
        # a run is whole optimizer steps (planner.run_steps): 10**10 tokens rounded up to whole global batches
        trained = math.ceil(10**10 / step.tokens_per_step) * step.tokens_per_step
        assert row["train_time_s"] == pytest.approx(trained / step.tokens_per_s, rel=1e-9)


def test_a_pipelined_training_row_is_what_plan_chooses_for_its_layout() -> None:
    """Llama 3.1 70B on 32 H100 (recommend's 4-server row, TP 2 / PP 4 / DP 4 / ZeRO-1): the sweep timed plain 1F1B,
    while ``plan`` given the same TP, PP, DP and ZeRO interleaves 10 chunks a GPU (the bubble a tenth). The sweep runs
    a pipelined layout interleaved as the chooser would, so the row is that plan's memory and speed, every figure.
    The row was ZeRO-2 (41,738 tok/s, no recompute) until Megatron's ZeRO-2 with pipeline stages was refused
    (Megatron-FSDP runs none: layout_checks.sharded_pipeline_refusal); ZeRO-1 keeps the gradients whole and fits
    this split only with full recompute, at micro-batch 4."""
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=4) if s.id == "h100-sxm-8x-bm")
    result = sweep(model, shapes, SweepSpec(workload=Workload(task="train")))
    rows = [result.row(i) for i in range(result.evaluated)]
    assert not any(r["zero"] >= 2 and r["pp"] > 1 for r in rows)  # Megatron-FSDP runs no pipeline stages
    row = next(r for r in rows if (r["gpus"], r["tp"], r["pp"], r["dp"], r["zero"]) == (32, 2, 4, 4, 1))
    assert row["virtual_stages"] == 10 and row["fits"]
    p = plan(model, Workload(task="train"), gpu=gpu, layout=Layout(gpus=32, tp=2, pp=4, dp=4, zero=1))
    assert (p.layout.virtual_stages, p.workload.micro_batch, p.workload.recompute) == (10, 4, "full")
    assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
    assert row["train_tokens_per_s"] == pytest.approx(plan_performance(p)["train_tokens_per_s"], rel=1e-9)
    assert round(row["train_tokens_per_s"]) == 31_298  # plan's figure after stop 63's refit (31,297 after stop 61's refit cd9b23fe, 31,321 at stop 60's refit 96bb4014, 31,322 at stop 56's, 31,320 at stop 55's, 31,319 at stop 54's)
    # every pipelined row that fits: interleaved where the stages divide, else plain 1F1B
    assert all(r["virtual_stages"] == 1 for r in rows if r["pp"] == 1)


def test_the_sweep_is_deterministic_and_counts_what_it_evaluated() -> None:
    model = load_model("llama-3.1-70b")
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=32))
    a, b = sweep(model, SHAPES, spec), sweep(model, SHAPES, spec)
    assert a.evaluated == b.evaluated == len(a.columns["fits"]) > 1000
    for name, values in a.columns.items():  # a column that does not apply holds NaN (training rates, SGLang's reserve)
        assert np.array_equal(values, b.columns[name], equal_nan=values.dtype.kind == "f"), name


def test_tensor_parallel_never_exceeds_one_server_and_pipeline_spans_servers_only_over_a_fabric() -> None:
    result, _ = RESULTS["llama-70b-8k-32"]
    c = result.columns
    per_server = [result.shapes[s].gpus_per_server for s in c["shape"]]
    scale_out = [result.shapes[s].scale_out for s in c["shape"]]
    for tp, pp, k, fabric, gpus, dp in zip(c["tp"], c["pp"], per_server, scale_out, c["gpus"], c["dp"], strict=True):
        assert tp <= k and tp * pp * dp == gpus
        assert fabric or tp * pp <= k


SMALL_SHAPES = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=2)
                     if s.id in ("h100-sxm-8x-bm", "l40s-1x-vm", "mi300x-8x-bm", "h100-nvl-8x-bm"))


@settings(max_examples=25, deadline=None)
@given(model_name=st.sampled_from(["llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b-v0.1", "gemma-2-9b"]),
       context=st.integers(64, 32768), concurrency=st.integers(1, 300),
       utilization=st.floats(0.5, 0.98), batched=st.sampled_from([None, 512, 2048, 16384]),
       block=st.sampled_from([1, 16, 128]), fraction=st.floats(0, 1, exclude_max=True),
       engine=st.sampled_from(["vllm", "trtllm"]))
def test_any_workload_option_gives_the_same_memory_in_the_sweep_and_in_plan(
    model_name, context, concurrency, utilization, batched, block, fraction, engine
) -> None:
    model = load_model(model_name)
    workload = Workload(task="inference", context_tokens=min(context, model.max_context_tokens),
                        concurrency=concurrency, gpu_memory_utilization=utilization,
                        max_num_batched_tokens=batched, block_size_tokens=block, engine=engine)
    result = sweep(model, _shapes(engine, SMALL_SHAPES), SweepSpec(workload=workload,
                                                                  weights=("bf16", "gguf-q4_k_m", "mxfp4")))
    _check_inference_row_with(result, model, int(fraction * result.evaluated), workload)


def _check_inference_row_with(result: SweepResult, model, i: int, workload: Workload) -> None:
    from dataclasses import replace

    row = result.row(i)
    shape = next(s for s in result.shapes if s.id == row["shape"])
    if _engine_refuses(row, shape.gpu, workload.engine):  # plan refuses it (_check_inference_row)
        return
    p = plan(model, replace(workload, concurrency=row["concurrency"]),
             precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
             layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"],
                           ep=row["ep"] if row["ep"] > 1 else None), gpu=shape.gpu, suggest=False, choose_layout=False)
    assert (row["per_gpu_total_bytes"], row["budget_bytes"], row["fits"]) == (p.per_gpu.total_bytes, p.budget_bytes,
                                                                              p.fits)


def test_pipeline_stage_rows_match_the_scalar_planner_exactly() -> None:
    """Rows with pipeline stages (micro-batches in flight, one per stage, and the hidden states sent on between
    stages) agree with the scalar serving model as the rest do."""
    result, model = RESULTS["llama-70b-8k-32"]
    staged = [i for i in range(result.evaluated) if result.row(i)["pp"] > 1]
    assert staged, "the sweep evaluated no pipeline layout"
    for i in random.Random(7).sample(staged, min(15, len(staged))):
        _check_inference_row(result, model, i)


def _h100_rows(model_name: str, servers: int, **workload: object) -> list[dict]:  # type: ignore[type-arg]
    """The training sweep's rows of ``servers`` 8-GPU H100 servers (the shape plan's speed assumes: 8 GPUs a server
    and the default fabric), the configurations that fit and run the batch."""
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=servers)
                   if s.id == "h100-sxm-8x-bm")
    result = sweep(load_model(model_name), shapes, SweepSpec(workload=Workload(task="train", **workload)))  # type: ignore[arg-type]
    rows = [result.row(i) for i in range(result.evaluated)]
    return [r for r in rows if r["gpus"] == 8 * servers and r["fits"] and r["splits_batch"]]


def _given_row(row: dict) -> Layout:  # type: ignore[type-arg]
    return Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], zero=row["zero"],
                  ep=row["ep"] if row["ep"] > 1 else None, cp=row["cp"])


def _assert_row_is_plans_choice(row: dict, model, gpu) -> None:  # type: ignore[no-untyped-def,type-arg]
    """``plan`` given the row's layout chooses the row's micro-batch, recompute and interleaving, and its memory and
    speed are the row's; so is ``plan`` given all of them. (The sweep tries a ZeRO stage with pipeline stages only
    where the chooser does: speed.layouts.sharded_with_stages.)"""
    fixed = plan(model, Workload(task="train", micro_batch=row["concurrency"], recompute=RECOMPUTES[row["recompute"]]),
                 gpu=gpu, suggest=False, choose_layout=False,
                 layout=replace(_given_row(row), virtual_stages=row["virtual_stages"] if row["virtual_stages"] > 1
                                else None))
    chosen = plan(model, Workload(task="train"), gpu=gpu, layout=_given_row(row))
    config = (chosen.workload.micro_batch, chosen.workload.recompute, chosen.layout.virtual_stages)
    assert config == (row["concurrency"], RECOMPUTES[row["recompute"]], row["virtual_stages"]), row
    for p in (fixed, chosen):
        assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
        assert row["train_tokens_per_s"] == pytest.approx(plan_performance(p)["train_tokens_per_s"], rel=1e-9)


def test_a_mixture_of_experts_row_runs_the_micro_batch_plan_chooses() -> None:
    """Qwen3-30B-A3B on 8 H100: ``plan`` chooses EP 8, ZeRO-1, micro-batch 4 with full recompute at 60,168 tok/s
    (stop 63's refit; 60,205 after stop 62's, 59,937 at stop 61's refit cd9b23fe, 59,499 at stop 60's refit 96bb4014, 59,511 at stop 56's, 59,513 at stop 54's, 59,578 at stop 53's, 61,705 at stop 52's), while the sweep, fixed at micro-batch 1, rated its best row (EP 8, least recompute that fits) at 36,635 - recommend
    40% below plan. A row now runs the fastest micro-batch that fits, as the chooser does: the row at plan's layout is
    plan's, figure for figure. After stop 61's merges the sweep's best row was the ZeRO-2 twin of that layout, 59,938
    tok/s (0.002% faster: less of the gradient sync exposed), which the chooser never meets ahead of its ZeRO-1
    (chooser_order.zero1_twins holds ZeRO-1 never slower on Megatron's stack); since zero2_sync_terms took the SM
    share too (stop 61) the best row is plan's ZeRO-1 itself (after stop 63's refit ZeRO-2 60,119, ZeRO-3 59,901).
    Either way it lies within the training layout margin of plan's figure."""
    model, gpu = load_model("qwen3-30b-a3b"), get_gpu("h100")
    rows = _h100_rows("qwen3-30b-a3b", 1)
    best = max(rows, key=lambda r: r["train_tokens_per_s"])
    p = plan(model, Workload(task="train"), gpu=gpu, layout=Layout(gpus=8))
    assert (p.layout.ep, p.layout.zero, p.workload.micro_batch, p.workload.recompute) == (8, 1, 4, "full")
    at_plan = next(r for r in rows if (r["tp"], r["pp"], r["dp"], r["ep"], r["zero"], r["cp"]) == (
        p.layout.tp, p.layout.pp, p.layout.dp, p.layout.ep, p.layout.zero, p.layout.cp))
    assert (at_plan["concurrency"], RECOMPUTES[at_plan["recompute"]]) == (4, "full")
    assert round(at_plan["train_tokens_per_s"]) == round(plan_performance(p)["train_tokens_per_s"]) == 60_168  # plan's figure after stop 63's refit (60,205 after stop 62's refit, 59,937 at stop 61's refit cd9b23fe, 59,499 at stop 60's refit 96bb4014, 59,511 at stop 56's, 59,513 at stop 54's, 59,578 at stop 53's, 61,705 at stop 52's, 60,756 at stop 51's)
    assert (best["ep"], best["concurrency"], RECOMPUTES[best["recompute"]]) == (8, 4, "full")
    margin = calibration().training_layout_margin
    assert at_plan["train_tokens_per_s"] <= best["train_tokens_per_s"] <= at_plan["train_tokens_per_s"] * (1 + margin)
    for row in rows:
        _assert_row_is_plans_choice(row, model, gpu)


def test_a_dense_row_on_64_gpus_runs_micro_batch_two_as_plan_does() -> None:
    """Llama 3.1 8B on 64 H100 (8 servers): ``plan`` chooses DP 64 ZeRO-1 at micro-batch 2, 761,198 tok/s (stop 63's refit;
    761,165 at stop 62's refit, 761,167 at stop 61's refit cd9b23fe; 761,707 at stop 60's refit 96bb4014, 761,684 at stop 55's, 761,646 at stop 52's calibration); the sweep rated the same layout at micro-batch 1,
    760,531 then (1% below). The row now runs micro-batch 2."""
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    rows = _h100_rows("llama-3.1-8b", 8)
    best = max(rows, key=lambda r: r["train_tokens_per_s"])
    p = plan(model, Workload(task="train"), gpu=gpu, layout=Layout(gpus=64))
    assert (p.layout.dp, p.layout.zero, p.workload.micro_batch) == (64, 1, 2)
    assert (best["dp"], best["zero"], best["concurrency"]) == (64, 1, 2)
    assert round(best["train_tokens_per_s"]) == round(plan_performance(p)["train_tokens_per_s"]) == 761_198  # plan's figure after stop 63's refit (761,165 after stop 62's refit, 761,167 at stop 61's cd9b23fe, 761,707 at stop 60's refit 96bb4014, 761,714 at stop 56's, 761,684 at stop 55's, 761,646 at stop 54's, 761,512 at stop 52's)
    _assert_row_is_plans_choice(best, model, gpu)


@pytest.mark.parametrize(("model_name", "servers"), [("llama-3.1-70b", 4), ("mixtral-8x7b-v0.1", 2),
                                                      ("llama-3.1-8b", 2)])
def test_sampled_training_rows_run_what_plan_chooses_for_their_layout(model_name: str, servers: int) -> None:
    """Every sampled row that fits: ``plan`` given its layout (TP, PP, DP, ZeRO, EP, CP) chooses its micro-batch,
    recompute level and interleaving, with the same memory and speed."""
    model, gpu = load_model(model_name), get_gpu("h100")
    rows = _h100_rows(model_name, servers)
    for row in random.Random(11).sample(rows, min(12, len(rows))):
        _assert_row_is_plans_choice(row, model, gpu)


def test_a_stated_micro_batch_stays_fixed() -> None:
    rows = _h100_rows("qwen3-30b-a3b", 1, micro_batch=2)
    assert rows and {r["concurrency"] for r in rows} == {2}


def test_sglang_rows_whose_decode_steps_run_a_larger_captured_graph_match_plan() -> None:
    """SGLang pads a decode-only step to the smallest CUDA graph it captured that holds the batch (1, 2, 4, 8, 12,
    then every 8 to 256...: ``sglang.decode_graph_batch_sizes``, read from its ``server_args.py``): the padding rows
    multiply the weights but read no KV cache. recommend's sweep left them out, so its TPOT differed from plan's on
    the same layout (Qwen3-32B: 59.39 vs 59.15 tok/s a user). Rows whose replica's batch is not a captured size are
    the ones it touches; each is plan's."""
    result, model = RESULTS["qwen3-32b-sglang-ladder"]
    captured = set(decode_graph_batch_sizes(512))
    padded = [i for i in range(result.evaluated)
              if math.ceil(result.row(i)["concurrency"] / result.row(i)["dp"]) not in captured and result.row(i)["fits"]]
    assert len(padded) > 100
    for i in random.Random(3).sample(padded, 20):
        _check_inference_row(result, model, i, "sglang")


def test_sglang_rows_of_an_fp8_mla_model_on_amd_gpus_match_plan() -> None:
    """SGLang on ROCm dequantises DeepSeek's absorbed latent weights from FP8 every step (two kernels more before each
    absorbed product and their bytes: ``speed.launches.absorbed_dequant_bytes``); the sweep's fixed cost carries
    them where plan's does, and only there (an NVIDIA GPU or 16-bit weights: none)."""
    result, model = RESULTS["deepseek-v3-mla-sglang"]
    rows = [i for i in range(result.evaluated)
            if result.row(i)["weights"].startswith("fp8") and result.row(i)["ep"] == 1 and result.row(i)["fits"]]
    amd = [i for i in rows if result.shapes[int(result.columns["shape"][i])].gpu.vendor == "AMD"]
    assert amd and len(rows) > len(amd)
    for i in random.Random(5).sample(amd, min(10, len(amd))) + random.Random(5).sample(rows, 5):
        _check_inference_row(result, model, i, "sglang")


def test_sglang_rows_whose_reserve_is_below_the_prefill_peak_are_refused_by_plan_and_do_not_fit() -> None:
    """At --gpu-memory-utilization 0.99 SGLang leaves about 0.8 GiB of an H100 outside mem_fraction_static, below Llama
    3.1 8B's 0.91 GiB prefill peak on TP 1 (above it from TP 2): plan refuses those layouts
    (engine_startup.sglang_reserve_refusal), so the sweep must not offer them; the others agree with plan as before."""
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.recommend.eligibility import miss_reason

    model = load_model("llama-3.1-8b")
    workload = Workload(task="inference", engine="sglang", context_tokens=8192, concurrency=4,
                        gpu_memory_utilization=0.99)
    result = sweep(model, SMALL_SHAPES, SweepSpec(workload=workload, weights=("bf16", "fp8")))
    refused = planned = 0
    for i in range(result.evaluated):
        row = result.row(i)
        shape = next(s for s in result.shapes if s.id == row["shape"])
        try:
            p = plan(model, workload, precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                     layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"],
                                   ep=row["ep"] if row["ep"] > 1 else None),
                     gpu=shape.gpu, suggest=False, choose_layout=False)
        except InvalidWorkload as exc:
            assert "prefill peak" in str(exc) and row["fits"] is False, (row, str(exc))
            if row["ep"] == 1:  # an attention-DP layout plan refuses is never the closest miss (sweep_attention_dp)
                assert row["activations_bytes"] > row["engine_reserve_bytes"]
                assert "SGLang's KV pool would leave" in miss_reason(row, None, False)
            refused += 1
            continue
        assert (row["per_gpu_total_bytes"], row["budget_bytes"], row["fits"]) == (p.per_gpu.total_bytes,
                                                                                  p.budget_bytes, p.fits)
        assert row["engine_reserve_bytes"] == p.breakdown["sglang_reserve_bytes"]
        planned += 1
    assert refused and planned, (refused, planned)


@pytest.mark.parametrize("case", [c for c, (_, kw) in INFERENCE_CASES.items() if kw.get("engine") == "sglang"])
def test_sglang_rows_that_fit_run_every_request_under_sglangs_admission(case: str) -> None:
    """The sweep times every requested sequence running (no saturation), which plan does where SGLang's admission
    (``sglang.admission_tokens``: the average cached length plus new_token_ratio's charge, room for the next
    request) starts them all. A row fits only if its KV pool holds every sequence at the full context, and the
    admission never charges a request more than its prompt + output, so it does: checked on the fitting rows whose
    pool is fullest, where it binds first (with room to spare here: these requests are well inside the context)."""
    result, model = RESULTS[case]
    rows = [result.row(i) for i in range(result.evaluated)]
    fitting = sorted((r for r in rows if r["fits"] and r["ep"] == 1),
                     key=lambda r: (r["budget_bytes"] - r["per_gpu_total_bytes"]) / r["budget_bytes"])
    assert fitting
    for row in fitting[:8]:
        p, shape = plan_of_row(model, Workload(task="inference", context_tokens=result.context_tokens, engine="sglang"),
                               result, row)
        perf = plan_performance(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens)
        assert perf["kv_reservation"] == "ratio"
        assert perf["saturation_concurrency"] >= row["concurrency"]


# Encoder-decoders and a model that reads its images through cross-attention: plan times their requests with the
# encoder's (or vision tower's) prefill work as prompt tokens that keep no decoder K/V, and every decode step reads the
# decoder's own K/V and the cross-attention K/V over the encoder's output or the images
# (speed.serving_setup.serving_setup). The sweep timed them as text models: Whisper at a 224-token prompt and 224 output
# tokens with no cross-attention reads, where plan times 4 decoder prompt + 1,055 encoder-equivalent tokens, 256
# output tokens and 240 MB of cross-attention K/V read a step (one H100, TP 1).
CROSS_CASES = {  # the model, the workload, the --prompt and the --output-tokens given (None: not given)
    "whisper-ladder": ("whisper-large-v3", Workload(task="inference"), None, None),
    "flan-t5-xl-16": ("flan-t5-xl", Workload(task="inference", concurrency=16), None, None),
    "flan-t5-xl-by-request": ("flan-t5-xl", Workload(task="inference", concurrency=8), 300, 100),
    # a prompt given with a context: the prompt fills T5's encoder (its cross-attention K/V and prefill work), as in plan
    "flan-t5-xl-context-prompt": ("flan-t5-xl", Workload(task="inference", context_tokens=400, concurrency=8), 300, 100),
    "llama-3.2-vision-ladder": ("llama-3.2-11b-vision", Workload(task="inference", context_tokens=4096), None, None),
}
CROSS_SHAPES = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=2)
                     if s.id in ("h100-sxm-8x-bm", "l40s-1x-vm", "mi300x-8x-bm", "h100-nvl-8x-bm", "a100-80gb-sxm-8x-bm"))


def _cross_sweep(case: str) -> tuple[SweepResult, object, Workload]:
    name, asked, prompt, output = CROSS_CASES[case]
    model = load_model(name)
    result = sweep(model, CROSS_SHAPES, SweepSpec(workload=asked, prompt_tokens=prompt, output_tokens=output,
                                                  weights=("bf16", "fp8")))
    # the workload plan is given for the same request: the prompt and output where given
    planned = replace(asked, prompt_tokens=prompt, output_tokens=output)
    return result, model, planned


@pytest.mark.parametrize("case", list(CROSS_CASES))
def test_cross_attention_rows_are_timed_as_plan_times_them(case: str) -> None:
    result, model, planned = _cross_sweep(case)

    def same_request(perf: dict) -> None:  # type: ignore[type-arg]
        # plan's own request: the sweep's is the same, its speed prompt with the encoder's work in it
        equivalent = result.encoder_prefill_equivalent_tokens
        assert equivalent == perf["encoder_prefill_equivalent_tokens"] > 0
        assert result.encoder_input_tokens == perf["encoder_input_tokens"]
        assert (result.prompt_tokens - equivalent, result.output_tokens) == (perf["prompt_tokens"],
                                                                             perf["output_tokens"])

    _rows_are_plans(model, result, planned, same_request=same_request, rel=1e-9)


# Vision models that keep their image tokens in the decoder's context (Qwen2.5-VL, Gemma 3, LLaVA): plan times a prompt
# of the text, the image tokens and the vision tower's work as tokens of the same cost, and a decode step that reads
# that whole prompt's K/V (media.speed_request; speed.serving_setup.serving_setup). The sweep timed them as text models:
# qwen2.5-vl-7b for 16 users on one L40S at a 1,024-token prompt, 586.8 tok/s and 69 ms to the first token, where plan
# times 1,024 text + 1,369 image + 524 vision-tower tokens at 445.0 tok/s and 259 ms (`anchorgpu plan qwen2.5-vl-7b
# --gpu l40s --concurrency 16`). Each case: the model, the workload, the --prompt and the --output-tokens given (None:
# not given).
IN_CONTEXT_CASES = {
    "qwen2.5-vl-7b-16": ("qwen2.5-vl-7b", Workload(task="inference", concurrency=16), None, None),
    "gemma-3-4b-by-request": ("gemma-3-4b", Workload(task="inference", concurrency=16), 300, 100),
    "llava-1.5-7b-context": ("llava-1.5-7b", Workload(task="inference", context_tokens=1024, concurrency=16), None,
                             None),
    # a short context: plan times half of its text as the output, the rest as the text prompt (200 + 200)
    "qwen2.5-vl-7b-short-context": ("qwen2.5-vl-7b", Workload(task="inference", context_tokens=400, concurrency=16),
                                    None, None),
    "qwen2.5-vl-7b-context-prompt": ("qwen2.5-vl-7b", Workload(task="inference", context_tokens=400, concurrency=16),
                                     300, None),
    # two smaller images a request (the planner's workload takes them): 2 x 391 image tokens
    "qwen2.5-vl-7b-two-images": ("qwen2.5-vl-7b", Workload(task="inference", concurrency=16, images_per_request=2,
                                                           image_resolution=(640, 480)), None, None),
    # sliding-window layers: a decode step reads at most each window of the prompt's K/V
    "gemma-3-27b-context-ladder": ("gemma-3-27b", Workload(task="inference", context_tokens=8192), None, None),
}


# the sweep sums a step's terms in another order than plan: gemma-3-27b's text request (--images-per-request 0) differs
# from plan's by up to 4.9e-9 of its rate (16 H100s, TP 4 PP 4, 512 users), its image request by 5.5e-9; the defect was
# tens of percent
REL = 1e-8


def _rows_are_plans(model: ModelSpec, result: SweepResult, planned: Workload, *,
                    same_request: Callable[[dict], None], rel: float = REL,  # type: ignore[type-arg]
                    same_context: bool = False) -> None:
    """20 sampled fitting rows of ``result``: memory, request (``same_request`` given plan's performance section) and
    speed as ``plan`` gives them for the row's layout (``planned`` at the row's concurrency), within ``rel``, and the
    step on the shape's own servers as recommend's ceilings time it."""
    gpus = {s.id: s.gpu for s in result.shapes}
    rows = [i for i in range(result.evaluated) if result.row(i)["fits"]
            and not _engine_refuses(result.row(i), gpus[result.row(i)["shape"]], planned.engine)]
    assert len(rows) > 20
    checked_whole = 0
    for i in random.Random(20261206).sample(rows, 20):
        row = result.row(i)
        p, shape = plan_of_row(model, planned, result, row)
        assert p.fits and (row["per_gpu_total_bytes"], row["kv_cache_bytes"]) == (p.per_gpu.total_bytes,
                                                                                 p.per_gpu.kv_cache_bytes)
        if same_context:
            assert result.context_tokens == p.workload.context_tokens
        perf = plan_performance(p)
        same_request(perf)
        if shape.gpus_per_server == 8 and row["concurrency"] <= perf["saturation_concurrency"]:
            assert row["decode_tokens_per_s_per_user"] == pytest.approx(perf["decode_tokens_per_s_per_user"],
                                                                        rel=rel)
            assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=rel)
            assert row["prefill_s"] == pytest.approx(perf["ttft_s"], rel=rel)
            checked_whole += 1
        # the same step on the shape's own servers with every sequence running (as recommend's ceilings time it)
        setup = replace(serving_setup(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens),
                        gpus_per_server=shape.gpus_per_server)
        est = serving_estimate(model, shape.gpu, setup, prompt_tokens=result.prompt_tokens,
                               output_tokens=result.output_tokens, concurrency=row["concurrency"],
                               saturation_concurrency=row["concurrency"])
        assert row["decode_tokens_per_s_per_user"] == pytest.approx(1 / est.tpot_s, rel=rel)
        assert row["prefill_s"] == pytest.approx(est.ttft_s, rel=rel)
    assert checked_whole


def _plans_own_request(result: SweepResult) -> Callable[[dict], None]:  # type: ignore[type-arg]
    """The check of a text or in-context-image row's request: plan's own (with images: the speed prompt is text +
    image tokens, the prompt plan reports, + the tower's work, which it reports beside it), and no encoder input."""
    def check(perf: dict) -> None:  # type: ignore[type-arg]
        tower = result.encoder_prefill_equivalent_tokens
        assert (result.prompt_tokens - tower, result.output_tokens) == (perf["prompt_tokens"], perf["output_tokens"])
        assert tower == perf.get("encoder_prefill_equivalent_tokens", 0)
        assert result.encoder_input_tokens == 0
    return check


@pytest.mark.parametrize("case", list(IN_CONTEXT_CASES))
def test_image_in_context_rows_are_timed_as_plan_times_them(case: str) -> None:
    name, asked, prompt, output = IN_CONTEXT_CASES[case]
    model = load_model(name)
    result = sweep(model, CROSS_SHAPES, SweepSpec(workload=asked, prompt_tokens=prompt, output_tokens=output,
                                                  weights=("bf16", "fp8")))
    _rows_are_plans(model, result, replace(asked, prompt_tokens=prompt, output_tokens=output),
                    same_request=_plans_own_request(result), same_context=False)


# Text requests that are not the default one: plan times the prompt and output given, else 256 output tokens (at most
# half a short context, or what a given prompt leaves) and a prompt of at most 1,024 in the rest
# (media.text_request), and sizes a sequence given by its output alone at 1,024 + that output. The sweep had its own
# rule: llama-3.1-8b for 16 users on one L40S at --context 400 reported 200 + 200 tokens but timed the decode at 256
# output tokens (669.7 tok/s where `anchorgpu plan llama-3.1-8b --gpu l40s --context 400 --concurrency 16` gives
# 668.7); with --output-tokens 300 it timed 200 + 200 where plan times 100 + 300 (669.6 against 683.2); --output-tokens
# 100 alone sized each sequence at 1,024 + 256 tokens where plan sizes it at 1,024 + 100 (2.50 GiB of KV cache against
# 2.22); and --prompt 300 within --context 400 was refused ("prompt 300 + output 200 tokens exceed the 400-token
# context") where plan times 300 + 100. Each case: the workload, the --prompt and the --output-tokens given (None: not
# given).
TEXT_CASES = {
    "short-context": (Workload(task="inference", context_tokens=400, concurrency=16), None, None),
    "short-context-long-output": (Workload(task="inference", context_tokens=400, concurrency=16), None, 300),
    "output-alone": (Workload(task="inference", concurrency=16), None, 100),
    "output-alone-ladder": (Workload(task="inference"), None, 100),
    "short-context-prompt": (Workload(task="inference", context_tokens=400), 300, None),
}


@pytest.mark.parametrize("case", list(TEXT_CASES))
def test_text_request_rows_are_timed_and_sized_as_plan_does(case: str) -> None:
    asked, prompt, output = TEXT_CASES[case]
    model = load_model("llama-3.1-8b")
    given = {} if output is None else {"output_tokens": output}  # not given: left out, as the faces leave it
    result = sweep(model, CROSS_SHAPES, SweepSpec(workload=asked, prompt_tokens=prompt, weights=("bf16", "fp8"),
                                                  **given))
    _rows_are_plans(model, result, replace(asked, prompt_tokens=prompt, output_tokens=output),
                    same_request=_plans_own_request(result), same_context=True)


def test_prompt_bound_rows_queue_their_prompts_as_plan_does() -> None:
    """stop56_qa16.md L2: 4,000-token prompts for 10 outputs over the concurrency ladder; the rows whose steady state
    passes the engine's token budget (B x (1 + I/O) > max_num_batched_tokens: speed.batching.
    prompt_bound_output_tokens) time a user's steps at T - B prompt tokens and its wait before the first token as
    plan does, and so do the rows below it (both sides of the boundary in one sweep)."""
    model = load_model("llama-3.1-8b")
    planned = Workload(task="inference", prompt_tokens=4000, output_tokens=10)
    result = sweep(model, CROSS_SHAPES, SweepSpec(workload=Workload(task="inference"), prompt_tokens=4000,
                                                  output_tokens=10, weights=("bf16", "fp8")))
    gpus = {s.id: s.gpu for s in result.shapes}
    bound, below = [], []
    for i in range(result.evaluated):
        row = result.row(i)
        if not row["fits"]:
            continue
        p, shape = plan_of_row(model, planned, result, row)
        setup = replace(serving_setup(p, prompt_tokens=4000, output_tokens=10), gpus_per_server=shape.gpus_per_server)
        b = math.ceil(row["concurrency"] / row["dp"])
        (bound if prompt_bound_output_tokens(b, 4000, 10, setup.max_num_batched_tokens) else below).append(
            (row, setup, gpus[row["shape"]]))
    assert len(bound) > 10 and len(below) > 10
    rng = random.Random(20261207)
    for row, setup, gpu in rng.sample(bound, 10) + rng.sample(below, 5):
        est = serving_estimate(model, gpu, setup, prompt_tokens=4000, output_tokens=10,
                               concurrency=row["concurrency"], saturation_concurrency=row["concurrency"])
        assert row["decode_tokens_per_s_per_user"] == pytest.approx(1 / est.tpot_s, rel=REL)
        assert row["prefill_s"] == pytest.approx(est.ttft_s, rel=REL)
        assert row["decode_tokens_per_s_total"] == pytest.approx(est.output_tokens_per_s, rel=REL)


@pytest.mark.parametrize("args", [("--context", "400"), ("--context", "400", "--output-tokens", "300"),
                                  ("--output-tokens", "100"), ("--context", "400", "--prompt", "300")])
def test_recommend_gives_plans_figures_for_a_text_request(capsys: pytest.CaptureFixture[str], args: tuple) -> None:
    """The faces: the figures quoted above, ``recommend`` against ``plan`` on one L40S for 16 users."""
    from cli_runner import run_json

    common = ("llama-3.1-8b", "--gpu", "l40s", "--concurrency", "16", *args)
    planned = run_json(capsys, "plan", *common)
    body = run_json(capsys, "recommend", *common, "--max-servers", "1", "--top", "1")
    row, perf = body["results"][0], planned["performance"]
    assert (row["offering"], row["layout"]["tp"], row["weights"], row["kv_cache"]) == (
        "l40s-1x-vm", 1, planned["precision"]["weights"], planned["precision"]["kv_cache"])
    assert body["workload"]["context_tokens"] == planned["workload"]["context_tokens"]
    assert (body["workload"]["prompt_tokens"], body["workload"]["output_tokens"]) == (perf["prompt_tokens"],
                                                                                      perf["output_tokens"])
    assert row["per_gpu"]["kv_cache_bytes"] == planned["per_gpu"]["kv_cache_bytes"]
    assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], abs=0.05)  # JSON: 0.1 tok/s


def test_tensorrt_llm_long_prompt_rows_time_the_prompt_attention_as_plan_does() -> None:
    """A 20,000-token prompt on TensorRT-LLM (P8-H200-20000/2000's request, measured_runs.json): the prompt's attention
    runs apart, on an FP8 cache at the context kernel's measured rate and extra pairs a query
    (speed.attention_rate.trtllm_context_attention; AIConfigurator 0.12.0's context_attention_perf tables), on a 16-bit
    cache at attention_efficiency: the sweep's rows are plan's, for both caches on Hopper and an A100 without a table."""
    model = load_model("llama-3.1-8b")
    asked = Workload(task="inference", context_tokens=22000, engine="trtllm")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1)
                   if s.id in ("h200-8x-bm", "h100-sxm-8x-bm", "a100-80gb-sxm-8x-bm"))
    assert len(shapes) == 3
    result = sweep(model, shapes, SweepSpec(workload=asked, prompt_tokens=20000, output_tokens=2000,
                                            weights=("fp8", "bf16"), kv_caches=("fp8", "bf16")))
    assert (result.prompt_tokens, result.output_tokens) == (20000, 2000)
    _rows_are_plans(model, result, replace(asked, prompt_tokens=20000, output_tokens=2000),
                    same_request=_plans_own_request(result), same_context=True)


def test_blackwell_rows_take_the_measured_gemm_share_as_plan_does_and_block_fp8_keeps_the_fit() -> None:
    """On Blackwell a BF16 or per-tensor FP8 product runs at the GPU's measured GEMM share over Hopper's and FP8 in
    blocks keeps the fitted rate (Calibration.serve_gemm_ratio, stated.serve_gemm_peak_share): the sweep's rows of
    each format on B200, GB200 and B300 shapes are plan()'s."""
    model = load_model("qwen3-32b")
    shapes = tuple(s for s in SHAPES if s.gpu.name in ("b200", "gb200", "b300"))
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=64),
                     weights=("bf16", "fp8", "fp8-block128x128"))
    result = sweep(model, shapes, spec)
    by_weights: dict[str, list[int]] = {}
    for i in range(result.evaluated):
        by_weights.setdefault(result.row(i)["weights"], []).append(i)
    assert set(by_weights) == {"bf16", "fp8", "fp8-block128x128"}
    rng = random.Random(20261206)
    for rows in by_weights.values():
        for i in rng.sample(rows, min(6, len(rows))):
            _check_inference_row(result, model, i)


def test_vllm_rows_on_flashattention_2_reread_the_decodes_caches_as_plan_does() -> None:
    """vLLM on an A100 or an L40S runs FlashAttention 2, whose steps that carry a prompt chunk read the decodes' caches
    once per query head where they outgrow the L2 (speed.mixed_attention; an FP8 cache goes to another backend): the
    sweep's rows of both caches are plan's. Qwen3-14B at 6,000 in / 500 out: past 13 sequences a step on the A100 pays
    it (12.5 GiB over 6,250 tokens of 160 KiB), so the ladder's larger rungs do."""
    model = load_model("qwen3-14b")
    asked = Workload(task="inference", context_tokens=8192)
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1)
                   if s.id in ("a100-80gb-sxm-8x-bm", "l40s-8x-bm"))
    assert len(shapes) == 2
    result = sweep(model, shapes, SweepSpec(workload=asked, prompt_tokens=6000, output_tokens=500,
                                            weights=("bf16",), kv_caches=("bf16", "fp8")))
    _rows_are_plans(model, result, replace(asked, prompt_tokens=6000, output_tokens=500),
                    same_request=_plans_own_request(result), same_context=True)
