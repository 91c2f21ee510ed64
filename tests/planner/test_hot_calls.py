"""The functions every plan and speed estimate runs make no call that CPython 3.11 compiles as a dictionary of
keyword arguments built and unpacked (``CALL_FUNCTION_EX``: more than 30 stack slots, a keyword taking two), which
costs several times a plain call (``planner._frozen.builder``'s ``positional``)."""

from __future__ import annotations

import dis
import sys

import pytest

from anchorgpu.planner import inference, serving_handoff, training, training_pipeline
from anchorgpu.planner.memory import kv
from anchorgpu.planner.plan import plan
from anchorgpu.planner.speed import (
    batching,
    dense_step,
    estimate,
    figures,
    handed_memos,
    serving_capacity,
    serving_plan,
    serving_setup,
)
from anchorgpu.planner.speed import training as speed_training

HOT = [plan, inference.plan_inference, estimate.plan_performance, serving_setup.serving_setup,
       serving_plan.serving_performance, serving_plan.saturation_concurrency, batching.serving_estimate,
       batching._steady, batching._dense_steady, batching._ttft, dense_step._dense_step, figures.put_rate, figures.put_time,
       # what a serving plan hands its estimate and the estimate's calls on it (stop 58, perfserve5)
       figures.put_serving_figures, handed_memos.handed_context, handed_memos.handed_pair, serving_handoff.hand_over,
       serving_handoff.handed, serving_handoff.shaped_kv_bytes, kv.kv_cache_bytes_and_shape,
       serving_capacity.full_length_concurrency, serving_plan.serving_saturation, batching._dense_steady_between,
       batching._attention_flops,
       # the training plan and its estimate (run.py (c)'s `one`): a fifteenth keyword to training_step once cost
       # the call ~8k instructions of its ~283k
       training.plan_training, training_pipeline.check_interleaving, estimate._training, speed_training.training_step]


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the compiler's threshold as CPython 3.11 has it")
@pytest.mark.parametrize("fn", HOT, ids=lambda fn: fn.__qualname__)
def test_no_keyword_dictionary_is_built_for_a_call(fn: object) -> None:
    code = getattr(fn, "__wrapped__", fn).__code__  # type: ignore[attr-defined]
    unpacked = [ins.positions.lineno for ins in dis.get_instructions(code) if ins.opname == "CALL_FUNCTION_EX"]
    assert not unpacked, f"{code.co_name}: a call compiled with its keywords in a dictionary at line(s) {unpacked}"
