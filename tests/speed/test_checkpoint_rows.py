"""A measured row that names the ModelOpt ``hf_quant_config.json`` of the checkpoint it ran is planned with that
checkpoint's layout, read through the same path as a user's checkpoint folder: TensorRT-LLM's DeepSeek-R1 guide
(``docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md``, commit 01c4ece) ran
nvidia/DeepSeek-R1-0528-FP4 (FP8 KV) and nvidia/DeepSeek-R1-FP4 (16-bit KV), whose attention stays BF16
(``architectures/data/quant_configs/SOURCES.md``), not NVFP4 everywhere but the head."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.speed.product_shares import quantized_product_shares
from anchorgpu.planner.speed.runs import _model, load_runs, predict, serve_plan_of

ROWS = ("TRT-DSR1-ADP-B200-FP8KV", "TRT-DSR1-ADP-B200-BF16KV")


def _run(run_id: str):  # noqa: ANN202
    return next(run for run in load_runs() if run.id == run_id)


@pytest.mark.parametrize("run_id", ROWS)
def test_the_b200_rows_plan_the_checkpoints_bf16_attention(run_id: str) -> None:
    run = _run(run_id)
    assert run.row["model"] == {"registry": "deepseek-r1",
                                "hf_quant_config": "nvidia-deepseek-r1-0528-fp4.hf_quant_config.json"}
    model = _model(run.row)
    q = model.quantization
    assert q is not None and q.method == "modelopt" and all(q.fraction(g) == 0.0 for g in ("q_a", "q_b", "kv_a", "kv_b", "o"))
    fmt = format_for_model(model, run.row["weights"])
    assert fmt.shipped is q  # "nvfp4" names the checkpoint's own algorithm: its layout, not NVFP4 everywhere
    share, experts = quantized_product_shares(model, fmt)
    registry = load_model("deepseek-r1")
    everywhere, _ = quantized_product_shares(registry, format_for_model(registry, "nvfp4"))
    assert experts == 1.0 and share < everywhere - 0.3  # the attention's 11.4B of 37B active products at BF16's rate


@pytest.mark.parametrize("run_id", ROWS)
def test_the_bf16_attention_is_in_the_weights_and_slows_the_prediction(run_id: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from anchorgpu.planner.speed import runs as runs_module

    run = _run(run_id)
    plan = serve_plan_of(run.row)
    # 11.41B attention parameters at 2 bytes on every attention-DP rank: 74.8 GB a GPU (tech blog 3: "about 80 GB"
    # of weights and activations), and the rank's batch (896 / 384) still fits its KV cache
    assert 74.5e9 < plan.per_gpu.weights_bytes < 75.1e9
    assert plan.fits and plan.max_concurrency >= run.row["concurrency"]
    # the same row over the registry model with --weights nvfp4 (every product at the FP4 rate but the head's), as
    # the row was planned before it named its checkpoint
    stand_in = run_id + "-NVFP4-EVERYWHERE"
    before = runs_module.Run(id=stand_in, role="holdout", phase="serve", metric=run.metric, value=run.value,
                             source=run.source, note="", row={**run.row, "id": stand_in, "model": {"registry": "deepseek-r1"}})
    model_of, plan_of = runs_module._model_of, runs_module._serve_plan
    monkeypatch.setattr(runs_module, "_model_of",
                        lambda run_id: load_model("deepseek-r1") if run_id == before.id else model_of(run_id))
    monkeypatch.setattr(runs_module, "_serve_plan",
                        lambda run_id: serve_plan_of(before.row) if run_id == before.id else plan_of(run_id))
    assert predict(run) < 0.95 * predict(before)
