"""The per-step constants are memoised on every field of the serving setup they read. FP8 weights in blocks cost one
quantising launch more a product (``launch_ratio(block_fp8=...)``), so two setups that differ only there must not
share constants: the memo key lacked ``block_fp8`` (perf7's review), and the plan asked second got the first one's.
Plain FP8 and block FP8 plans differ in other key fields too for the shipped models, so the test builds two setups
that differ in ``block_fp8`` alone."""

from __future__ import annotations

import dataclasses

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed import step_constants
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.serving_setup import serving_setup


def test_setups_differing_only_in_block_fp8_do_not_share_constants() -> None:
    model, gpu, cal = load_model("llama-3.1-70b"), get_gpu("h100"), calibration()
    p = plan(model, Workload(concurrency=32), precision=PrecisionPlan(weights="fp8-block128x128"),
             layout=Layout(gpus=4, tp=4), gpu=gpu, suggest=False)
    block = serving_setup(p, prompt_tokens=1024, output_tokens=256)
    assert block.block_fp8
    plain = dataclasses.replace(block, block_fp8=False)
    step_constants._STEP_MEMO.clear()
    plain_alone = step_constants._pair(model, gpu, plain, cal)
    step_constants._STEP_MEMO.clear()
    block_alone = step_constants._pair(model, gpu, block, cal)
    assert block_alone != plain_alone  # the block format's extra launch is in its constants
    assert step_constants._pair(model, gpu, plain, cal) == plain_alone  # asked after the block setup
