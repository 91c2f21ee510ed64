"""The catalog sweep times a prompt's first chunk as its micro-batch's way through every pipeline stage, without
forming the other micro-batches' ticks: the scalar step's larger of that and one stage's work on every micro-batch
(``speed.serving._step`` with ``first_token``) is always the first. Held here to the bit against the larger-of-two
form, over models of every kind, request sizes and the whole catalog's layouts (most with more than one stage)."""

from __future__ import annotations

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.sweep import BATCH_LADDER
from anchorgpu.planner.sweep_grid import layout_grid
from anchorgpu.planner.sweep_serving import _time_to_first_token
from anchorgpu.planner.sweep_serving_memory import kv_factors, memory_terms
from anchorgpu.planner.sweep_serving_ticks import Ticks
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog


def _larger_of_two(ticks: Ticks, budget_tokens: np.ndarray, batch: np.ndarray, prompt: int) -> np.ndarray:
    """The first chunk's step as the scalar model writes it: the larger of a stage's work on every micro-batch and
    the chunk's way through every stage (one stage: the chunk's tick)."""
    others = batch - 1.0
    room = np.maximum(1.0, budget_tokens - others)
    chunks = np.ceil(prompt / room)  # the budget's chunks and the remainder, timed as that many even ones (qa16)
    groups, heavy, light = ticks.chunk_ticks(others, prompt / chunks)
    staged = (groups - 1.0) * light + heavy
    cycle = np.where(ticks.pp > 1, np.maximum(staged, heavy * ticks.pp), heavy)
    return ticks.hosted(cycle, others) * chunks


@pytest.mark.parametrize("name", ["llama-3.1-70b", "llama-3.1-8b", "qwen3-235b-a22b", "deepseek-v3", "mixtral-8x7b"])
@pytest.mark.parametrize("prompt", [1, 1024, 30000])
def test_first_token_needs_no_tick_without_the_chunk(name: str, prompt: int) -> None:
    model = load_model(name)
    shapes = shapes_from_catalog(load_catalog().offerings)
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=32768), output_tokens=256)
    weights, kvs = ("bf16", "fp8"), ("bf16", "fp8")
    lay = layout_grid(model, shapes, training=False, max_pp=spec.max_pp, zero_stages=(0,))
    assert (lay.pp > 1).any() and (lay.pp == 1).any()
    per_replica = -(-np.array(BATCH_LADDER, dtype=np.int64)[:, None] // lay.dp)
    kv = kv_factors(model, spec, lay, kvs, (32768,), prompt, 256)
    mem = memory_terms(model, shapes, spec, lay, weights, kv, per_replica)
    ticks = Ticks(model, shapes, spec, lay, weights, kv, mem.weights, prompt, 256)
    budget = np.array([engine_limits(spec.workload, large_gpu=large_engine_defaults(sh.gpu))[0]
                       for sh in shapes])[lay.shape]
    batch = per_replica.astype(np.float64)
    got = np.empty((len(weights), len(kvs), len(BATCH_LADDER), len(lay)))
    _time_to_first_token(ticks, budget, batch, prompt, got)
    assert got.tobytes() == _larger_of_two(ticks, budget, batch, prompt).tobytes()
