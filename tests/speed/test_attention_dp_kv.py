"""TensorRT-LLM's MoE rows ran attention data parallelism, so their KV cache keeps no KV head twice.

Under plain TP, TensorRT-LLM's ``KVCacheManager`` gives each rank ``ceil(num_kv_heads / tp_size)`` heads of every
sequence: with fewer KV heads than ranks (Qwen3-235B-A22B and Qwen3-30B-A3B have 4; TP 8) each rank holds one, the
group 8 copies of 4 heads. With ``enable_attention_dp`` it takes ``tp_size = 1`` (NVIDIA/TensorRT-LLM
``tensorrt_llm/_torch/pyexecutor/resource_manager.py``, commit 001541b; the cache estimate ``get_cache_size_per_token``
in the same file does the same, with no floor of one head), and attention runs with ``tp_size = 1`` on each rank's own
requests (``tensorrt_llm/_torch/modules/attention.py``, commit c6d3bb2): each rank holds and reads its own sequences'
caches whole. The perf-overview page (``docs/source/performance/perf-overview.md``, commit 00f3768) served its MoE
models so; the rows (``attention_dp_weights``) are still timed as TP, with a GPU's cache its average share.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.planner import memory as mm
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.runs import _reservation, _serve_plan, load_runs, predict, serve_plan_of

ROWS = {run.id: run for run in load_runs()}
QWEN3_235B = load_model("qwen3-235b-a22b")


def test_fewer_kv_heads_than_ranks_replicate_under_tp_but_not_under_attention_dp() -> None:
    assert (QWEN3_235B.num_kv_heads, QWEN3_235B.head_dim) == (4, 128)
    assert mm.kv_values_per_token_per_gpu(QWEN3_235B, tp=8) == 2 * 1 * 128  # one head a rank: 8 copies of 4
    assert mm.kv_values_per_token_per_gpu(QWEN3_235B, tp=8, attention_dp=True) == 2 * 4 * 128 / 8


@pytest.mark.parametrize("name, tp", [("llama-4-maverick-17b-128e-fp8", 8), ("llama-4-scout-17b-16e", 4),
                                      ("qwen3-235b-a22b", 2), ("qwen3-30b-a3b", 4)])
def test_with_enough_kv_heads_the_two_readings_agree(name: str, tp: int) -> None:
    model = load_model(name)
    assert mm.kv_values_per_token_per_gpu(model, tp=tp, attention_dp=True) == mm.kv_values_per_token_per_gpu(
        model, tp=tp)


def test_a_rows_sequence_takes_half_the_cache_at_tp8_with_four_kv_heads() -> None:
    r = ROWS["PQ235-H200-128/4096"].row
    assert r["attention_dp_weights"] and r["tp"] == 8
    marked = _serve_plan("PQ235-H200-128/4096")
    assert marked.workload.attention_dp_kv
    unmarked = serve_plan_of({k: v for k, v in r.items() if k != "attention_dp_weights"})
    assert not unmarked.workload.attention_dp_kv
    half = unmarked.breakdown["kv_per_sequence_bytes"] / 2
    assert marked.breakdown["kv_per_sequence_bytes"] == pytest.approx(half, abs=1)


def test_the_cache_holds_more_sequences_despite_the_weights_kept_whole() -> None:
    """Without the KV reading the marked row held fewer sequences than the unmarked one (the weights attention DP
    keeps whole take 7.6 GiB a GPU from its cache: 383 against 463 at 128/4096 on 8 H100); with it, each sequence
    takes half as much and the marked row runs more, up to the 640 trtllm-bench's engine allows."""
    r = ROWS["PQ235-H100-128/4096"].row
    unmarked = {k: v for k, v in r.items() if k != "attention_dp_weights"}
    marked_conc = plan_performance(_serve_plan("PQ235-H100-128/4096"), kv_reservation=_reservation(r),
                                   engine="trtllm")["saturation_concurrency"]
    unmarked_conc = plan_performance(serve_plan_of(unmarked), kv_reservation=_reservation(r),
                                     engine="trtllm")["saturation_concurrency"]
    assert marked_conc > unmarked_conc


def test_qwen3_235b_on_eight_h100_at_long_outputs_comes_within_25_percent() -> None:
    """perf-overview.md (00f3768), Qwen3-235B-A22B, H100 TP8 (FP8), 1000/2000: 15,136 output tokens/s. With a KV head
    replicated on every rank the cache held about 530 sequences and the row came out at 9,917 (-34.5%)."""
    run = ROWS["PQ235-H100-1000/2000"]
    assert run.value == 15136
    assert predict(run) == pytest.approx(run.value, rel=0.25)
