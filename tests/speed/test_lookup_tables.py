"""A serving step streams the weights it multiplies, not the input-embedding table it only gathers rows from: vLLM's
``VocabParallelEmbedding.forward`` is ``F.embedding(masked_input.long(), self.weight)`` on its ``V / tp`` rows
(vllm/model_executor/layers/vocab_parallel_embedding.py), while the LM head's product reads its whole matrix (a tied
table's too). The memory a GPU holds keeps the table (benchmarks/hardening/stop62_embedread.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.speed import serving as sv
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.dense_step import _dense_step
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.lookup_tables import lookup_table_bytes_per_gpu

LLAMA_8B = load_model("llama-3.1-8b")  # untied: 128,256 x 4,096 (config.json vocab_size, hidden_size)
TABLE_BYTES = 128_256 * 4_096 * 2  # 16-bit: 1,050,673,152


def _serving_plan(model_name: str, tp: int, pp: int = 1):  # type: ignore[no-untyped-def]
    return plan(load_model(model_name), Workload(task="inference", concurrency=8),
                precision=PrecisionPlan(weights="bf16"), layout=Layout(gpus=tp * pp, tp=tp, pp=pp),
                gpu=get_gpu("h100-sxm"), suggest=False)


@pytest.mark.parametrize(("tp", "pp", "unread"), [(1, 1, TABLE_BYTES), (2, 1, TABLE_BYTES / 2), (4, 1, TABLE_BYTES / 4),
                                                  (1, 2, 0.0)])
def test_an_untied_table_goes_unread_on_one_stage_and_is_split_with_tp(tp: int, pp: int, unread: float) -> None:
    """One stage holds the table and reads none of it; with stages the last, which holds the head (as large), reads
    all it holds, and the slower stage sets the pace: nothing goes unread there."""
    p = _serving_plan("llama-3.1-8b", tp, pp)
    setup = serving_setup(p, prompt_tokens=1024, output_tokens=256)
    assert setup.lookup_table_bytes_per_gpu == unread
    assert setup.weights_bytes_per_gpu == p.per_gpu.weights_bytes  # the memory held keeps the table


def test_a_tied_table_is_read_by_the_lm_head() -> None:
    """Llama 3.2 1B ties its embeddings (config.json ``tie_word_embeddings: true``): the head's product reads the
    table whole every step, so nothing of it is taken off."""
    m = load_model("llama-3.2-1b")
    assert m.tie_word_embeddings
    assert lookup_table_bytes_per_gpu(m, format_for_model(m, "bf16"), tp=1, pp=1) == 0.0
    assert serving_setup(_serving_plan("llama-3.2-1b", 1), 1024, 256).lookup_table_bytes_per_gpu == 0.0


@pytest.mark.parametrize("model_name", ("llama-3.1-8b", "qwen3-30b-a3b"))
@pytest.mark.parametrize("tp", (1, 2))
def test_the_step_reads_the_weights_less_the_table(model_name: str, tp: int) -> None:
    """A tick of a setup holding the table equals, to the last bit, a tick of one holding only what it streams (the
    table taken off the weights, none held apart): the scalar tick and the dense model's lean step alike; and it is
    shorter than a tick that streams the table (a decode step of 8 sequences is memory-bound)."""
    model, gpu, cal = load_model(model_name), get_gpu("h100-sxm"), calibration()
    setup = serving_setup(_serving_plan(model_name, tp), prompt_tokens=1024, output_tokens=256)
    assert setup.lookup_table_bytes_per_gpu > 0
    streamed = replace(setup, weights_bytes_per_gpu=setup.weights_bytes_per_gpu - setup.lookup_table_bytes_per_gpu,
                       lookup_table_bytes_per_gpu=0.0)
    whole = replace(setup, lookup_table_bytes_per_gpu=0.0)
    c, ci = sv._constants(model, gpu, setup, cal, False), sv._constants(model, gpu, setup, cal, True)
    for batch, prefill in ((8.0, 0.0), (8.0, 512.0)):
        ticks = [sv._tick(s, c, batch, prefill, 1e9, 2e9, 0.0, ci, head_skip=0.5) for s in (setup, streamed, whole)]
        assert ticks[0] == ticks[1]
        assert ticks[0][0] < ticks[2][0]
        if model.moe is None:
            lean = [_dense_step(s, c, batch, prefill, 1e9, 2e9, 0.0, ci, 0.5) for s in (setup, streamed)]
            assert lean[0] == lean[1]
