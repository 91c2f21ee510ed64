"""trtllm-bench with chunked prefill off runs a whole prompt in one step: ``get_settings``
(NVIDIA/TensorRT-LLM@0171265e ``tensorrt_llm/bench/benchmark/utils/general.py``) raises the tuning heuristic's
``max_num_tokens`` to at least the dataset's longest prompt plus the max batch size. The perf-overview page's commands
(docs/source/performance/perf-overview.md @00f3768) leave chunked prefill off and use stdev-0 datasets."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.planner.speed.row_engines import trtllm_bench_limits
from anchorgpu.planner.speed.runs import load_runs, serve_plan_of

ROWS = {run.id: run for run in load_runs()}


def test_trtllm_bench_fits_a_whole_prompt_in_one_step() -> None:
    """P8-H100-20000/2000 (perf-overview, Llama 3.1 8B FP8 on one H100, 20000/2000): the heuristic gives 64
    sequences and 2,048 tokens a step (tuning.py); chunked prefill off raises the tokens to 20,000 + 64."""
    row = ROWS["P8-H100-20000/2000"].row
    assert row["engine_limits"] == "trtllm-bench"
    model = load_model("llama-3.1-8b")
    args = dict(tp=1, pp=1, weights="fp8", kv_cache="fp8", prompt_tokens=20000, output_tokens=2000)
    assert trtllm_bench_limits(model, 80 * 2**30, chunked_prefill=True, **args) == (64, 2048)
    assert trtllm_bench_limits(model, 80 * 2**30, **args) == (64, 20064)
    assert serve_plan_of(row).workload.max_num_batched_tokens == 20064


def test_the_raise_is_per_micro_batch_and_keeps_a_larger_heuristic() -> None:
    """get_settings adds the batch tuning.py returns (a micro-batch's, per pipeline stage) and keeps the heuristic's
    figure where it is already larger (``max(max_num_tokens, max_isl + max_batch_size)``): a 128/128 row is unchanged
    (S14: 4,096 x 2 = 8,192 tokens a step)."""
    model = load_model("llama-3.1-8b")
    short = dict(tp=1, pp=1, weights="fp8", kv_cache="fp8", prompt_tokens=128, output_tokens=128)
    assert (
        trtllm_bench_limits(model, 80 * 2**30, **short)
        == trtllm_bench_limits(model, 80 * 2**30, chunked_prefill=True, **short)
        == (4096, 8192)
    )
    row = ROWS["P70-RTXTP1PP8-20000/2000"].row  # eight stages: the prompt plus one micro-batch's batch
    plan = serve_plan_of(row)
    per_micro = plan.workload.max_num_seqs // row["pp"]
    assert plan.workload.max_num_batched_tokens == 20000 + per_micro


def test_a_users_trtllm_plan_keeps_the_engines_own_token_budget() -> None:
    """Only measured trtllm-bench rows take the benchmark's raise: a user's ``--engine trtllm`` plan of a 20,000-token
    prompt keeps TensorRT-LLM's default max_num_tokens (8,192, ``TRTLLM_MAX_NUM_TOKENS``)."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
    from anchorgpu.planner.speed.serving_capacity import engine_limits_of

    p = plan(
        load_model("llama-3.1-8b"),
        Workload(engine="trtllm", prompt_tokens=20000, output_tokens=2000),
        precision=PrecisionPlan(weights="fp8", kv_cache="fp8"),
        layout=Layout(gpus=1, tp=1, pp=1, dp=1),
        gpu=get_gpu("h100-sxm"),
        suggest=False,
        choose_layout=False,
    )
    assert engine_limits_of(p)[0] == 8192
