"""Stop 60 mem60: memory the plan did not count as launched (benchmarks/hardening/stop60_mem60.md).

Each test names the source line of the term it checks and fails if the term is dropped. Model shapes from the models'
config files: Llama-3.1-8B vocab 128,256 x hidden 4,096, 32 layers; Llama-3.1-70B vocab 128,256 x 8,192, 80 layers."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner.formats import model_param_parts

H100 = get_gpu("h100")


def _zero3(name: str, gpus: int, **workload: object):  # type: ignore[no-untyped-def]
    w = Workload(task="train", train_stack="pytorch", seq_tokens=2048, micro_batch=1, recompute="full", **workload)
    return plan(load_model(name), w, gpu=H100, layout=Layout(gpus=gpus, tp=1, pp=1, dp=gpus, zero=3))


def test_fsdp2_keeps_the_previous_units_reduce_scatter_input_through_the_next_units_backward() -> None:
    """torch ``_fsdp_param_group.py`` ``FSDPParamGroup.post_backward``: ``self.comm_ctx.reduce_scatter_state =
    ReduceScatterState(reduce_scatter_input, reduce_scatter_event)`` after ``foreach_reduce``, dropped only in the next
    unit's ``post_backward`` (``wait_event(...reduce_scatter_state.event)``, then ``= None``, then its own
    ``foreach_reduce``). Llama-3.1-70B: the head's fp32 input (1.05B values x 4 B) is still held while the last
    block computes beside the one prefetched (two blocks of 16-bit parameters gathered, its own 16-bit gradients):
    that moment is the fullest, 1.33 GB over the head's copy-in the plan counted before."""
    params = model_param_parts(load_model("llama-3.1-70b"))
    head, layer, embed = params.head, params.largest_layer, params.embed
    assert head == embed == 128_256 * 8_192 and layer > 0.8 * head
    gathered = 2 * max(embed + layer, 2 * layer)
    block_after_head = 2 * (2 * layer) + 2 * layer + 4 * head
    heads_copy_in = 2 * layer + (2 + 4) * head
    assert block_after_head > heads_copy_in + 1.3e9
    term = mm.fsdp_unit_gradients_bytes(params, tp=1, param_bytes=2, reduce_bytes=4)
    assert term == pytest.approx(block_after_head - gathered, abs=2)
    p = _zero3("llama-3.1-70b", 16)
    assert p.breakdown["fsdp_unit_gradients_bytes"] == term
    line = [a for a in p.assumptions if a.startswith("FSDP2 units")][0]
    assert "reduce_scatter_state" in line
