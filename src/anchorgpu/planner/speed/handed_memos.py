"""The serving estimate's memos on what ``plan()`` handed over (:mod:`anchorgpu.planner.serving_handoff`): the
layout's engine memory held there is one object for every plan of a model, weight format, GPU, split and engine
settings (``serving_engine.engine_memory``'s memo), so what the estimate forms from those alone is found by its
identity in one look instead of by a key of every value it depends on. Keyed on the layout, never on the request:
a plan of a layout seen before finds them whatever its context, concurrency or request sizes. Pure (two bounded
memos)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.planner.speed.step_constants import ServingSetup, _pair, _StepConstants

if TYPE_CHECKING:
    from anchorgpu.architectures.spec import ModelSpec
    from anchorgpu.hardware.spec import GpuSpec
    from anchorgpu.planner.plan import Plan
    from anchorgpu.planner.serving_handoff import ServingTerms
    from anchorgpu.planner.speed.constants import Calibration
    from anchorgpu.planner.speed.serving_plan import ServingContext

__all__ = ["clear_memos", "handed_context", "handed_pair"]

_HANDED_CONTEXTS: dict[int, tuple[object, Calibration, ServingContext]] = {}


def handed_context(plan: Plan, cal: Calibration, terms: ServingTerms) -> ServingContext:
    """:func:`context_of` a plan whose terms ``plan()`` handed over, memoised on the engine memory they hold (one
    object for every plan of a model, weight format, GPU, split and engine: everything :func:`serving_context` reads
    of a plan) by identity and on the calibration's: a plan of a layout seen before, whatever its request, finds it
    in one look."""
    memory = terms.engine_memory
    hit = _HANDED_CONTEXTS.get(id(memory))
    if hit is not None and hit[0] is memory and hit[1] is cal:
        return hit[2]
    from anchorgpu.planner.speed.serving_plan import context_of  # on a miss only (serving_plan imports this module)

    ctx = context_of(plan, cal)
    if len(_HANDED_CONTEXTS) >= 256:
        _HANDED_CONTEXTS.clear()
    _HANDED_CONTEXTS[id(memory)] = (memory, cal, ctx)  # the memory held: its id is not reused while it is here
    return ctx


_HANDED_PAIRS: dict[tuple[int, int, str, bool, bool, str, bool],
                    tuple[object, Calibration, tuple[_StepConstants, _StepConstants]]] = {}


def handed_pair(terms: ServingTerms, model: ModelSpec, gpu: GpuSpec, setup: ServingSetup,
                cal: Calibration) -> tuple[_StepConstants, _StepConstants]:
    """``step_constants._pair`` of a plan whose terms ``plan()`` handed over, with ``setup`` its
    ``serving_setup.serving_setup``: of the setup's fields ``_pair`` keys on, the engine memory fixes the model, GPU,
    weight format (its precision, FP8 blocks, quantized shares and gathered bytes, by the workload's engine), TP, PP
    and EP (the server size is ``serving_setup.SERVER_GPUS``); the rest are the engine whose kernels run, attention DP,
    an FP8 KV cache, the MoE kernel and the absorbed dequantisation, which the key holds with the memory's and the
    calibration's identities."""
    memory = terms.engine_memory
    key = (id(memory), id(cal), setup.engine, setup.attention_dp, setup.kv_fp8, setup.moe_backend,
           setup.absorbed_dequant)
    hit = _HANDED_PAIRS.get(key)
    if hit is not None and hit[0] is memory and hit[1] is cal:
        return hit[2]
    pair = _pair(model, gpu, setup, cal)
    if len(_HANDED_PAIRS) >= 256:
        _HANDED_PAIRS.clear()
    _HANDED_PAIRS[key] = (memory, cal, pair)  # the memory and calibration held: their ids are not reused meanwhile
    return pair


def clear_memos() -> None:
    """Forget both memos (a test that swaps a function their values came from: ``step_constants._STEP_MEMO`` is
    one of two places a step's constants are kept)."""
    _HANDED_CONTEXTS.clear()
    _HANDED_PAIRS.clear()
