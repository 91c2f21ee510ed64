"""TensorRT-LLM's attention-DP balance (``attention_dp_config.enable_balance``): a rank holds its new prompts until
every rank of the group has one, so the ranks prefill in the same steps instead of each on its own
(``speed.batching._group_chunks``; benchmarks/trtllm_gptoss_findings.md, branch oss8k).

Sources: TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/py_executor.py`` ``_balance_adp_requests`` (context requests
scheduled only when ``all_ranks_have_ctx_requests``, else held up to ``timeout_iters``), ``llmapi/llm_args.py``
``AttentionDpConfig`` (``enable_balance`` default False); InferenceMAX ``benchmarks/gptoss_fp4_b200_trt_slurm.sh`` @
cc9bed4 (``attention_dp_config: enable_balance: true`` whenever ``DP_ATTENTION`` is true); the measured TPOTs are
InferenceMAX run 20764588467's ``mean_tpot`` (IMT-OSS-B200-8k-1k-DEP2-C64 9.26 ms, -C128 13.44 ms).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.planner.speed.batching import _group_chunks, serving_estimate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict


def _row(row_id: str):  # type: ignore[no-untyped-def]
    run = next(r for r in load_runs() if r.id == row_id)
    p = _serve_plan(row_id)
    setup = serving_setup(p, prompt_tokens=run.row["prompt_tokens"], output_tokens=run.row["output_tokens"],
                          engine=engine_of(run))
    return run, p, setup


def test_balanced_ranks_prefill_together() -> None:
    share, chunks = _group_chunks(0.05, 2.0, False)
    assert share == pytest.approx(1 - 0.95**2) and chunks == pytest.approx(0.1 / share)
    assert _group_chunks(0.05, 2.0, True) == (0.05, 2.0)  # the rank's own share of steps, every rank's chunk in it
    assert _group_chunks(0.05, 4.0, True) == (0.05, 4.0)


def test_the_inferencemax_attention_dp_rows_state_the_balance_and_only_they() -> None:
    runs = [r for r in load_runs() if r.row.get("set") == "inferencemax-trt-moe"]
    balanced = {r.id for r in runs if r.row.get("attention_dp_balance")}
    assert balanced == {r.id for r in runs if "DEP" in r.id} and len(balanced) == 7
    assert _row("IMT-OSS-B200-8k-1k-DEP2-C64")[2].adp_balance
    assert not _row("IMT-OSS-B200-8k-1k-TP2-C64")[2].adp_balance
    # the perf-overview DeepSeek-R1 attention-DP rows ran TensorRT-LLM's default (no balance)
    assert not _row("TRT-DSR1-ADP-B200-FP8KV")[2].adp_balance


def test_balance_lowers_the_8k_prompt_attention_dp_tpot_and_leaves_tp_alone() -> None:
    cal = calibration()
    for row_id, before in (("IMT-OSS-B200-8k-1k-DEP2-C64", 0.01134), ("IMT-OSS-B200-8k-1k-DEP2-C128", 0.01659)):
        run, p, setup = _row(row_id)
        kw = {"prompt_tokens": run.row["prompt_tokens"], "output_tokens": run.row["output_tokens"],
              "concurrency": run.row["concurrency"], "saturation_concurrency": 10_000, "cal": cal}
        on = serving_estimate(p.model, p.gpu, setup, **kw).tpot_s
        off = serving_estimate(p.model, p.gpu, replace(setup, adp_balance=False), **kw).tpot_s
        # each rank's prompt chunk in its own steps (at stop 52's constants, with the head-size ratio applied and
        # TensorRT-LLM's prompt attention kernel apart, stop 54 longctx: 0.01196 / 0.01689 s with it hidden; 0.01202 /
        # 0.01709 s at the flat attention_efficiency, these at its context kernel's measured rate on B200's FP8 cache,
        # 0.56 of the BF16 peak at 8,192 tokens, stop 54 ctxrate: 0.01191 / 0.01688 s; these after stop 62's merges
        # and refit, roofline_exponent 1.279 -> 1.244 and serve_matmul_efficiency at its 0.95 bound: 0.01173 / 0.01685 s;
        # these after stop 63's refit, kernel_floor_ratio and the trtllm-bench KV sizing)
        assert off == pytest.approx(before, rel=0.01)
        assert on < 0.93 * off  # the ranks' 8k prompts share steps: about half as many prompt steps
        # measured 9.26 / 13.44 ms: +9.0% / +5.2% (+22.5% / +23.4% without the balance; after stop 63's refit)
        assert abs(predict(run, cal) / run.value - 1) < 0.20
    run, p, setup = _row("IMT-OSS-B200-8k-1k-TP2-C64")  # one replica a group: nothing to align
    kw = {"prompt_tokens": 8192, "output_tokens": 1024, "concurrency": 64, "saturation_concurrency": 10_000,
          "cal": cal}
    assert serving_estimate(p.model, p.gpu, replace(setup, adp_balance=True), **kw).tpot_s == \
        serving_estimate(p.model, p.gpu, setup, **kw).tpot_s
